// The built-in functions of the .prox language: constructors, linear
// operators, term roles and prox functions (docs/language.md).
#include "frontend/parser_impl.h"

namespace proxc::internal::parsing {

// ---- The built-in functions ----

// The constructors variable, load, shape, gaussian and array. False when `a`
// calls none of them.
bool Parser::constructor(Args& a, Value* out) {
  const std::string& fn = a.fn();
  auto wrap = [&](auto&& f) { return make_expr_value(located(a.loc(), f)); };
  if (fn == "variable") {
    a.done({});
    if (a.pos.empty()) fail(a.loc(), "variable needs a shape: variable(H, W) or variable(shape(b))");
    Shape shape;
    if (a.pos.size() == 1 && a.pos[0].type == Value::Type::List) {
      shape = a.ints(a.pos[0], "the shape");
    } else {
      for (const Value& v : a.pos) shape.push_back(a.integer(v, "each extent"));
    }
    std::string hint = binding_name_.empty() ? "x" : binding_name_;
    *out = wrap([&] { return make_variable(shape, hint); });
    return true;
  }
  if (fn == "load") {
    a.arity(1, 1, "load(\"file.npy\")");
    a.done({});
    if (a.pos[0].type != Value::Type::String)
      fail(a.pos[0].loc, "load: the path must be a string in double quotes");
    std::string written = a.pos[0].str;
    if (written.empty()) fail(a.pos[0].loc, "load: the path is empty");
    std::string hint = binding_name_;
    *out = wrap([&] { return make_constant(load_constant_file(written, base_dir_), hint); });
    return true;
  }
  if (fn == "shape") {
    a.arity(1, 1, "shape(b)");
    a.done({});
    proxc::internal::Expr e = a.expr(a.pos[0], "argument");
    Value v;
    v.type = Value::Type::List;
    for (int64_t ext : e->shape) {
      Value s;
      s.type = Value::Type::Scalar;
      s.scalar = static_cast<double>(ext);
      s.loc = a.loc();
      v.list.push_back(s);
    }
    *out = v;
    return true;
  }
  if (fn == "gaussian") {
    a.arity(2, 2, "gaussian(size, sigma) or gaussian([h, w], sigma)");
    a.done({});
    Shape size = a.ints(a.pos[0], "the size");
    double sigma = a.scalar(a.pos[1], "sigma");
    *out = wrap([&] { return make_gaussian(size, sigma); });
    return true;
  }
  if (fn == "array") {
    a.arity(2, 2, "array([h, w], [v0, v1, ...])");
    a.done({});
    Shape shape = a.ints(a.pos[0], "the shape");
    if (a.pos[1].type != Value::Type::List) fail(a.pos[1].loc, "array: the values must be a list of numbers");
    auto data = std::make_shared<ConstantData>();
    data->source.type = ConstantSource::Type::Inline;
    for (int64_t e : shape) {
      if (e <= 0) fail(a.pos[0].loc, "array: extents must be positive, got " + shape_to_string(shape));
    }
    if (shape.empty() || static_cast<int64_t>(a.pos[1].list.size()) != num_elements(shape)) {
      fail(a.pos[1].loc, "array: shape " + shape_to_string(shape) + " needs " +
                             std::to_string(num_elements(shape)) + " values, got " +
                             std::to_string(a.pos[1].list.size()));
    }
    data->array.shape = shape;
    for (const Value& v : a.pos[1].list) {
      double d = a.scalar(v, "each value");
      if (std::fabs(d) > 3.4028234663852886e38) fail(v.loc, "array: value does not fit in float32");
      data->array.data.push_back(static_cast<float>(d));
    }
    std::string hint = binding_name_;
    *out = wrap([&] { return make_constant(data, hint); });
    return true;
  }
  return false;
}

// The linear operators. False when `a` calls none of them.
bool Parser::linear_operator(Args& a, Value* out) {
  const std::string& fn = a.fn();
  auto wrap = [&](auto&& f) { return make_expr_value(located(a.loc(), f)); };
  if (fn == "grad") {
    a.arity(1, 1, "grad(x) or grad(x, dims=2)");
    const Value* dims = a.take_kw("dims");
    a.done({"dims"});
    proxc::internal::Expr x = a.expr(a.pos[0], "operand");
    int64_t d = dims ? a.integer(*dims, "dims") : -1;
    if (dims && d < 1) fail(dims->loc, "grad: dims must be >= 1, got " + std::to_string(d));
    *out = wrap([&] { return make_grad(x, d); });
    return true;
  }
  if (fn == "conv") {
    a.arity(2, 2, "conv(kernel, x)");
    a.done({});
    proxc::internal::Expr k = a.constant(a.pos[0], "kernel (first argument)");
    proxc::internal::Expr x = a.expr(a.pos[1], "operand");
    *out = wrap([&] { return make_conv(k, x); });
    return true;
  }
  if (fn == "mul_elemwise") {
    a.arity(2, 2, "mul_elemwise(w, x)");
    a.done({});
    proxc::internal::Expr w = a.constant(a.pos[0], "weight (first argument)");
    proxc::internal::Expr x = a.expr(a.pos[1], "operand");
    *out = wrap([&] { return make_mul_elemwise(w, x); });
    return true;
  }
  if (fn == "subsample") {
    a.arity(2, 2, "subsample(x, [s0, s1])");
    a.done({});
    proxc::internal::Expr x = a.expr(a.pos[0], "operand");
    auto steps = a.ints(a.pos[1], "the steps");
    *out = wrap([&] { return make_subsample(x, steps); });
    return true;
  }
  if (fn == "vstack") {
    a.done({});
    std::vector<Value> items =
        a.pos.size() == 1 && a.pos[0].type == Value::Type::List ? a.pos[0].list : a.pos;
    if (items.empty()) fail(a.loc(), "vstack needs at least one expression: vstack([a, b])");
    std::vector<proxc::internal::Expr> parts;
    for (const Value& v : items) parts.push_back(a.expr(v, "operand"));
    *out = wrap([&] { return make_vstack(parts); });
    return true;
  }
  if (fn == "reshape") {
    a.arity(2, 2, "reshape(x, [h, w])");
    a.done({});
    proxc::internal::Expr x = a.expr(a.pos[0], "operand");
    Shape s = a.ints(a.pos[1], "the shape");
    *out = wrap([&] { return make_reshape(x, s); });
    return true;
  }
  if (fn == "transpose") {
    a.arity(1, 2, "transpose(x) or transpose(x, [1, 0])");
    a.done({});
    proxc::internal::Expr x = a.expr(a.pos[0], "operand");
    std::vector<int64_t> axes = a.pos.size() > 1 ? a.ints(a.pos[1], "the axes") : std::vector<int64_t>{};
    *out = wrap([&] { return make_transpose(x, axes); });
    return true;
  }
  if (fn == "crop") {
    a.arity(3, 3, "crop(x, [top, left], [h, w])");
    a.done({});
    proxc::internal::Expr x = a.expr(a.pos[0], "operand");
    auto begin = a.ints(a.pos[1], "the begin offsets");
    auto extent = a.ints(a.pos[2], "the extent");
    *out = wrap([&] { return make_crop(x, begin, extent); });
    return true;
  }
  if (fn == "mul_color") {
    a.arity(2, 2, "mul_color(x, M) or mul_color(x, \"yuv\")");
    a.done({});
    proxc::internal::Expr x = a.expr(a.pos[0], "operand");
    if (a.pos[1].type == Value::Type::String) {
      std::string named = a.pos[1].str;
      *out = wrap([&] { return make_mul_color(x, nullptr, named); });
      return true;
    }
    proxc::internal::Expr m = a.constant(a.pos[1], "colour matrix");
    *out = wrap([&] { return make_mul_color(x, m); });
    return true;
  }
  if (fn == "warp") {
    a.arity(2, 2, "warp(x, H)");
    a.done({});
    proxc::internal::Expr x = a.expr(a.pos[0], "operand");
    proxc::internal::Expr h = a.constant(a.pos[1], "homography");
    *out = wrap([&] { return make_warp(x, h); });
    return true;
  }
  if (fn == "black_box") {
    a.arity(2, 2, "black_box(\"name\", x)");
    a.done({});
    if (a.pos[0].type != Value::Type::String) {
      fail(a.pos[0].loc,
           "black_box: the first argument is the operator's registered name, a string in double quotes");
    }
    std::string name = a.pos[0].str;
    proxc::internal::Expr x = a.expr(a.pos[1], "operand");
    *out = wrap([&] { return make_black_box(name, x); });
    return true;
  }
  return false;
}

// omega(term), psi(term): the roles the split pass sets, as dumps write
// them. False when `a` calls neither.
bool Parser::term_role(Args& a, Value* out) {
  const std::string& fn = a.fn();
  if (fn == "omega" || fn == "psi") {
    a.arity(1, 1, (fn + "(term)").c_str());
    a.done({});
    const Value& v = a.pos[0];
    if (v.type != Value::Type::Terms || v.terms.size() != 1) {
      fail(v.loc, fn + " marks one function term, got " + describe_value(v));
    }
    *out = v;
    out->terms[0].role = fn == "omega" ? TermRole::Omega : TermRole::Psi;
    return true;
  }
  return false;
}

// The prox functions with their keyword parameters. False when `a` calls
// none of them.
bool Parser::prox_function(Args& a, Value* out) {
  const std::string& fn = a.fn();
  FunctionKind kind;
  if (function_kind_from_string(fn, &kind)) {
    FunctionTerm t;
    t.kind = kind;
    std::vector<std::string> allowed = {"alpha", "beta", "b", "c", "gamma", "d"};
    switch (kind) {
      case FunctionKind::GroupNorm1: {
        a.arity(1, 2, "group_norm1(x, [axes])");
        const Value* axes = a.pos.size() > 1 ? &a.pos[1] : a.take_kw("axes");
        allowed.push_back("axes");
        if (!axes) fail(a.loc(), "group_norm1 needs the group axes: group_norm1(grad(x), [2])");
        if (a.pos.size() > 1 && a.take_kw("axes")) fail(a.loc(), "group_norm1: axes given twice");
        t.axes = a.ints(*axes, "the axes");
        break;
      }
      case FunctionKind::PoissonNorm: {
        a.arity(1, 2, "poisson_norm(x, counts)");
        const Value* counts = a.pos.size() > 1 ? &a.pos[1] : a.take_kw("counts");
        allowed.push_back("counts");
        if (!counts) fail(a.loc(), "poisson_norm needs the counts: poisson_norm(x, counts)");
        t.counts = a.constant(*counts, "counts");
        break;
      }
      case FunctionKind::Box:
        a.arity(1, 1, "box(x, lower=0, upper=1)");
        allowed.push_back("lower");
        allowed.push_back("upper");
        break;
      default:
        a.arity(1, 1, (fn + "(x, alpha=..., beta=..., b=..., c=..., gamma=..., d=...)").c_str());
    }
    t.arg = a.expr(a.pos[0], "operand");
    auto param = [&](const char* name, Param* out) {
      const Value* v = a.take_kw(name);
      if (!v) return;
      if (v->type == Value::Type::Scalar) {
        *out = Param::of(v->scalar);
      } else if (v->type == Value::Type::Expr && v->expr->is_constant()) {
        *out = Param::of(v->expr);
      } else {
        fail(v->loc, fn + ": " + name + " must be a number or a constant array, got " + describe_value(*v));
      }
    };
    auto number = [&](const char* name, double* out) {
      if (const Value* v = a.take_kw(name)) *out = a.scalar(*v, name);
    };
    number("alpha", &t.alpha);
    number("beta", &t.beta);
    param("b", &t.b);
    param("c", &t.c);
    number("gamma", &t.gamma);
    number("d", &t.d);
    if (kind == FunctionKind::Box) {
      param("lower", &t.lower);
      param("upper", &t.upper);
    }
    a.done(allowed);
    Value v;
    v.type = Value::Type::Terms;
    v.terms.push_back(located(a.loc(), [&] { return make_term(t); }));
    *out = v;
    return true;
  }
  return false;
}

Value Parser::builtin(Args& a) {
  const std::string& fn = a.fn();
  Value v;
  if (constructor(a, &v) || linear_operator(a, &v) || term_role(a, &v) || prox_function(a, &v)) return v;
  if (env_.count(fn)) fail(a.loc(), "'" + fn + "' is a name, not a function; it cannot be called");
  fail(a.loc(), "unknown function '" + fn + "'");
}

}  // namespace proxc::internal::parsing

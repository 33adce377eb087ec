// The built-in functions of the .prox language: constructors, linear
// operators, term roles and prox functions (docs/language.md).
#include "frontend/parser_impl.h"
#include "ir/operators.h"
#include "proxc/prox_fn.h"

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
    a.arity(1, 1, "load(\"file.npy\") or load(\"file.npy\", hash=\"xxh3-128:...\")");
    // hash=: the content the file must hold (a dump pins its data so; a
    // pinned file may lie outside the problem's folder).
    std::string hash;
    if (const Value* h = a.take_kw("hash")) {
      if (h->type != Value::Type::String) fail(h->loc, "load: the hash must be a string in double quotes");
      hash = h->str;
      if (hash.rfind("xxh3-128:", 0) != 0 || hash.size() != 9 + 32) {
        fail(h->loc, "load: a hash is \"xxh3-128:\" and 32 hexadecimal digits, got " + quote_string(hash));
      }
    }
    a.done({"hash"});
    if (a.pos[0].type != Value::Type::String)
      fail(a.pos[0].loc, "load: the path must be a string in double quotes");
    std::string written = a.pos[0].str;
    if (written.empty()) fail(a.pos[0].loc, "load: the path is empty");
    std::string hint = binding_name_;
    *out = wrap([&] { return make_constant(load_constant_file(written, base_dir_, hash), hint); });
    return true;
  }
  if (fn == "hstack") {
    // hstack([a, b]) or hstack(a, b): ProxImaL's, as vstack, reshape and transpose.
    std::vector<Value> items = a.pos.size() == 1 && a.pos[0].type == Value::Type::List ? a.pos[0].list : a.pos;
    a.done({});
    if (items.empty()) fail(a.loc(), "hstack needs at least one expression: hstack([a, b, ...])");
    std::vector<proxc::internal::Expr> parts;
    for (const Value& v : items) parts.push_back(a.expr(v, "each operand"));
    *out = wrap([&] { return make_hstack(parts); });
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
      if (!fits_float32(d)) fail(v.loc, "array: value does not fit in float32");
      data->array.data.push_back(static_cast<float>(d));
    }
    std::string hint = binding_name_;
    *out = wrap([&] { return make_constant(data, hint); });
    return true;
  }
  return false;
}

// The linear operators, read slot by slot as the operator table says
// (ir/operators.h). False when `a` calls none of them.
bool Parser::linear_operator(Args& a, Value* out) {
  const OperatorInfo* op = find_operator(a.fn());
  if (!op || op->syntax != OperatorSyntax::Call) return false;
  const std::string& fn = a.fn();
  // Positional slots: every slot but a keyword (Dims, Option); OptionalInts may be left out.
  size_t lo = 0, hi = 0;
  bool list = false;
  std::vector<std::string> keywords;
  for (const Slot& slot : op->slots) {
    if (slot.role == SlotRole::Dims || slot.role == SlotRole::Option) {
      keywords.push_back(slot.key);
    } else if (slot.role == SlotRole::Operands) {
      list = true;
    } else {
      lo += slot.role == SlotRole::OptionalInts ? 0 : 1;
      ++hi;
    }
  }
  if (!list) a.arity(lo, hi, op->spelling);
  std::vector<const Value*> kw_values;
  for (const std::string& k : keywords) kw_values.push_back(a.take_kw(k));
  a.done(keywords);
  OperatorArgs args;
  size_t pos = 0, kw = 0;
  for (const Slot& slot : op->slots) {
    switch (slot.role) {
      case SlotRole::Operand: args.operands.push_back(a.expr(a.pos[pos++], slot.what)); break;
      case SlotRole::Constant: args.operands.push_back(a.constant(a.pos[pos++], slot.what)); break;
      case SlotRole::Operands: {
        // vstack([a, b]) or vstack(a, b)
        std::vector<Value> items = a.pos.size() == 1 && a.pos[0].type == Value::Type::List ? a.pos[0].list : a.pos;
        if (items.empty()) fail(a.loc(), fn + " needs at least one expression: " + op->spelling);
        for (const Value& v : items) args.operands.push_back(a.expr(v, slot.what));
        break;
      }
      case SlotRole::Ints:
      case SlotRole::Shape: args.lists.push_back(a.ints(a.pos[pos++], slot.what)); break;
      case SlotRole::OptionalInts:
        args.lists.push_back(pos < a.pos.size() ? a.ints(a.pos[pos++], slot.what) : std::vector<int64_t>{});
        break;
      case SlotRole::Dims: {
        const Value* v = kw_values[kw++];
        int64_t d = v ? a.integer(*v, slot.key) : -1;
        if (v && d < 1) fail(v->loc, fn + ": " + slot.key + " must be >= 1, got " + std::to_string(d));
        args.lists.push_back(v ? std::vector<int64_t>{d} : std::vector<int64_t>{});
        break;
      }
      case SlotRole::Option: {
        const Value* v = kw_values[kw++];
        if (v && v->type != Value::Type::String) fail(v->loc, fn + ": " + slot.key + " is " + slot.what);
        if (v) args.name = v->str;
        break;
      }
      case SlotRole::Factor: args.factor = a.scalar(a.pos[pos++], slot.what); break;
      case SlotRole::Name:
        if (a.pos[pos].type != Value::Type::String) fail(a.pos[pos].loc, fn + ": " + slot.what);
        args.name = a.pos[pos++].str;
        break;
      case SlotRole::ConstantOrName: {
        const Value& v = a.pos[pos++];
        if (v.type == Value::Type::String) args.name = v.str;
        else args.operands.push_back(a.constant(v, slot.what));
        break;
      }
    }
  }
  ExprKind kind = op->kind;
  *out = make_expr_value(located(a.loc(), [&] { return make_operator(kind, args); }));
  return true;
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
    if (kind == FunctionKind::UserProx) {
      fail(a.loc(), "a prox function of your own is called by its registered name, e.g. patch_NLM(x); '" + fn +
                        "' names the kind in JSON only");
    }
    const FunctionInfo& info = function_info(kind);
    FunctionTerm t;
    t.kind = kind;
    std::vector<std::string> allowed = {"alpha", "beta", "b", "c", "gamma", "d"};
    size_t positional = 1;
    for (const TermSlot& slot : info.slots) positional += slot.positional() ? 1 : 0;
    std::string usage = *info.usage ? info.usage : fn + "(x, alpha=..., beta=..., b=..., c=..., gamma=..., d=...)";
    a.arity(1, positional, usage.c_str());
    // The slots written after the operand or by keyword (group axes, counts).
    size_t pos = 1;
    for (const TermSlot& slot : info.slots) {
      allowed.push_back(slot.key);
      if (!slot.positional()) continue;
      bool at_pos = a.pos.size() > pos;
      const Value* v = at_pos ? &a.pos[pos++] : a.take_kw(slot.key);
      if (!v) fail(a.loc(), slot.missing);
      if (at_pos && a.take_kw(slot.key)) fail(a.loc(), fn + ": " + slot.key + " given twice");
      if (slot.role == TermSlotRole::Axes) {
        t.axes = a.ints(*v, slot.what);
      } else if (slot.role == TermSlotRole::Weight) {
        t.weight = v->type == Value::Type::Scalar ? make_scalar_constant(v->scalar) : a.constant(*v, slot.what);
      } else {
        t.counts = a.constant(*v, slot.what);
      }
    }
    t.arg = a.expr(a.pos[0], "operand");
    common_parameters(a, &t);
    for (const TermSlot& slot : info.slots) {
      if (!slot.positional()) term_param(a, slot.key, &bound_param(t, slot));
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

// A keyword parameter that is a number or a constant array (b, c, bounds).
void Parser::term_param(Args& a, const char* name, Param* out) {
  const Value* v = a.take_kw(name);
  if (!v) return;
  if (v->type == Value::Type::Scalar) {
    *out = Param::of(v->scalar);
  } else if (v->type == Value::Type::Expr && v->expr->is_constant()) {
    *out = Param::of(v->expr);
  } else {
    fail(v->loc, a.fn() + ": " + name + " must be a number or a constant array, got " + describe_value(*v));
  }
}

// alpha, beta, b, c, gamma and d, which every function takes.
void Parser::common_parameters(Args& a, FunctionTerm* t) {
  auto number = [&](const char* name, double* out) {
    if (const Value* v = a.take_kw(name)) *out = a.scalar(*v, name);
  };
  number("alpha", &t->alpha);
  number("beta", &t->beta);
  term_param(a, "b", &t->b);
  term_param(a, "c", &t->c);
  number("gamma", &t->gamma);
  number("d", &t->d);
}

// A prox function of the user's (include/proxc/prox_fn.h), called by its
// registered name: its operand, its declared parameters by keyword (each
// defaulting to its declared default) and the common ones. False when no
// function of that name is registered.
bool Parser::user_prox_function(Args& a, Value* out) {
  const std::string& fn = a.fn();
  const proxc_prox_fn* f = proxc_find_prox_fn(fn.c_str());
  if (!f) return false;
  FunctionTerm t;
  t.kind = FunctionKind::UserProx;
  t.user_name = fn;
  std::vector<std::string> allowed = {"alpha", "beta", "b", "c", "gamma", "d"};
  std::string usage = fn + "(x";
  for (int i = 0; i < f->num_params; ++i) usage += std::string(", ") + f->param_names[i] + "=...";
  a.arity(1, 1, (usage + ")").c_str());
  t.arg = a.expr(a.pos[0], "operand");
  for (int i = 0; i < f->num_params; ++i) {
    const char* name = f->param_names[i];
    allowed.emplace_back(name);
    const Value* v = a.take_kw(name);
    t.user_params.push_back(v ? a.scalar(*v, name) : f->param_defaults[i]);
  }
  common_parameters(a, &t);
  a.done(allowed);
  out->type = Value::Type::Terms;
  out->terms.push_back(located(a.loc(), [&] { return make_term(t); }));
  return true;
}

Value Parser::builtin(Args& a) {
  const std::string& fn = a.fn();
  Value v;
  if (constructor(a, &v) || linear_operator(a, &v) || term_role(a, &v) || prox_function(a, &v) ||
      user_prox_function(a, &v)) {
    return v;
  }
  if (env_.count(fn)) fail(a.loc(), "'" + fn + "' is a name, not a function; it cannot be called");
  fail(a.loc(), "unknown function '" + fn + "' (not a built-in, and no prox function of that name is registered: " +
                    "a plugin registers its own, --plugin lib.so)");
}

}  // namespace proxc::internal::parsing

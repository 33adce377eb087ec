// The problem builder of the public API (proxc/problem.h): expressions,
// function terms and problems over the internal IR's checking make functions,
// so that a problem built in C++ obeys the rules a .prox file does.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <functional>

#include "api/access.h"
#include "emulate/fold.h"
#include "frontend/json.h"
#include "frontend/load.h"
#include "frontend/parser.h"
#include "frontend/plugin.h"
#include "io/array_io.h"
#include "ir/dot.h"
#include "ir/latex.h"
#include "ir/printer.h"
#include "ir/traverse.h"
#include "proxc/prox_fn.h"
#include "support/error.h"
#include "support/file_util.h"
#include "support/names.h"

namespace proxc {

using internal::Access;
namespace ir = internal;

namespace internal {

const Expr& defined_node(const proxc::Expr& e, const char* what) {
  user_assert(e.defined()) << what << ": the expression is undefined (a default-constructed proxc::Expr)";
  return Access::node(e);
}

}  // namespace internal

namespace {

const ir::Expr& node(const Expr& e, const char* what) { return ir::defined_node(e, what); }

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}
Expr wrap(ir::Expr e) { return Access::make_expr(ir::fold_constant(e)); }

// The data of a constant holding the array's values: a file constant when
// the array was read by load_array, inline data otherwise.
std::shared_ptr<ir::ConstantData> constant_data(const Array& a) {
  auto data = std::make_shared<ir::ConstantData>();
  data->array = Access::impl(a).array;
  data->source = Access::impl(a).source;
  return data;
}

// A constant node holding the array's values.
ir::Expr constant_node(const Array& a, const std::string& name) {
  const Array::Impl& impl = Access::impl(a);
  // An unnamed Array used twice is one constant: the node it became is kept
  // with it, and used again while it holds the same values.
  Array::Impl* cache = name.empty() ? Access::node_cache(a) : nullptr;
  if (cache && cache->node && cache->node->constant->array.shape == impl.array.shape &&
      std::equal(impl.array.data.begin(), impl.array.data.end(), cache->node->constant->array.data.begin())) {
    return cache->node;
  }
  std::string hint = name;
  if (hint.empty() && !a.source_path().empty()) {
    // A container's member is named after the member ("frames.npz:noisy" -> noisy, "scan.h5:/entry/data" -> data).
    const internal::MemberPath split = internal::split_member_path(a.source_path());
    std::string stem = split.has_member() ? std::filesystem::path(split.member).filename().string()
                                          : std::filesystem::path(split.file).stem().string();
    if (is_identifier(stem)) hint = stem;
  }
  ir::Expr e = ir::make_constant(constant_data(a), hint);
  if (cache) cache->node = e;
  return e;
}

ir::Param param_of(const Param& p, const char* fn, const char* what) {
  if (!p.is_array()) return ir::Param::of(p.scalar());
  const ir::Expr& e = Access::node(p.array());
  user_assert(e->is_constant()) << fn << ": " << what
                                << " must be a number or a constant array, got an expression of "
                                << "shape " << shape_to_string(e->shape) << " that depends on a variable";
  return ir::Param::of(e);
}

Term make_single(ir::FunctionKind kind, const Expr& e,
                 const std::function<void(ir::FunctionTerm&)>& set = nullptr) {
  ir::FunctionTerm t;
  t.kind = kind;
  t.arg = node(e, ir::to_string(kind));
  if (set) set(t);
  Term out;
  Access::terms(out).push_back(ir::make_term(t));
  return out;
}

// The one term of `t`, for a parameter setter.
ir::FunctionTerm& single(Term& t, const char* setter) {
  std::vector<ir::FunctionTerm>& terms = Access::terms(t);
  user_assert(terms.size() == 1) << "Term::" << setter << "(): this is a sum of " << terms.size()
                                 << " function terms; set parameters on each term before adding them";
  return terms[0];
}

Term& set_and_check(Term& t, const char* setter, const std::function<void(ir::FunctionTerm&)>& set) {
  ir::FunctionTerm copy = single(t, setter);
  set(copy);
  single(t, setter) = ir::make_term(copy);
  return t;
}

}  // namespace

// ---- Expr -------------------------------------------------------------------------------------------

Expr::Expr() = default;
Expr::Expr(const Array& constant) : node_(constant_node(constant, "")) {}

const Shape& Expr::shape() const { return node(*this, "Expr::shape")->shape; }
int Expr::rank() const { return node(*this, "Expr::rank")->rank(); }
const std::string& Expr::name() const { return node(*this, "Expr::name")->name_hint; }
bool Expr::is_variable() const { return node_ && node_->is_variable(); }
bool Expr::is_constant() const { return node_ && node_->is_constant(); }
std::string Expr::kind() const { return ir::to_string(node(*this, "Expr::kind")->kind); }

Expr variable(const Shape& shape, const std::string& name) {
  user_assert(is_identifier(name))
      << "variable: the name '" << name
      << "' is not an identifier (letters, digits and '_', not starting with a digit)";
  return wrap(ir::make_variable(shape, name));
}

Expr constant(const Array& data, const std::string& name) {
  user_assert(name.empty() || is_identifier(name))
      << "constant: the name '" << name
      << "' is not an identifier (letters, digits and '_', not starting with a digit)";
  return wrap(constant_node(data, name));
}

Expr gaussian(const Shape& size, double sigma) { return wrap(ir::make_gaussian(size, sigma)); }

Expr operator+(const Expr& a, const Expr& b) { return wrap(ir::make_add(node(a, "+"), node(b, "+"))); }
Expr operator-(const Expr& a, const Expr& b) { return wrap(ir::make_sub(node(a, "-"), node(b, "-"))); }
Expr operator-(const Expr& a) { return wrap(ir::make_neg(node(a, "-"))); }
Expr operator+(const Expr& a, double offset) {
  return wrap(ir::make_add(node(a, "+"), ir::make_scalar_constant(offset)));
}
Expr operator+(double offset, const Expr& a) {
  return wrap(ir::make_add(ir::make_scalar_constant(offset), node(a, "+")));
}
Expr operator-(const Expr& a, double offset) {
  return wrap(ir::make_sub(node(a, "-"), ir::make_scalar_constant(offset)));
}
Expr operator-(double offset, const Expr& a) {
  return wrap(ir::make_sub(ir::make_scalar_constant(offset), node(a, "-")));
}
Expr operator*(double s, const Expr& a) { return wrap(ir::make_scale(s, node(a, "*"))); }
Expr operator*(const Expr& a, double s) { return wrap(ir::make_scale(s, node(a, "*"))); }
Expr operator/(const Expr& a, double s) {
  user_assert(s != 0) << "/: division by zero";
  return wrap(ir::make_scale(1.0 / s, node(a, "/")));
}

Expr grad(const Expr& x, int64_t dims) { return wrap(ir::make_grad(node(x, "grad"), dims)); }
Expr conv(const Expr& k, const Expr& x) { return wrap(ir::make_conv(node(k, "conv"), node(x, "conv"))); }
Expr pxwise_matrixmult(const Expr& matrices, const Expr& x) {
  return wrap(ir::make_pxwise_matrixmult(node(matrices, "pxwise_matrixmult"), node(x, "pxwise_matrixmult")));
}
Expr uneven_subsample(const Expr& x, const Expr& indices) {
  return wrap(ir::make_uneven_subsample(node(x, "uneven_subsample"), node(indices, "uneven_subsample")));
}
Expr conv(const Expr& k, const Expr& x, const std::string& boundary, int64_t dims) {
  return wrap(ir::make_conv(node(k, "conv"), node(x, "conv"), boundary, dims));
}
Expr mul_elemwise(const Expr& w, const Expr& x) {
  return wrap(ir::make_mul_elemwise(node(w, "mul_elemwise"), node(x, "mul_elemwise")));
}
Expr subsample(const Expr& x, const std::vector<int64_t>& steps) {
  return wrap(ir::make_subsample(node(x, "subsample"), steps));
}
Expr scale(double s, const Expr& x) { return wrap(ir::make_scale(s, node(x, "scale"))); }
Expr vstack(const std::vector<Expr>& parts) {
  std::vector<ir::Expr> nodes;
  for (const Expr& p : parts) nodes.push_back(node(p, "vstack"));
  return wrap(ir::make_vstack(nodes));
}
Expr hstack(const std::vector<Expr>& parts) {
  std::vector<ir::Expr> nodes;
  for (const Expr& p : parts) nodes.push_back(node(p, "hstack"));
  return wrap(ir::make_hstack(nodes));
}
Expr reshape(const Expr& x, const Shape& shape) { return wrap(ir::make_reshape(node(x, "reshape"), shape)); }
Expr transpose(const Expr& x, const std::vector<int64_t>& axes) {
  const ir::Expr& n = node(x, "transpose");
  std::vector<int64_t> a = axes;
  if (a.empty()) {
    for (int i = n->rank() - 1; i >= 0; --i) a.push_back(i);
  }
  return wrap(ir::make_transpose(n, a));
}
Expr crop(const Expr& x, const std::vector<int64_t>& begin, const Shape& extent) {
  return wrap(ir::make_crop(node(x, "crop"), begin, extent));
}
Expr mul_color(const Expr& x, const Expr& matrix) {
  return wrap(ir::make_mul_color(node(x, "mul_color"), node(matrix, "mul_color")));
}
Expr mul_color(const Expr& x, const std::string& named_matrix) {
  return wrap(ir::make_mul_color(node(x, "mul_color"), nullptr, named_matrix));
}
Expr warp(const Expr& x, const Expr& homography, const std::vector<int64_t>& target_shape) {
  return wrap(ir::make_warp(node(x, "warp"), node(homography, "warp"), target_shape));
}
Expr warp(const Expr& x, const Expr& homography) {
  return wrap(ir::make_warp(node(x, "warp"), node(homography, "warp")));
}
Expr black_box(const std::string& name, const Expr& x) {
  return wrap(ir::make_black_box(name, node(x, "black_box")));
}

// ---- Param and Term ---------------------------------------------------------------------------------

Param::Param(double value) : scalar_(value) {}
Param::Param(const Array& values) : array_(values) {}
Param::Param(const Expr& constant) : array_(constant) {
  user_assert(constant.defined()) << "Param: the expression is undefined";
}

Term::Term() = default;
Term::Term(const Term& other) : impl_(std::make_unique<Impl>(other.impl())) {}
Term::Term(Term&& other) noexcept = default;
Term& Term::operator=(const Term& other) {
  if (this != &other) impl() = other.impl();
  return *this;
}
Term& Term::operator=(Term&& other) noexcept {
  std::swap(impl_, other.impl_);
  return *this;
}
Term::~Term() = default;

const Term::Impl& Term::impl() const {
  static const Impl empty;
  return impl_ ? *impl_ : empty;
}

Term::Impl& Term::impl() {
  if (!impl_) impl_ = std::make_unique<Impl>();
  return *impl_;
}

Term& Term::alpha(double v) {
  return set_and_check(*this, "alpha", [&](ir::FunctionTerm& t) { t.alpha = v; });
}
Term& Term::beta(double v) {
  return set_and_check(*this, "beta", [&](ir::FunctionTerm& t) { t.beta = v; });
}
Term& Term::b(const Param& v) {
  return set_and_check(*this, "b",
                       [&](ir::FunctionTerm& t) { t.b = param_of(v, ir::to_string(t.kind), "b"); });
}
Term& Term::c(const Param& v) {
  return set_and_check(*this, "c",
                       [&](ir::FunctionTerm& t) { t.c = param_of(v, ir::to_string(t.kind), "c"); });
}
Term& Term::gamma(double v) {
  return set_and_check(*this, "gamma", [&](ir::FunctionTerm& t) { t.gamma = v; });
}
Term& Term::d(double v) {
  return set_and_check(*this, "d", [&](ir::FunctionTerm& t) { t.d = v; });
}
size_t Term::size() const { return impl().terms.size(); }

Term operator+(const Term& a, const Term& b) {
  Term out = a;
  for (const ir::FunctionTerm& t : Access::terms(b)) Access::terms(out).push_back(t);
  return out;
}

Term operator*(double s, const Term& t) {
  user_assert(s >= 0 && std::isfinite(s))
      << "the factor of a function term must be a finite number >= 0, got " << s;
  Term out = t;
  for (ir::FunctionTerm& f : Access::terms(out)) {
    f.alpha *= s;
    user_assert(std::isfinite(f.alpha)) << "the factor of a function term overflows: alpha " << f.alpha;
    f = ir::make_term(f);
  }
  return out;
}
Term operator*(const Term& t, double s) { return s * t; }

Term sum_squares(const Expr& e) { return make_single(ir::FunctionKind::SumSquares, e); }
Term norm1(const Expr& e) { return make_single(ir::FunctionKind::Norm1, e); }
Term group_norm1(const Expr& e, const std::vector<int64_t>& axes) {
  return make_single(ir::FunctionKind::GroupNorm1, e, [&](ir::FunctionTerm& t) { t.axes = axes; });
}
Term nonneg(const Expr& e) { return make_single(ir::FunctionKind::Nonneg, e); }
Term poisson_norm(const Expr& e, const Expr& counts) {
  const ir::Expr& c = node(counts, "poisson_norm");
  user_assert(c->is_constant())
      << "poisson_norm: counts must be a constant array, got an expression that depends on "
         "a variable";
  return make_single(ir::FunctionKind::PoissonNorm, e, [&](ir::FunctionTerm& t) { t.counts = c; });
}
Term sum_entries(const Expr& e) { return make_single(ir::FunctionKind::SumEntries, e); }

namespace {
// A weight, mask or counts argument: a constant (make_term checks its shape and values).
ir::Expr constant_arg(const Expr& e, const char* fn, const char* what) {
  const ir::Expr& c = node(e, fn);
  user_assert(c->is_constant()) << fn << ": " << what << " must be a constant array, got an expression that "
                                << "depends on a variable";
  return c;
}
}  // namespace

Term weighted_norm1(const Expr& e, const Expr& w) {
  return make_single(ir::FunctionKind::WeightedNorm1, e,
                     [&](ir::FunctionTerm& t) { t.weight = constant_arg(w, "weighted_norm1", "the weight"); });
}
Term weighted_sum_squares(const Expr& e, const Expr& w) {
  return make_single(ir::FunctionKind::WeightedSumSquares, e, [&](ir::FunctionTerm& t) {
    t.weight = constant_arg(w, "weighted_sum_squares", "the weight");
  });
}
Term weighted_group_norm1(const Expr& e, const std::vector<int64_t>& axes, const Expr& w) {
  return make_single(ir::FunctionKind::WeightedGroupNorm1, e, [&](ir::FunctionTerm& t) {
    t.axes = axes;
    t.weight = constant_arg(w, "weighted_group_norm1", "the weight");
  });
}
Term weighted_nonneg(const Expr& e, const Expr& w) {
  return make_single(ir::FunctionKind::WeightedNonneg, e,
                     [&](ir::FunctionTerm& t) { t.weight = constant_arg(w, "weighted_nonneg", "the weight"); });
}
Term masked_nonneg(const Expr& e, const Expr& mask) {
  return make_single(ir::FunctionKind::MaskedNonneg, e,
                     [&](ir::FunctionTerm& t) { t.weight = constant_arg(mask, "masked_nonneg", "the mask"); });
}
Term weighted_poisson_norm(const Expr& e, const Expr& counts, const Expr& w) {
  return make_single(ir::FunctionKind::WeightedPoissonNorm, e, [&](ir::FunctionTerm& t) {
    t.counts = constant_arg(counts, "weighted_poisson_norm", "counts");
    t.weight = constant_arg(w, "weighted_poisson_norm", "the weight");
  });
}
Term zero_prox(const Expr& e) { return make_single(ir::FunctionKind::ZeroProx, e); }
Term prox_fn(const std::string& name, const Expr& e, const std::map<std::string, double>& params) {
  ir::register_builtin_prox_fns();
  const proxc_prox_fn* f = proxc_find_prox_fn(name.c_str());
  user_assert(f) << "prox_fn: no prox function named '" << name
                 << "' is registered (register it with proxc_register_prox_fn first)";
  std::vector<double> values(f->param_defaults, f->param_defaults + f->num_params);
  for (const auto& [key, value] : params) {
    int i = 0;
    while (i < f->num_params && key != f->param_names[i]) ++i;
    user_assert(i < f->num_params) << name << ": has no parameter '" << key << "'";
    values[static_cast<size_t>(i)] = value;
  }
  return make_single(ir::FunctionKind::UserProx, e, [&](ir::FunctionTerm& t) {
    t.user_name = name;
    t.user_params = values;
  });
}
Term box(const Expr& e, const Param& lower, const Param& upper) {
  return make_single(ir::FunctionKind::Box, e, [&](ir::FunctionTerm& t) {
    t.lower = param_of(lower, "box", "lower");
    t.upper = param_of(upper, "box", "upper");
  });
}

// ---- Problem ----------------------------------------------------------------------------------------

Problem::Problem() = default;
Problem::Problem(const Problem& other) : impl_(std::make_unique<Impl>(other.impl())) {}
Problem::Problem(Problem&& other) noexcept = default;
Problem& Problem::operator=(const Problem& other) {
  if (this != &other) impl() = other.impl();
  return *this;
}
Problem& Problem::operator=(Problem&& other) noexcept {
  std::swap(impl_, other.impl_);
  return *this;
}
Problem::~Problem() = default;

const Problem::Impl& Problem::impl() const {
  static const Impl empty;
  return impl_ ? *impl_ : empty;
}

Problem::Impl& Problem::impl() {
  if (!impl_) impl_ = std::make_unique<Impl>();
  return *impl_;
}

Expr Problem::variable(const Shape& shape, const std::string& name) { return proxc::variable(shape, name); }

void Problem::minimize(const Term& objective) {
  user_assert(objective.size() > 0) << "minimize: the objective has no function terms";
  ir::Problem p;
  p.terms = Access::terms(objective);
  ir::verify(p);
  impl().problem = std::move(p);
  impl().values.clear();
}

std::vector<Expr> Problem::variables() const {
  std::vector<Expr> out;
  for (const ir::Expr& v : impl().problem.variables()) out.push_back(wrap(v));
  return out;
}

std::string Problem::name_of(const Expr& e) const {
  const ir::Expr& n = node(e, "Problem::name_of");
  ir::PrintPlan plan(impl().problem);
  user_assert(plan.is_bound(n.get()))
      << "Problem::name_of: the " << ir::to_string(n->kind)
      << " is not named in this problem (not one of its variables or bound constants)";
  return plan.name(n.get());
}

size_t Problem::num_terms() const { return impl().problem.terms.size(); }
std::vector<std::string> Problem::passes_run() const { return impl().problem.passes_run; }

Array Problem::value(const Expr& variable) const {
  const ir::Expr& v = node(variable, "Problem::value");
  user_assert(v->is_variable()) << "Problem::value: the expression is a " << ir::to_string(v->kind)
                                << ", not a variable";
  auto it = impl().values.find(v.get());
  if (it != impl().values.end()) return it->second.second;
  for (const ir::Expr& mine : impl().problem.variables()) {
    user_assert(mine != v) << "Problem::value: the variable '" << v->name_hint
                           << "' has no value yet: solve the problem first (proxc::solve)";
  }
  user_error << "Problem::value: '" << v->name_hint << "' is not a variable of this problem";
  return {};
}

bool Problem::has_value(const Expr& variable) const {
  return variable.defined() && impl().values.count(Access::node(variable).get()) > 0;
}

namespace {

// The constant the printed problem names `name`.
// The constant the printed problem names `name` (derived constants unfolded,
// so that a constant used only inside one, `b` of `c = 0.5 * b`, is found).
ir::Expr named_constant(const ir::Problem& p, const std::string& name, const char* what) {
  ir::PrintPlan plan(ir::unfold_constants(p));
  std::string constants;
  bool a_variable = false;
  for (const ir::Expr& e : plan.order()) {
    if (e->is_constant() && plan.is_bound(e.get())) {
      if (plan.name(e.get()) == name) return e;
      constants += (constants.empty() ? "" : ", ") + plan.name(e.get());
    }
    a_variable = a_variable || (e->is_variable() && e->name_hint == name);
  }
  user_error << what << ": the problem has no constant named '" << name << "'"
             << (a_variable ? " ('" + name + "' is a variable, not data)" : "")
             << "; its constants: " << (constants.empty() ? "none" : constants);
  return nullptr;
}

// `p` with the constant `from` replaced by `to`, and every constant derived
// from it (`0.5 * b`, a b that absorb moved) computed again from the new data.
ir::Problem with_constant_replaced(const ir::Problem& p, const ir::Expr& from, const ir::Expr& to) {
  ir::Problem q = ir::unfold_constants(p);
  ir::ExprMutator m(
      [&](const ir::Expr& e, std::vector<ir::Expr> args) { return e == from ? to : ir::with_args(e, std::move(args)); });
  for (ir::FunctionTerm& t : q.terms) {
    t.arg = m(t.arg);
    for (ir::Param* prm : {&t.b, &t.c, &t.lower, &t.upper}) prm->array = m(prm->array);
    t.counts = m(t.counts);
    t.weight = m(t.weight);
  }
  return ir::fold_constants(q);  // folds and checks each term again
}

}  // namespace

void Problem::set_constant(const std::string& name, const Array& data) {
  ir::Expr old = named_constant(impl().problem, name, "set_constant");
  user_assert(data.shape() == old->shape)
      << "set_constant " << name << ": the data has shape " << shape_to_string(data.shape())
      << ", the constant has " << shape_to_string(old->shape);
  impl().problem =
      with_constant_replaced(impl().problem, old, ir::make_constant(constant_data(data), old->name_hint));
  impl().values.clear();
}

void Problem::set_constant(const std::string& name, const std::string& path) {
  ir::Expr old = named_constant(impl().problem, name, "set_constant");
  Array data = load_array(path);
  user_assert(data.shape() == old->shape)
      << "set_constant " << name << ": " << path << " holds shape " << shape_to_string(data.shape())
      << ", the constant has " << shape_to_string(old->shape);
  impl().problem =
      with_constant_replaced(impl().problem, old, ir::make_constant(constant_data(data), old->name_hint));
  impl().values.clear();
}

std::vector<std::string> Problem::constant_names() const {
  ir::PrintPlan plan(ir::unfold_constants(impl().problem));
  std::vector<std::string> names;
  for (const ir::Expr& e : plan.order()) {
    if (e->is_constant() && plan.is_bound(e.get())) names.push_back(plan.name(e.get()));
  }
  return names;
}

std::vector<std::string> Problem::data_files() const {
  ir::PrintPlan plan(ir::unfold_constants(impl().problem));
  std::vector<std::string> files;
  for (const ir::Expr& e : plan.order()) {
    if (!e->is_constant() || !e->constant || e->constant->source.type != ir::ConstantSource::Type::File)
      continue;
    const ir::ConstantSource& src = e->constant->source;
    const std::string& f = src.resolved_path.empty() ? src.path : src.resolved_path;
    if (std::find(files.begin(), files.end(), f) == files.end()) files.push_back(f);
  }
  return files;
}

Array Problem::constant(const std::string& name) const {
  ir::Expr e = named_constant(impl().problem, name, "constant");
  return Access::make_array(e->constant->array, e->constant->source);
}

std::string Problem::print(ProblemFormat format, const PrintOptions& options) const {
  switch (format) {
    case ProblemFormat::Text:
      return ir::print_text(impl().problem, {options.base_dir});
    case ProblemFormat::Json: {
      ir::JsonPrintOptions o;
      o.base_dir = options.base_dir;
      o.inline_constants = options.inline_constants;
      return ir::print_json(impl().problem, o);
    }
    case ProblemFormat::Dot:
      return ir::print_dot(impl().problem);
    case ProblemFormat::Latex:
      return ir::print_latex(impl().problem);
  }
  internal_error << "unknown problem format";
  return "";
}

Problem load_problem(const std::string& path) { return Access::make_problem(ir::load_problem(path)); }

Problem parse_problem(const std::string& text, const std::string& file, const std::string& base_dir) {
  return Access::make_problem(ir::parse_program(text, file, base_dir).problem);
}

Problem parse_problem_json(const std::string& json, const std::string& file, const std::string& base_dir) {
  return Access::make_problem(ir::parse_json(json, file, base_dir));
}

bool is_reserved_name(const std::string& name) { return internal::NameScope::is_reserved(name); }

}  // namespace proxc

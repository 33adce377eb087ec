#include "step/step.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "ir/printer.h"
#include "ir/traverse.h"
#include "support/error.h"
#include "support/format.h"
#include "support/names.h"

namespace proxc::internal {

namespace {
const char* const kStepNames[] = {
#define PROXC_X(name, keyword) keyword,
    PROXC_FOR_EACH_STEP_KIND(PROXC_X)
#undef PROXC_X
};

std::shared_ptr<StepNode> make(StepKind kind, Shape shape, std::vector<Step> args) {
  for (const Step& a : args) internal_assert(a) << to_string(kind) << ": null operand";
  auto n = std::make_shared<StepNode>();
  n->kind = kind;
  n->shape = std::move(shape);
  n->args = std::move(args);
  return n;
}

bool is_scalar(const Step& s) { return s->shape.empty(); }

// The shape of an elementwise result: equal shapes, or a scalar broadcast.
Shape broadcast(StepKind kind, const Step& a, const Step& b) {
  if (is_scalar(a)) return b->shape;
  if (is_scalar(b)) return a->shape;
  internal_assert(a->shape == b->shape) << to_string(kind) << ": shapes " << shape_to_string(a->shape) << " and "
                                        << shape_to_string(b->shape);
  return a->shape;
}
}  // namespace

const char* to_string(StepKind kind) { return kStepNames[static_cast<int>(kind)]; }

std::vector<Expr> linop_variables(const Expr& k) {
  // In the order a depth-first walk first reaches them, operands in order.
  std::vector<Expr> vars;
  for_each_node({k}, [&](const Expr& e) { if (e->is_variable()) vars.push_back(e); }, nullptr,
                [](const ExprNode& n) { return n.has_variable; });
  return vars;
}

Step step_input(const std::string& name, Shape shape) {
  auto n = make(StepKind::Input, std::move(shape), {});
  n->name = name;
  return n;
}

Step step_param(const std::string& name) {
  auto n = make(StepKind::Param, {}, {});
  n->name = name;
  return n;
}

Step step_constant(double v) {
  auto n = make(StepKind::Constant, {}, {});
  n->value = v;
  return n;
}

Step step_data(const Expr& constant) {
  internal_assert(constant && constant->is_constant()) << "step_data of a non-constant";
  auto n = make(StepKind::Data, constant->shape, {});
  n->expr = constant;
  return n;
}

Step step_forward(const Expr& k, const std::vector<Step>& xs, bool affine) {
  std::vector<Expr> vars = linop_variables(k);
  internal_assert(vars.size() == xs.size()) << "forward: " << vars.size() << " variables, " << xs.size()
                                            << " operands";
  for (size_t i = 0; i < vars.size(); ++i) {
    internal_assert(vars[i]->shape == xs[i]->shape)
        << "forward: operand " << i << " has shape " << shape_to_string(xs[i]->shape) << ", variable "
        << shape_to_string(vars[i]->shape);
  }
  auto n = make(StepKind::Forward, k->shape, xs);
  n->expr = k;
  n->vars = std::move(vars);
  n->index = affine ? 1 : 0;
  return n;
}

Step step_adjoint(const Expr& k, int var_index, const Step& y) {
  std::vector<Expr> vars = linop_variables(k);
  internal_assert(var_index >= 0 && var_index < static_cast<int>(vars.size())) << "adjoint: variable index";
  internal_assert(y->shape == k->shape) << "adjoint: y has shape " << shape_to_string(y->shape) << ", K's output "
                                        << shape_to_string(k->shape);
  auto n = make(StepKind::Adjoint, vars[static_cast<size_t>(var_index)]->shape, {y});
  n->expr = k;
  n->vars = std::move(vars);
  n->index = var_index;
  return n;
}

Step step_prox(const FunctionTerm& term, const Step& v, const Step& rho) {
  internal_assert(v->shape == term.arg->shape) << "prox: v has shape " << shape_to_string(v->shape)
                                               << ", the term's operand " << shape_to_string(term.arg->shape);
  internal_assert(is_scalar(rho)) << "prox: rho must be a scalar";
  auto n = make(StepKind::Prox, v->shape, {v, rho});
  n->term = std::make_shared<FunctionTerm>(term);
  return n;
}

Step step_value(const FunctionTerm& term, const Step& v) {
  internal_assert(v->shape == term.arg->shape) << "value: v has shape " << shape_to_string(v->shape);
  auto n = make(StepKind::Value, {}, {v});
  n->term = std::make_shared<FunctionTerm>(term);
  return n;
}

Step step_circulant_solve(const Expr& kernel, const Step& rhs, const Step& a, const Step& c) {
  internal_assert(kernel && kernel->is_constant()) << "circulant_solve: kernel must be a constant";
  internal_assert(kernel->rank() <= static_cast<int>(rhs->shape.size())) << "circulant_solve: kernel rank";
  internal_assert(is_scalar(a) && is_scalar(c)) << "circulant_solve: a and c are scalars";
  auto n = make(StepKind::CirculantSolve, rhs->shape, {rhs, a, c});
  n->expr = kernel;
  return n;
}

Step step_binary(StepKind kind, const Step& a, const Step& b) {
  switch (kind) {
    case StepKind::Add: case StepKind::Sub: case StepKind::Mul: case StepKind::Div:
    case StepKind::Min: case StepKind::Max:
      break;
    default:
      internal_error << to_string(kind) << " is not a binary elementwise node";
  }
  return make(kind, broadcast(kind, a, b), {a, b});
}

Step step_unary(StepKind kind, const Step& a) {
  switch (kind) {
    case StepKind::Neg: case StepKind::Abs: case StepKind::Sqrt: case StepKind::Sign:
      break;
    default:
      internal_error << to_string(kind) << " is not a unary elementwise node";
  }
  return make(kind, a->shape, {a});
}

Step step_axpby(const Step& a, const Step& x, const Step& b, const Step& y) {
  internal_assert(is_scalar(a) && is_scalar(b)) << "axpby: a and b are scalars";
  Shape s = broadcast(StepKind::Axpby, x, y);
  return make(StepKind::Axpby, s, {a, x, b, y});
}

Step step_fill(double v, Shape shape) {
  auto n = make(StepKind::Fill, std::move(shape), {});
  n->value = v;
  return n;
}

bool is_reduction(StepKind kind) {
  return kind == StepKind::Sum || kind == StepKind::SumSquares || kind == StepKind::MaxAbs || kind == StepKind::Dot;
}

bool is_gated(const StepNode& n) { return is_reduction(n.kind) && n.index == 1; }

Step step_reduce(StepKind kind, const Step& a, const Step& b, const Step& when) {
  internal_assert(!when || (when->kind == StepKind::Param && when->name == kCheckParam))
      << "a reduction is gated by the parameter " << kCheckParam;
  std::vector<Step> args = {a};
  switch (kind) {
    case StepKind::Sum: case StepKind::SumSquares: case StepKind::MaxAbs:
      internal_assert(!b) << to_string(kind) << " takes one operand";
      break;
    case StepKind::Dot:
      internal_assert(b && a->shape == b->shape) << "dot: shapes differ";
      args.push_back(b);
      break;
    default:
      internal_error << to_string(kind) << " is not a reduction";
  }
  if (when) args.push_back(when);
  auto n = make(kind, {}, std::move(args));
  n->index = when ? 1 : 0;
  return n;
}

std::vector<Step> StepProgram::nodes() const {
  std::vector<Step> out;
  std::unordered_set<const StepNode*> seen;
  for (const auto& [name, root] : outputs) {
    std::vector<std::pair<Step, size_t>> stack;
    if (seen.insert(root.get()).second) stack.push_back({root, 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next < n->args.size()) {
        Step child = n->args[next++];
        if (seen.insert(child.get()).second) stack.push_back({child, 0});
      } else {
        out.push_back(n);
        stack.pop_back();
      }
    }
  }
  return out;
}

std::vector<Step> StepProgram::inputs() const {
  std::vector<Step> out;
  std::unordered_set<std::string> names;
  for (const Step& n : nodes()) {
    if (n->kind == StepKind::Input && names.insert(n->name).second) out.push_back(n);
  }
  return out;
}

std::vector<std::string> StepProgram::params() const {
  std::vector<std::string> out;
  std::unordered_set<std::string> names;
  for (const Step& n : nodes()) {
    if (n->kind == StepKind::Param && names.insert(n->name).second) out.push_back(n->name);
  }
  return out;
}

std::set<std::string> StepProgram::check_outputs() const {
  std::unordered_set<const StepNode*> gated;
  for (const Step& n : nodes()) {
    bool g = is_gated(*n);
    for (const Step& a : n->args) g = g || gated.count(a.get()) > 0;
    if (g) gated.insert(n.get());
  }
  std::set<std::string> out;
  for (const auto& [name, s] : outputs) {
    if (gated.count(s.get())) out.insert(name);
  }
  return out;
}

void StepProgram::verify() const {
  std::set<std::string> names;
  for (const auto& [name, s] : outputs) {
    internal_assert(names.insert(name).second) << "step program '" << this->name << "': two outputs named '" << name << "'";
  }
}

bool run_checks(const std::map<std::string, double>& params) {
  auto it = params.find(kCheckParam);
  return it == params.end() || it->second != 0;
}

namespace {

// n with each operand a replaced by replace(a); n itself when none changes.
template <typename Replace>
Step with_args(const Step& n, Replace replace) {
  std::vector<Step> args;
  bool same = true;
  for (const Step& a : n->args) {
    args.push_back(replace(a));
    same = same && args.back() == a;
  }
  if (same) return n;
  auto copy = std::make_shared<StepNode>(*n);
  copy->args = std::move(args);
  return copy;
}

}  // namespace

CheckSplit split_check(const StepProgram& p) {
  const std::set<std::string> checks = p.check_outputs();
  // The split with the array outputs in `recompute` computed by the check
  // from their operands instead of read from the iteration's outputs.
  auto split = [&](const std::set<const StepNode*>& recompute) {
    CheckSplit s;
    s.iteration.name = p.name;
    s.iteration.unrolled = s.check.unrolled = p.unrolled;
    s.check.name = (p.name.empty() ? std::string("step") : p.name) + "_check";
    std::set<std::string> taken;
    for (const Step& n : p.inputs()) taken.insert(n->name);
    // What each node of p is in the check program: the iteration's array
    // outputs become inputs; nodes reading a replaced node are copied.
    std::unordered_map<const StepNode*, Step> map;
    for (const auto& [name, st] : p.outputs) {
      if (checks.count(name)) continue;
      s.iteration.outputs.push_back({name, st});
      if (st->shape.empty() || map.count(st.get()) || recompute.count(st.get())) continue;
      std::string in = "next_" + name;
      while (taken.count(in)) in = "next_" + in;
      taken.insert(in);
      s.next_inputs[name] = in;
      map[st.get()] = step_input(in, st->shape);
    }
    if (checks.empty()) return s;
    for (const Step& n : p.nodes()) {
      if (map.count(n.get())) continue;
      if (is_gated(*n)) {
        // The check program runs only in checking runs: its reductions are
        // not gated (a gate that is never off would leave the backend
        // scheduling for the empty regions of a run that does not happen).
        map[n.get()] = step_reduce(n->kind, map.at(n->args[0].get()),
                                   n->kind == StepKind::Dot ? map.at(n->args[1].get()) : Step());
        continue;
      }
      map[n.get()] = with_args(n, [&](const Step& a) { return map.at(a.get()); });
    }
    for (const auto& [name, st] : p.outputs) {
      if (checks.count(name)) s.check.outputs.push_back({name, map.at(st.get())});
    }
    return s;
  };
  CheckSplit s = split({});
  // An output that is elementwise arithmetic of arrays the check reads anyway
  // (pc's x̄⁺ = 2x⁺ − x, whose norm tells whether it is finite) costs the
  // check a pass over one more array read, and a few flops recomputed.
  std::set<std::string> inputs;  // the check's inputs
  for (const Step& n : s.check.inputs()) inputs.insert(n->name);
  std::unordered_map<const StepNode*, std::string> next;  // p's array outputs → the check's input
  for (const auto& [name, st] : p.outputs) {
    if (s.next_inputs.count(name)) next[st.get()] = s.next_inputs.at(name);
  }
  // Decided operands first (p's nodes in order), so that the choice does not depend on where
  // nodes lie in memory: an output is recomputed when each operand is a constant, a param, or an
  // array the check reads itself (an input of p, or an output read and not recomputed).
  std::set<const StepNode*> recompute;
  auto read_anyway = [&](const Step& a) {
    if (a->shape.empty()) return a->kind == StepKind::Constant || a->kind == StepKind::Param;
    if (a->kind == StepKind::Input) return inputs.count(a->name) > 0;
    return next.count(a.get()) > 0 && inputs.count(next.at(a.get())) > 0 && !recompute.count(a.get());
  };
  for (const Step& n : p.nodes()) {
    const auto in = next.find(n.get());
    const bool elementwise = n->kind == StepKind::Axpby || n->kind == StepKind::Add ||
                             n->kind == StepKind::Sub || n->kind == StepKind::Mul;
    if (in == next.end() || !elementwise || !inputs.count(in->second)) continue;
    if (std::all_of(n->args.begin(), n->args.end(), read_anyway)) recompute.insert(n.get());
  }
  return recompute.empty() ? s : split(recompute);
}

namespace {

// Whether two problem expressions are the same operator: equal structure,
// attributes and scalars, the same variables and constants.
bool same_expr(const Expr& a, const Expr& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  if (a->kind != b->kind || a->shape != b->shape || a->ints != b->ints || a->str != b->str ||
      a->args.size() != b->args.size() || std::memcmp(&a->scalar, &b->scalar, sizeof(double)) != 0) {
    return false;
  }
  if (a->kind == ExprKind::Variable) return false;  // distinct nodes are distinct variables
  if (a->kind == ExprKind::Constant) return a->constant == b->constant;
  for (size_t i = 0; i < a->args.size(); ++i) {
    if (!same_expr(a->args[i], b->args[i])) return false;
  }
  return true;
}

bool same_node(const StepNode& a, const StepNode& b) {
  if (a.kind != b.kind || a.shape != b.shape || a.args != b.args || a.name != b.name || a.index != b.index ||
      a.term != b.term || a.vars.size() != b.vars.size() || std::memcmp(&a.value, &b.value, sizeof(double)) != 0) {
    return false;
  }
  for (size_t i = 0; i < a.vars.size(); ++i) {
    if (a.vars[i] != b.vars[i]) return false;
  }
  return same_expr(a.expr, b.expr);
}

// Whether an operator reads neighbours (a convolution, a gradient), not
// only each element's own value (a mask, a scaling, a sum of such).
bool reads_neighbours(const ExprNode& e) {
  switch (e.kind) {
    case ExprKind::Variable:
    case ExprKind::Constant:
    case ExprKind::MulElemwise:
    case ExprKind::Scale:
    case ExprKind::Add:
    case ExprKind::Sub:
    case ExprKind::Neg:
      break;
    default:
      return true;
  }
  for (const Expr& a : e.args) {
    if (reads_neighbours(*a)) return true;
  }
  return false;
}

// Whether n applies c·I to its one operand (a forward or adjoint of a
// variable scaled, negated or neither), and that c.
bool scaled_identity(const StepNode& n, double* c) {
  if ((n.kind != StepKind::Forward && n.kind != StepKind::Adjoint) || n.args.size() != 1 ||
      (n.kind == StepKind::Forward && n.index != 0) || n.shape != n.args[0]->shape) {
    return false;
  }
  double f = 1;
  const ExprNode* e = n.expr.get();
  while (e && (e->kind == ExprKind::Scale || e->kind == ExprKind::Neg)) {
    f *= e->kind == ExprKind::Scale ? e->scalar : -1;
    e = e->args[0].get();
  }
  if (!e || !e->is_variable()) return false;
  *c = f;
  return true;
}

}  // namespace

StepProgram eliminate_common_subexpressions(const StepProgram& p) {
  // Each node's representative, operands first; candidates by kind and first operand.
  std::unordered_map<const StepNode*, Step> rep;
  std::map<std::pair<int, const StepNode*>, std::vector<Step>> seen;
  auto intern = [&](const Step& node) {
    auto& bucket = seen[{static_cast<int>(node->kind), node->args.empty() ? nullptr : node->args[0].get()}];
    for (const Step& c : bucket) {
      if (same_node(*c, *node)) return c;
    }
    bucket.push_back(node);
    return node;
  };
  for (const Step& n : p.nodes()) {
    Step node = with_args(n, [&](const Step& a) { return rep.at(a.get()); });
    // ‖c·v‖² = c²·‖v‖²: the norm of a scaled identity's result is its operand's norm, which a
    // check often takes already (pc's ‖K x⁺‖² of nonneg(x) applied to x/3, and ‖x⁺‖²): one
    // reduction fewer, and no pass over c·v.
    double c = 1;
    if (node->kind == StepKind::SumSquares && scaled_identity(*node->args[0], &c)) {
      const Step when = is_gated(*node) ? node->args.back() : Step();
      const Step norm = intern(step_reduce(StepKind::SumSquares, node->args[0]->args[0], Step(), when));
      node = step_binary(StepKind::Mul, intern(step_constant(c * c)), norm);
    }
    rep[n.get()] = intern(node);
  }
  StepProgram out;
  out.name = p.name;
  out.unrolled = p.unrolled;
  for (const auto& [name, st] : p.outputs) out.outputs.push_back({name, rep.at(st.get())});
  return out;
}

HoistSplit hoist_invariants(const StepProgram& p) {
  HoistSplit h;
  h.setup.name = (p.name.empty() ? std::string("step") : p.name) + "_setup";
  h.rest.name = p.name;
  h.rest.unrolled = p.unrolled;
  const std::vector<Step> nodes = p.nodes();
  // Invariant: no input or param below. Costly: invariant work more than
  // reading its result (a pass over an array to a scalar, a prox or solve,
  // an operator that reads neighbours; elementwise work on data costs what
  // reading the result would, and a pipeline of its own to compile).
  std::unordered_set<const StepNode*> invariant, costly;
  for (const Step& n : nodes) {
    bool inv = n->kind != StepKind::Input && n->kind != StepKind::Param;
    for (const Step& a : n->args) inv = inv && invariant.count(a.get()) > 0;
    if (!inv) continue;
    invariant.insert(n.get());
    bool c = is_reduction(n->kind) || n->kind == StepKind::Value || n->kind == StepKind::Prox ||
             n->kind == StepKind::CirculantSolve ||
             ((n->kind == StepKind::Forward || n->kind == StepKind::Adjoint) && reads_neighbours(*n->expr));
    for (const Step& a : n->args) c = c || costly.count(a.get()) > 0;
    if (c) costly.insert(n.get());
  }
  std::set<std::string> taken;
  for (const Step& n : p.inputs()) taken.insert(n->name);
  for (const std::string& s : p.params()) taken.insert(s);
  std::unordered_map<const StepNode*, Step> map;
  for (const Step& n : nodes) {
    for (const Step& a : n->args) {
      // Costly work read by a value that varies: computed once.
      if (invariant.count(n.get()) || !costly.count(a.get()) || map.count(a.get())) continue;
      std::string name = "hoisted" + std::to_string(h.setup.outputs.size());
      while (taken.count(name)) name = "_" + name;
      taken.insert(name);
      h.setup.outputs.push_back({name, a});
      map[a.get()] = a->shape.empty() ? step_param(name) : step_input(name, a->shape);
    }
  }
  if (h.setup.outputs.empty()) {
    h.rest = p;
    return h;
  }
  for (const Step& n : nodes) {
    if (map.count(n.get())) continue;
    Step r = with_args(n, [&](const Step& a) {
      auto it = map.find(a.get());
      return it == map.end() ? a : it->second;
    });
    if (r != n) map[n.get()] = r;
  }
  for (const auto& [name, st] : p.outputs) {
    auto it = map.find(st.get());
    h.rest.outputs.push_back({name, it == map.end() ? st : it->second});
  }
  return h;
}

std::string print_step_program(const StepProgram& p) {
  std::ostringstream out;
  out << "step " << (p.name.empty() ? "program" : p.name) << " {\n";
  NameScope scope;
  std::unordered_map<const StepNode*, std::string> names;
  for (const Step& n : p.nodes()) {
    if (n->kind == StepKind::Input) names[n.get()] = n->name;
  }
  for (const Step& n : p.inputs()) {
    scope.unique(n->name);
    out << "  input " << n->name << ": " << shape_to_string(n->shape) << "\n";
  }
  for (const std::string& s : p.params()) out << "  param " << s << "\n";
  // The problem's leaves by one naming for the whole program.
  LeafNames leaves;
  for (const Step& n : p.nodes()) {
    if (n->expr) leaves.add(n->expr);
    for (const Expr& v : n->vars) leaves.add(v);
  }
  auto ref = [&](const Step& s) -> std::string {
    if (s->kind == StepKind::Constant) return format_double(s->value);
    if (s->kind == StepKind::Param) return s->name;
    return "%" + names.at(s.get());
  };
  for (const Step& n : p.nodes()) {
    if (n->kind == StepKind::Input || n->kind == StepKind::Param || n->kind == StepKind::Constant) continue;
    std::string name = scope.unique("", "t");
    names[n.get()] = name;
    out << "  %" << name << " = " << to_string(n->kind);
    switch (n->kind) {
      case StepKind::Data: out << "[" << leaves.print(n->expr) << "]"; break;
      case StepKind::Forward:
        out << (n->index ? "[affine " : "[") << leaves.print(n->expr) << "]";
        break;
      case StepKind::Adjoint:
        out << "[" << leaves.print(n->expr) << ", d/" << leaves.print(n->vars[static_cast<size_t>(n->index)]) << "]";
        break;
      case StepKind::Prox:
      case StepKind::Value: {
        FunctionTerm t = *n->term;
        out << "[" << term_function_name(t) << " alpha=" << format_double(t.alpha) << " beta=" << format_double(t.beta)
            << "]";
        break;
      }
      case StepKind::CirculantSolve: out << "[" << leaves.print(n->expr) << "]"; break;
      case StepKind::Fill: out << "[" << format_double(n->value) << "]"; break;
      default: break;
    }
    out << "(";
    const size_t operands = n->args.size() - (is_gated(*n) ? 1 : 0);
    for (size_t i = 0; i < operands; ++i) out << (i ? ", " : "") << ref(n->args[i]);
    out << ") : " << shape_to_string(n->shape);
    if (is_gated(*n)) out << " when " << ref(n->args.back());
    out << "\n";
  }
  for (const auto& [name, s] : p.outputs) out << "  output " << name << " = " << ref(s) << "\n";
  out << "}\n";
  return out.str();
}

}  // namespace proxc::internal

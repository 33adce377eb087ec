// scale: normalises the stacked psi operator so that ||K|| ≤ 1 (ProxImaL's scaling).
//
// With Knorm a bound of ||K|| for K = vstack(psi operands) — ProxImaL's upper bound
// propagated through the operator graph by default, estimated (Lanczos iteration) on request —
// the problem is rewritten over s = sqrt(Knorm)·x:
// - each psi operand K_i becomes (1/Knorm)·K_i, its beta is multiplied and its c
//   multiplied by sqrt(Knorm), its gamma by Knorm;
// - each omega term's beta and c are divided by sqrt(Knorm), its gamma by Knorm;
// - the problem records knorm, so results come back in the user's units as
//   x = s / sqrt(Knorm) (Problem::variable_scale()).
// Guarantees: the objective at s equals the original objective at x; the
// stacked psi operator has norm at most 1. Needs the split pass first; an
// array-valued c becomes the constant expression `sqrt(Knorm) * c` (or
// `c / sqrt(Knorm)`), folded (emulate/fold.h).

#include <cmath>

#include "emulate/fold.h"
#include "ir/printer.h"
#include "ir/traverse.h"
#include "passes/pass.h"
#include "support/error.h"

namespace proxc::internal {

namespace {
// True when a constant enters `e` as an offset of a sum (an affine, not linear,
// operand): a sum or difference that depends on a variable (or is `e`) with a
// constant operand.
bool has_offset(const Expr& e) {
  bool found = false;
  for_each_node({e}, [&](const Expr& n) {
    if ((n == e || n->has_variable) && (n->kind == ExprKind::Add || n->kind == ExprKind::Sub)) {
      for (const Expr& a : n->args) found = found || !a->has_variable;
    }
  });
  return found;
}
}  // namespace

Problem scale_pass(const Problem& p, const PassOptions& o) {
  user_assert(p.knorm == 0) << "scale: the problem is already scaled (knorm = " << p.knorm << ")";
  std::vector<Expr> psi;
  for (const FunctionTerm& t : p.terms) {
    user_assert(t.role != TermRole::Unassigned) << "scale: run the split pass first (terms have no role)";
    if (t.role == TermRole::Psi) psi.push_back(t.arg);
  }
  Problem out = p;
  double knorm = 1;
  if (!psi.empty()) {
    Expr k = psi.size() == 1 ? psi[0] : make_vstack(psi);
    internal_assert(o.operator_norm) << "scale: no operator-norm oracle (PassOptions::operator_norm)";
    knorm = o.operator_norm(k);
    // Where: the operands of the terms K stacks, as the problem prints them.
    auto where = [&] {
      std::string s;
      for (const FunctionTerm& t : p.terms) {
        if (t.role == TermRole::Psi) s += std::string(s.empty() ? "" : ", ") + to_string(t.kind) + "(" + print_expression(t.arg) + ")";
      }
      if (s.size() > 300) s = s.substr(0, 300) + "...";
      return " (K stacks the operands of " + s + ")";
    };
    user_assert(std::isfinite(knorm) && knorm > 0)
        << "scale: ||K|| is " << knorm << "; nothing to normalise by" << where();
    user_assert(knorm >= kMinKnorm && knorm <= kMaxKnorm)
        << "scale: ||K|| is " << knorm << ", outside [" << kMinKnorm << ", " << kMaxKnorm
        << "], which float32 iterations can carry; rescale the problem's data or operators" << where();
  }
  const double root = std::sqrt(knorm);
  for (FunctionTerm& t : out.terms) {
    user_assert(!has_offset(t.arg)) << "scale: the operand of " << to_string(t.kind)
                                    << " keeps a constant offset that absorb could not move into "
                                    << "its parameters (" << print_expression(t.arg)
                                    << "): run the absorb pass first (a solve always runs it "
                                    << "for offsets), or write the offset as the function's b";
    const bool psi_term = t.role == TermRole::Psi;
    if (psi_term) t.arg = make_scale(1.0 / knorm, t.arg);
    t.beta = psi_term ? t.beta * root : t.beta / root;
    const double c_factor = psi_term ? root : 1 / root;
    if (!t.c.is_array()) {
      t.c = Param::of(t.c.scalar * c_factor);
    } else if (c_factor != 1) {
      t.c = Param::of(fold_constant(make_scale(c_factor, t.c.array)));
    }
    t.gamma = psi_term ? t.gamma * knorm : t.gamma / knorm;
    t = make_term(t);
  }
  out.knorm = knorm;
  out.passes_run.push_back("scale");
  return out;
}

}  // namespace proxc::internal

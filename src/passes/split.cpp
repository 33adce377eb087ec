// split: the partition of the terms into omega and psi for one solver.
//
// Guarantees afterwards: every term has a role and the problem records the
// solver (ProxImaL's rules, docs/passes.md):
// - pc, ladmm, hqs: in a problem with one variable and two terms or more, the
//   first least_squares term is omega (its prox with respect to x is a direct
//   solve: elementwise for an identity or mul_elemwise operator, in the Fourier
//   domain for conv); every other term is psi, and other least_squares terms
//   become sum_squares. A lone term is psi, as in ProxImaL (which partitions
//   only problems of several functions): K is never empty, which would leave
//   ladmm's residuals zero from the first iteration;
// - admm: every term is psi (the x-update solves the least-squares problem over
//   all psi operators stacked), least_squares terms become sum_squares.
// The objective is unchanged (least_squares and sum_squares have the same value).

#include "passes/pass.h"
#include "proxc/kinds.h"
#include "support/error.h"

namespace proxc::internal {

const std::vector<std::string>& known_solvers() {
  static const std::vector<std::string> s = kind_names<SolverKind>();  // the one table: proxc/kinds.h
  return s;
}

void check_solver_name(const std::string& s) {
  SolverKind kind{};
  if (from_string(s, &kind)) return;
  std::string all;
  for (const std::string& k : known_solvers()) all += (all.empty() ? "" : ", ") + k;
  user_error << "unknown solver '" << s << "' (known: " << all << ")";
}

Problem split_pass(const Problem& p, const PassOptions& o) {
  check_solver_name(o.solver);
  Problem out = p;
  const bool may_have_omega = o.solver != "admm" && out.variables().size() == 1 && out.terms.size() > 1;
  bool have_omega = false;
  for (FunctionTerm& t : out.terms) {
    if (t.kind == FunctionKind::LeastSquares && may_have_omega && !have_omega) {
      t.role = TermRole::Omega;
      have_omega = true;
    } else {
      if (t.kind == FunctionKind::LeastSquares) t.kind = FunctionKind::SumSquares;
      t.role = TermRole::Psi;
    }
  }
  out.solver = o.solver;
  out.passes_run.push_back("split");
  return out;
}

}  // namespace proxc::internal

#include "ir/problem.h"

#include "ir/traverse.h"

#include <cmath>
#include <unordered_set>

#include "support/error.h"

namespace proxc::internal {


std::vector<Expr> topo_order(const Problem& p) {
  std::vector<Expr> out;
  for_each_node(problem_roots(p), [&](const Expr& e) { out.push_back(e); });
  return out;
}

double Problem::variable_scale() const { return knorm > 0 ? std::sqrt(knorm) : 1.0; }

std::vector<Expr> Problem::variables() const {
  std::vector<Expr> vars;
  for (const Expr& e : topo_order(*this)) {
    if (e->is_variable()) vars.push_back(e);
  }
  return vars;
}

void verify(const Problem& p) {
  user_assert(!p.terms.empty()) << "the problem has no terms to minimize";
  for (const FunctionTerm& t : p.terms) {
    internal_assert(t.arg) << "a term without an operand";
  }
  user_assert(!p.variables().empty()) << "the problem has no variable";
  bool scaled = false, split = false;
  for (const std::string& s : p.passes_run) {
    scaled = scaled || s == "scale";
    split = split || s == "split";
  }
  user_assert(scaled == (p.knorm > 0)) << (scaled ? "the scale pass has run but no knorm is recorded"
                                                  : "knorm is recorded but the scale pass has not run");
  user_assert(!scaled || (p.knorm >= kMinKnorm && p.knorm <= kMaxKnorm))
      << "knorm " << p.knorm << " is outside [" << kMinKnorm << ", " << kMaxKnorm
      << "]: proxc iterates in float32 and brings results back through 1/sqrt(knorm)";
  user_assert(split == !p.solver.empty()) << (split ? "the split pass has run but no solver is recorded"
                                                    : "a solver is recorded but the split pass has not run");
}

}  // namespace proxc::internal

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
}

}  // namespace proxc::internal

#include "ir/problem.h"

#include <cmath>
#include <unordered_set>

#include "support/error.h"

namespace proxc::internal {

namespace {
// Iterative post-order so that deep expressions cannot overflow the stack.
void post_order(const Expr& root, std::unordered_set<const ExprNode*>* seen, std::vector<Expr>* out) {
  if (!root || seen->count(root.get())) return;
  std::vector<std::pair<Expr, size_t>> stack = {{root, 0}};
  seen->insert(root.get());
  while (!stack.empty()) {
    auto& [n, next] = stack.back();
    if (next < n->args.size()) {
      Expr child = n->args[next++];
      if (seen->insert(child.get()).second) stack.push_back({child, 0});
    } else {
      out->push_back(n);
      stack.pop_back();
    }
  }
}
}  // namespace

std::vector<Expr> topo_order(const Problem& p) {
  std::unordered_set<const ExprNode*> seen;
  std::vector<Expr> out;
  for (const FunctionTerm& t : p.terms) {
    post_order(t.arg, &seen, &out);
    for (const Param* q : {&t.b, &t.c, &t.lower, &t.upper}) post_order(q->array, &seen, &out);
    post_order(t.counts, &seen, &out);
  }
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

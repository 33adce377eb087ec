/// \file
/// Reverse-mode evaluation of Kᵀ y, written once for every backend: the
/// emulator instantiates it with tensors, the Halide lowering with Funcs.
/// The driver walks K's linear part from the output back to the variables,
/// sums the contributions that reach a node (in the order they arrive), and
/// asks the backend for one node's adjoint at a time.
#pragma once

#include <functional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/traverse.h"

namespace proxc::internal {

/// Kᵀ y for every variable of K that y reaches.
/// - node_adjoint(n, g, push): the adjoint of operator node n applied to g,
///   the sum of what reached n; it calls push(operand, value) for each of
///   n's operands that depends on a variable (push ignores the others).
/// - sum(values, n): the sum of two or more contributions to node n.
/// Variables that y does not reach are absent from the result.
template <typename Value>
std::unordered_map<const ExprNode*, Value> reverse_mode(
    const Expr& k, Value y,
    const std::function<void(const ExprNode* n, Value g,
                             const std::function<void(const Expr&, Value)>& push)>& node_adjoint,
    const std::function<Value(std::vector<Value> values, const ExprNode* n)>& sum) {
  std::unordered_map<const ExprNode*, std::vector<Value>> bar;
  bar[k.get()].push_back(std::move(y));
  std::function<void(const Expr&, Value)> push = [&](const Expr& e, Value v) {
    if (e->has_variable) bar[e.get()].push_back(std::move(v));
  };
  std::unordered_map<const ExprNode*, Value> out;
  std::vector<const ExprNode*> order = linear_order(k);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    auto found = bar.find(*it);
    if (found == bar.end()) continue;  // nothing flows back through this node
    std::vector<Value> parts = std::move(found->second);
    bar.erase(found);
    Value g = parts.size() == 1 ? std::move(parts[0]) : sum(std::move(parts), *it);
    if ((*it)->is_variable()) {
      out.emplace(*it, std::move(g));
    } else {
      node_adjoint(*it, std::move(g), push);
    }
  }
  return out;
}

}  // namespace proxc::internal

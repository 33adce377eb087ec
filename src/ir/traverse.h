/// \file
/// The DAG walks of the IR, written once: a post-order visit of every node
/// reachable from some roots (each node once, operands first, without
/// recursion, so that no depth can overflow the stack), and a memoized
/// mutator that rebuilds a DAG bottom-up through the checking make
/// functions. Printers, passes and the API use these instead of walks of
/// their own.
#pragma once

#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/problem.h"

namespace proxc::internal {

/// Calls visit(e) once for every node reachable from the roots (null roots
/// skipped), operands before their users, the roots' DAGs in order. Nodes in
/// *seen are skipped, and every visited node is added to it. With `follow`,
/// only the operands it accepts are entered.
void for_each_node(const std::vector<Expr>& roots, const std::function<void(const Expr&)>& visit,
                   std::unordered_set<const ExprNode*>* seen = nullptr,
                   const std::function<bool(const ExprNode&)>& follow = nullptr);

/// The nodes of K that depend on a variable, operands first, each once: the
/// linear part that a forward or adjoint evaluation walks.
std::vector<const ExprNode*> linear_order(const Expr& k);

/// The roots of a problem in canonical order: each term's operand, then its
/// parameter constants (b, c, lower, upper) and its counts.
std::vector<Expr> problem_roots(const Problem& p);

/// Rebuilds DAGs bottom-up, each node once (memoized by identity; the
/// originals are kept, so an address is never reused for another node).
/// rewrite(e, args) gives a node's replacement from its operands' ones; the
/// default is `e` over the new operands (with_args: `e` itself when none
/// changed).
class ExprMutator {
 public:
  using Rewrite = std::function<Expr(const Expr& e, std::vector<Expr> args)>;
  explicit ExprMutator(Rewrite rewrite = nullptr) : rewrite_(std::move(rewrite)) {}

  /// The replacement of `e` (null for null).
  Expr operator()(const Expr& e);

  /// `p` with every operand and parameter replaced, each term checked again
  /// (make_term: new data must keep the term's rules).
  Problem operator()(const Problem& p);

 private:
  Rewrite rewrite_;
  // Each visited node (kept alive) and its replacement.
  std::unordered_map<const ExprNode*, std::pair<Expr, Expr>> memo_;
};

/// `p` with every derived constant unfolded (unfold_constants, expr.h) in
/// its operands and parameters: the problem as printers write it. The terms
/// are not checked again (a parameter may then be a constant expression).
Problem unfold_constants(const Problem& p);

/// `p` with the node `from` replaced by `to` everywhere.
Problem replace_node(const Problem& p, const Expr& from, const Expr& to);

}  // namespace proxc::internal

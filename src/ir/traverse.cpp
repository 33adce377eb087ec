// The IR's DAG walks (traverse.h).
#include "ir/traverse.h"

#include <utility>

namespace proxc::internal {

void for_each_node(const std::vector<Expr>& roots, const std::function<void(const Expr&)>& visit,
                   std::unordered_set<const ExprNode*>* seen_in,
                   const std::function<bool(const ExprNode&)>& follow) {
  std::unordered_set<const ExprNode*> own;
  std::unordered_set<const ExprNode*>& seen = seen_in ? *seen_in : own;
  for (const Expr& root : roots) {
    if (!root || !seen.insert(root.get()).second) continue;
    std::vector<std::pair<Expr, size_t>> stack = {{root, 0}};
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next < n->args.size()) {
        Expr child = n->args[next++];
        if (follow && !follow(*child)) continue;
        if (seen.insert(child.get()).second) stack.push_back({child, 0});
      } else {
        Expr done = n;
        stack.pop_back();
        visit(done);
      }
    }
  }
}

std::vector<const ExprNode*> linear_order(const Expr& k) {
  std::vector<const ExprNode*> out;
  for_each_node({k}, [&](const Expr& e) { out.push_back(e.get()); }, nullptr,
                [](const ExprNode& n) { return n.has_variable; });
  return out;
}

std::vector<Expr> problem_roots(const Problem& p) {
  std::vector<Expr> roots;
  for (const FunctionTerm& t : p.terms) {
    roots.push_back(t.arg);
    for (const Param* q : {&t.b, &t.c, &t.lower, &t.upper}) roots.push_back(q->array);
    roots.push_back(t.counts);
    roots.push_back(t.weight);
  }
  return roots;
}

Expr ExprMutator::operator()(const Expr& root) {
  if (!root) return root;
  // Nodes rebuilt by an earlier call are not walked again. (The walk's own
  // set: a rewrite that throws leaves memo_ as it was, consistent.)
  std::unordered_set<const ExprNode*> seen;
  for (const auto& entry : memo_) seen.insert(entry.first);
  for_each_node(
      {root},
      [&](const Expr& e) {
        std::vector<Expr> args;
        args.reserve(e->args.size());
        for (const Expr& a : e->args) args.push_back(memo_.at(a.get()).second);
        Expr out = rewrite_ ? rewrite_(e, std::move(args)) : with_args(e, std::move(args));
        memo_.emplace(e.get(), std::make_pair(e, std::move(out)));
      },
      &seen);
  return memo_.at(root.get()).second;
}

Problem ExprMutator::operator()(const Problem& p) {
  Problem q = p;
  for (FunctionTerm& t : q.terms) {
    t.arg = (*this)(t.arg);
    for (Param* prm : {&t.b, &t.c, &t.lower, &t.upper}) prm->array = (*this)(prm->array);
    t.counts = (*this)(t.counts);
    t.weight = (*this)(t.weight);
    t = make_term(t);
  }
  return q;
}

namespace {
// Unfolds through one mutator, so that a constant expression shared by
// several derived constants is printed once.
class Unfolder {
 public:
  Unfolder()
      : m_([this](const Expr& n, std::vector<Expr> args) -> Expr {
          if (n->is_constant() && n->constant->source.type == ConstantSource::Type::Derived) {
            Expr u = m_(n->constant->source.expr);  // re-entrant: the walk keeps its own stack
            return n->name_hint.empty() ? u : with_name_hint(u, n->name_hint);
          }
          return with_args(n, std::move(args));
        }) {}
  Expr operator()(const Expr& e) { return m_(e); }

 private:
  ExprMutator m_;
};
}  // namespace

Expr unfold_constants(const Expr& e) { return Unfolder()(e); }

Problem unfold_constants(const Problem& p) {
  Problem q = p;
  Unfolder m;
  for (FunctionTerm& t : q.terms) {
    t.arg = m(t.arg);
    for (Param* prm : {&t.b, &t.c, &t.lower, &t.upper}) prm->array = m(prm->array);
    t.counts = m(t.counts);
    t.weight = m(t.weight);
  }
  return q;
}

Problem replace_node(const Problem& p, const Expr& from, const Expr& to) {
  ExprMutator m(
      [&](const Expr& e, std::vector<Expr> args) { return e == from ? to : with_args(e, std::move(args)); });
  return m(p);
}

}  // namespace proxc::internal

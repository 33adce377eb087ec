// proxc::evaluate and its kin (proxc/problem.h): an expression's value, its
// linear part applied forward and adjoint, its operator norm, and a function
// term's value and prox, on the emulator (double precision): ProxImaL's
// `.value`, `forward`, `adjoint`, `est_CompGraph_norm`, `prox` and `eval`.
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "api/access.h"
#include "check/check.h"
#include "emulate/emulate_backend.h"
#include "emulate/linop.h"
#include "emulate/prox.h"
#include "emulate/tensor.h"
#include "ir/traverse.h"
#include "support/error.h"

namespace proxc {

namespace {

using internal::Access;

// The values by variable node, each checked against its variable, and every
// variable the roots read given one.
std::map<const internal::ExprNode*, Array> values_by_node(const std::vector<internal::Expr>& roots,
                                                          const std::vector<std::pair<Expr, Array>>& values,
                                                          const char* what) {
  std::map<const internal::ExprNode*, Array> out;
  for (const auto& [v, a] : values) {
    user_assert(v.defined() && v.is_variable())
        << what << ": a value is given for something that is not a variable";
    user_assert(v.shape() == a.shape())
        << what << ": variable '" << v.name() << "' has shape " << shape_to_string(v.shape())
        << ", its value " << shape_to_string(a.shape());
    out[Access::node(v).get()] = a;
  }
  internal::for_each_node(roots, [&](const internal::Expr& n) {
    user_assert(!n->is_variable() || out.count(n.get()))
        << what << ": no value for variable '" << n->name_hint << "' " << shape_to_string(n->shape);
  });
  return out;
}

// The one function term of `f`, for the functions of one term.
const internal::FunctionTerm& one_term(const Term& f, const char* what) {
  const auto& terms = Access::terms(f);
  user_assert(terms.size() == 1) << what << ": expects one function term, got " << terms.size();
  return terms[0];
}

// `v` as the operand of term t: its shape checked.
internal::emulate::Tensor term_operand(const internal::FunctionTerm& t, const Array& v, const char* what) {
  user_assert(v.shape() == t.arg->shape)
      << what << ": the function's operand has shape " << shape_to_string(t.arg->shape) << ", the value "
      << shape_to_string(v.shape());
  return internal::emulate::Tensor::from(Access::array(v));
}

// The expression `root` applied to the variables' values (with or without
// its constant offsets), on the emulator.
Array apply_forward(const internal::Expr& root, const std::map<const internal::ExprNode*, Array>& by_node,
                    bool affine) {
  std::map<const internal::ExprNode*, internal::emulate::Tensor> tensors;
  std::map<const internal::ExprNode*, const internal::emulate::Tensor*> vars;
  for (const auto& [n, a] : by_node) {
    tensors[n] = internal::emulate::Tensor::from(Access::array(a));
    vars[n] = &tensors[n];
  }
  return Access::make_array(internal::emulate::forward(root, vars, affine).to_array());
}

}  // namespace

Array evaluate(const Expr& e, const std::vector<std::pair<Expr, Array>>& values) {
  user_assert(e.defined()) << "evaluate: no expression";
  const internal::Expr& root = Access::node(e);
  const auto by_node = values_by_node({root}, values, "evaluate");
  if (!root->has_variable) {  // a constant expression: one folded constant leaf (emulate/fold.h)
    internal_assert(root->kind == internal::ExprKind::Constant) << "evaluate: an unfolded constant expression";
    return Access::make_array(
        internal::emulate::constant_tensor(root.get(), internal::emulate::own_constant_data).to_array());
  }
  return apply_forward(root, by_node, /*affine=*/true);
}

std::vector<double> evaluate(const Term& terms, const std::vector<std::pair<Expr, Array>>& values) {
  user_assert(terms.size() > 0) << "evaluate: no function terms";
  internal::Problem p;
  p.terms = Access::terms(terms);
  const auto by_node = values_by_node(internal::problem_roots(p), values, "evaluate");
  std::map<const internal::ExprNode*, const internal::Array*> x;
  for (const auto& [n, a] : by_node) x[n] = &Access::array(a);
  auto emulator = internal::make_emulate_backend();
  return internal::evaluate_objective(*emulator, p, x).terms;
}

Array forward(const Expr& e, const std::vector<std::pair<Expr, Array>>& values) {
  user_assert(e.defined()) << "forward: no expression";
  const internal::Expr& root = Access::node(e);
  const auto by_node = values_by_node({root}, values, "forward");
  if (!root->has_variable) return Array(root->shape);  // a constant's linear part is 0
  return apply_forward(root, by_node, /*affine=*/false);
}

std::vector<Array> adjoint(const Expr& e, const Array& y, const std::vector<Expr>& variables) {
  user_assert(e.defined()) << "adjoint: no expression";
  const internal::Expr& root = Access::node(e);
  user_assert(y.shape() == root->shape)
      << "adjoint: the expression has shape " << shape_to_string(root->shape) << ", y "
      << shape_to_string(y.shape());
  for (const Expr& v : variables) {
    user_assert(v.defined() && v.is_variable())
        << "adjoint: a part is asked for something that is not a variable";
  }
  std::map<const internal::ExprNode*, internal::emulate::Tensor> parts;
  if (root->has_variable)
    parts = internal::emulate::adjoint(root, internal::emulate::Tensor::from(Access::array(y)));
  std::vector<Array> out;
  for (const Expr& v : variables) {
    auto it = parts.find(Access::node(v).get());
    out.push_back(it == parts.end() ? Array(v.shape()) : Access::make_array(it->second.to_array()));
  }
  return out;
}

double operator_norm(const Expr& e, NormKind kind, double tol) {
  user_assert(e.defined()) << "operator_norm: no expression";
  user_assert(std::isfinite(tol) && tol > 0)
      << "operator_norm: the tolerance must be a number > 0, got " << tol;
  const internal::Expr& root = Access::node(e);
  if (!root->has_variable) return 0;
  if (kind == NormKind::Bound) return internal::norm_bound(root);
  auto emulator = internal::make_emulate_backend();
  return internal::estimate_norm(*emulator, root, 100, 2, tol).value;
}

Array prox(const Term& f, double rho, const Array& v) {
  const internal::FunctionTerm& t = one_term(f, "prox");
  user_assert(std::isfinite(rho) && rho > 0) << "prox: rho must be a number > 0, got " << rho;
  return Access::make_array(internal::emulate::prox(t, term_operand(t, v, "prox"), rho).to_array());
}

double evaluate_at(const Term& f, const Array& v) {
  const internal::FunctionTerm& t = one_term(f, "evaluate_at");
  return internal::emulate::value(t, term_operand(t, v, "evaluate_at"));
}

}  // namespace proxc

// proxc::evaluate (proxc/problem.h): an expression's value and each function
// term's value at given values of the variables, on the emulator (double
// precision), for ProxImaL's `.value` of operators and functions.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "api/access.h"
#include "check/check.h"
#include "emulate/emulate_backend.h"
#include "emulate/linop.h"
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
  std::map<const internal::ExprNode*, internal::emulate::Tensor> tensors;
  std::map<const internal::ExprNode*, const internal::emulate::Tensor*> vars;
  for (const auto& [n, a] : by_node) {
    tensors[n] = internal::emulate::Tensor::from(Access::array(a));
    vars[n] = &tensors[n];
  }
  return Access::make_array(internal::emulate::forward(root, vars, /*affine=*/true).to_array());
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

}  // namespace proxc

// Constant folding (fold.h).
#include "emulate/fold.h"

#include <cmath>
#include <map>

#include "emulate/linop.h"
#include "ir/traverse.h"
#include "support/error.h"

namespace proxc::internal {

namespace {

double scalar_of(const Expr& e) { return emulate::constant_at(e.get(), e->constant->array, 0); }

// The value of a rank-0 constant expression over scalar leaves.
double scalar_value(const Expr& n) {
  const auto& a = n->args;
  switch (n->kind) {
    case ExprKind::Add: return scalar_of(a[0]) + scalar_of(a[1]);
    case ExprKind::Sub: return scalar_of(a[0]) - scalar_of(a[1]);
    case ExprKind::Neg: return -scalar_of(a[0]);
    case ExprKind::Scale: return n->scalar * scalar_of(a[0]);
    default: break;
  }
  user_error << to_string(n->kind) << ": does not apply to a scalar";
  return 0;
}

// `n` (a constant expression whose operands are leaves) as one constant.
Expr fold_node(const Expr& n) {
  if (n->rank() == 0) {
    Expr s = make_scalar_constant(scalar_value(n));
    return s;
  }
  // Evaluate n over its linear operands as if they were variables (rank-0
  // operands stay: they broadcast), by the reference forward.
  std::vector<Expr> args = n->args;
  std::vector<emulate::Tensor> values;
  std::vector<Expr> vars;
  std::map<const ExprNode*, const emulate::Tensor*> bind;
  const std::vector<size_t> positions = linear_positions(*n);
  values.reserve(positions.size());
  for (size_t i : positions) {
    if (args[i]->rank() == 0) continue;
    Expr v = make_variable(args[i]->shape, "folded");
    values.push_back(emulate::constant_tensor(args[i].get(), emulate::own_constant_data));
    vars.push_back(v);
    args[i] = v;
  }
  for (size_t i = 0; i < vars.size(); ++i) bind[vars[i].get()] = &values[i];
  Expr over_vars = with_args(n, args);
  auto data = std::make_shared<ConstantData>();
  emulate::Tensor value = emulate::forward(over_vars, bind, true);
  data->array = value.to_array();
  bool rounded = false;
  for (size_t i = 0; i < data->array.data.size(); ++i) {
    const float v = data->array.data[i];
    user_assert(std::isfinite(v)) << to_string(n->kind)
                                  << ": the value of this constant expression is not finite in float32 (found " << v
                                  << ")";
    rounded = rounded || static_cast<double>(v) != value.data[i];
  }
  // The double values are kept only where float32 rounded them (a sign, a
  // copy or a power-of-two scale of an input is exact): the widened floats
  // are the same values, at a third of the memory.
  if (rounded) data->exact = std::move(value.data);
  data->source.type = ConstantSource::Type::Derived;
  data->source.expr = n;
  return make_constant(std::move(data), n->name_hint);
}

Expr fold_rewrite(const Expr& e, std::vector<Expr> args) {
  Expr n = with_args(e, std::move(args));
  if (n->has_variable || n->is_constant() || n->is_variable()) return n;
  return fold_node(n);
}

}  // namespace

Expr fold_constant(const Expr& e) {
  if (!e || e->has_variable || e->is_constant()) return e;
  return fold_constants(e);
}

Expr fold_constants(const Expr& e) { return ExprMutator(fold_rewrite)(e); }

Problem fold_constants(const Problem& p) { return ExprMutator(fold_rewrite)(p); }

}  // namespace proxc::internal

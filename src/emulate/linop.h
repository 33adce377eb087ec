/// \file
/// Forward and adjoint of problem expressions, by plain loops in double
/// precision, exactly as docs/semantics.md defines each operator (conv as a
/// direct circular sum). This is the ground truth the other backends are
/// tested against.
#pragma once

#include <functional>
#include <map>
#include <vector>

#include "emulate/tensor.h"
#include "ir/expr.h"

namespace proxc::internal::emulate {

/// Supplies the values of a constant node (its own data, or a replacement).
using ConstantLookup = std::function<const Array&(const ExprNode*)>;

/// The constant's own values.
const Array& own_constant_data(const ExprNode* c);

/// The values of constant `c` in double as `data` supplies them: a derived
/// constant's exact values when `data` gives its own array, else the float
/// array widened.
Tensor constant_tensor(const ExprNode* c, const ConstantLookup& data);

/// Value i of constant `c` as constant_tensor gives it, without a copy
/// (`looked_up` is data(c); a rank-0 constant broadcasts).
double constant_at(const ExprNode* c, const Array& looked_up, size_t i);

/// For tests of the checkers: the adjoint of this operator kind is computed
/// wrongly (scaled by 1 + 1e-3), as a bug would. Off by default.
struct EmulateDebug {
  bool break_adjoint = false;
  ExprKind broken_kind = ExprKind::Grad;
};

/// uneven_subsample node n with indices idx: for each output entry, the
/// flat index in n's operand it reads, or -1 where it reads outside.
std::vector<int64_t> uneven_sources(const ExprNode* n, const Array& idx);

/// K applied to the variables' values (`vars`, one per variable node of K).
/// With `affine`, constant offsets in sums are kept (K x − b); without, the
/// linear part only.
Tensor forward(const Expr& k, const std::map<const ExprNode*, const Tensor*>& vars, bool affine,
               const ConstantLookup& data = own_constant_data);

/// Kᵀ y for the linear part of K: one tensor per variable of K.
std::map<const ExprNode*, Tensor> adjoint(const Expr& k, const Tensor& y,
                                          const ConstantLookup& data = own_constant_data,
                                          const EmulateDebug& debug = {});

}  // namespace proxc::internal::emulate

/// \file
/// Proximal function terms of the problem IR.
///
/// Every term has the form
///
///     F(x) = alpha · f(beta · K x − b) + <c, K x> + gamma · ||K x||² + d
///
/// where `K x` is the term's operand (an affine expression) and f is one of the
/// kinds below (exact definitions in docs/semantics.md). Defaults: alpha = 1,
/// beta = 1, b = 0, c = 0, gamma = 0, d = 0; alpha ≥ 0, gamma ≥ 0, beta ≠ 0;
/// b and c are scalars or constants of the operand's shape. `λ * F` multiplies
/// alpha by λ > 0. sum_entries honours alpha (ProxImaL ignores it; see
/// docs/semantics.md). A prox function of the user's (UserProx,
/// include/proxc/prox_fn.h) is written by its registered name,
/// `patch_NLM(x, sigma_scale=4)`; its row's keyword "prox_fn" names the kind
/// in JSON only. least_squares has the value of sum_squares; it marks
/// a data term whose operator (identity, mul_elemwise, conv, scalings of
/// them) has a diagonal or circulant Gram matrix, so that a solver can take
/// its prox with respect to the variable by a direct solve (absorb pass).
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "ir/expr.h"

namespace proxc::internal {

/// The one table of prox-function kinds. Each row is
///   X(EnumName, keyword, usage, latex, slots...)
/// - usage: shown in an arity error ("" for the common form
///   `f(x, alpha=..., beta=..., b=..., c=..., gamma=..., d=...)`);
/// - latex: the function's LaTeX form, `#0` its argument (β·Kx − b) and `#i`
///   its slot i (ir/latex.cpp);
/// - slots: the parameters beyond alpha, beta, b, c, gamma and d, each
///   PROXC_TERM_SLOT(role, key, what, missing): its role (TermSlotRole in
///   ir/operators.h), its keyword and JSON field, how messages name it, and
///   the message when a required one is left out.
/// The enum, the parser, the printer, JSON, LaTeX and dot read this table.
#define PROXC_FOR_EACH_FUNCTION_KIND(X)                                                                      \
  X(SumSquares, "sum_squares", "", "\\left\\| #0 \\right\\|_2^2", )                                          \
  X(Norm1, "norm1", "", "\\left\\| #0 \\right\\|_1", )                                                     \
  X(GroupNorm1, "group_norm1", "group_norm1(x, [axes])", "\\left\\| #0 \\right\\|_{2,1;\\,[#1]}",             \
    PROXC_TERM_SLOT(Axes, "axes", "the axes", "group_norm1 needs the group axes: group_norm1(grad(x), [2])")) \
  X(Nonneg, "nonneg", "", "\\iota_{\\geq 0}\\left(#0\\right)", )                                              \
  X(PoissonNorm, "poisson_norm", "poisson_norm(x, counts)", "\\mathrm{Poisson}\\left(#0;\\, #1\\right)",       \
    PROXC_TERM_SLOT(Counts, "counts", "counts", "poisson_norm needs the counts: poisson_norm(x, counts)"))   \
  X(SumEntries, "sum_entries", "", "\\mathbf{1}^\\top\\left(#0\\right)", )                                   \
  X(Box, "box", "box(x, lower=0, upper=1)", "\\iota_{[#1,\\, #2]}\\left(#0\\right)",                           \
    PROXC_TERM_SLOT(Lower, "lower", "lower", ""), PROXC_TERM_SLOT(Upper, "upper", "upper", ""))             \
  X(WeightedNorm1, "weighted_norm1", "weighted_norm1(x, w)", "\\left\\| #1 \\odot \\left(#0\\right) \\right\\|_1",            \
    PROXC_TERM_SLOT(Weight, "weight", "the weight", "weighted_norm1 needs the weight: weighted_norm1(x, w)"))   \
  X(WeightedSumSquares, "weighted_sum_squares", "weighted_sum_squares(x, w)",                                 \
    "\\left\\| #1 \\odot \\left(#0\\right) \\right\\|_2^2",                                                                  \
    PROXC_TERM_SLOT(Weight, "weight", "the weight",                                                          \
                    "weighted_sum_squares needs the weight: weighted_sum_squares(x, w)"))                    \
  X(WeightedGroupNorm1, "weighted_group_norm1", "weighted_group_norm1(x, [axes], w)",                        \
    "\\left\\| #2 \\odot \\left(#0\\right) \\right\\|_{2,1;\\,[#1]}",                                                        \
    PROXC_TERM_SLOT(Axes, "axes", "the axes",                                                                \
                    "weighted_group_norm1 needs the group axes: weighted_group_norm1(grad(x), [2], w)"),     \
    PROXC_TERM_SLOT(Weight, "weight", "the weight",                                                          \
                    "weighted_group_norm1 needs the weight: weighted_group_norm1(grad(x), [2], w)"))         \
  X(WeightedNonneg, "weighted_nonneg", "weighted_nonneg(x, w)", "\\iota_{\\geq 0}\\left(#1 \\odot \\left(#0\\right)\\right)",     \
    PROXC_TERM_SLOT(Weight, "weight", "the weight", "weighted_nonneg needs the weight: weighted_nonneg(x, w)")) \
  X(MaskedNonneg, "masked_nonneg", "masked_nonneg(x, mask)", "\\iota_{\\geq 0;\\,#1}\\left(#0\\right)",           \
    PROXC_TERM_SLOT(Weight, "mask", "the mask", "masked_nonneg needs the mask: masked_nonneg(x, mask)"))      \
  X(WeightedPoissonNorm, "weighted_poisson_norm", "weighted_poisson_norm(x, counts, w)",                     \
    "\\mathrm{Poisson}\\left(#2 \\odot \\left(#0\\right);\\, #1\\right)",                                                     \
    PROXC_TERM_SLOT(Counts, "counts", "counts",                                                              \
                    "weighted_poisson_norm needs the counts: weighted_poisson_norm(x, counts, w)"),          \
    PROXC_TERM_SLOT(Weight, "weight", "the weight",                                                          \
                    "weighted_poisson_norm needs the weight: weighted_poisson_norm(x, counts, w)"))          \
  X(ZeroProx, "zero_prox", "", "0", )                                                                         \
  X(UserProx, "prox_fn", "", "", )                                                                            \
  X(LeastSquares, "least_squares", "", "\\left\\| #0 \\right\\|_2^2", )

enum class FunctionKind {
#define PROXC_X(name, ...) name,
  PROXC_FOR_EACH_FUNCTION_KIND(PROXC_X)
#undef PROXC_X
};

const char* to_string(FunctionKind kind);
bool function_kind_from_string(const std::string& s, FunctionKind* kind);

/// How a solver handles a term (set by the split pass).
enum class TermRole {
  Unassigned,  ///< not split yet
  Omega,       ///< handled exactly in the x-update
  Psi,         ///< split off with dual variables, handled by its prox
};
const char* to_string(TermRole role);

/// A scalar or an array-valued parameter (b, c, box bounds).
struct Param {
  double scalar = 0;
  /// When set, the parameter is this constant (of the operand's shape) and
  /// `scalar` is unused.
  Expr array;

  static Param of(double v) { return Param{v, nullptr}; }
  static Param of(Expr e) { return Param{0, std::move(e)}; }
  bool is_array() const { return array != nullptr; }
  bool is_scalar(double v) const { return !array && scalar == v; }
};

/// One term alpha·f(beta·arg − b) + <c, arg> + gamma·||arg||² + d.
struct FunctionTerm {
  FunctionKind kind = FunctionKind::SumSquares;
  Expr arg;
  double alpha = 1;
  double beta = 1;
  Param b = Param::of(0.0);
  Param c = Param::of(0.0);
  double gamma = 0;
  double d = 0;
  /// group_norm1: the axes that form a group (sorted, distinct).
  std::vector<int64_t> axes;
  /// poisson_norm, weighted_poisson_norm: the counts (a constant of the
  /// operand's shape).
  Expr counts;
  /// The weighted functions: the weight w; masked_nonneg: the mask (a
  /// constant of the operand's shape, or a scalar).
  Expr weight;
  /// A prox function of the user's: its registered name and the values of
  /// its declared parameters, in their declared order (defaults filled in).
  std::string user_name;
  std::vector<double> user_params;
  /// box: lower and upper bounds (scalars, possibly infinite, or constants).
  Param lower = Param::of(-std::numeric_limits<double>::infinity());
  Param upper = Param::of(std::numeric_limits<double>::infinity());
  /// Set by the split pass.
  TermRole role = TermRole::Unassigned;
};

/// How messages and printers name a term's function: its keyword, or a
/// user prox function's registered name.
std::string term_function_name(const FunctionTerm& t);
/// False for a prox function of the user's without a value callback: the
/// objective leaves it out (its value counts as 0).
bool term_has_value(const FunctionTerm& t);
/// The name of parameter i of a user prox function's term (registered).
const char* user_param_name(const FunctionTerm& t, size_t i);

/// Indicator functions (nonneg, box, the domain of poisson_norm) count a point
/// within this slack as feasible when their value is evaluated (ProxImaL's rule).
constexpr double kIndicatorSlack = 1e-3;

/// `e` with its outermost scalings and negations removed; their product is
/// multiplied into *factor.
Expr strip_scalings(const Expr& e, double* factor);

/// True when `e` is a variable, mul_elemwise(w, x), conv(k, x), or a scaling
/// or negation of one of these (x a variable): an operator whose Gram matrix
/// is diagonal or circulant.
bool is_direct_least_squares_operator(const Expr& e);

/// True when one direct solve takes these least-squares operands together:
/// each is_direct_least_squares_operator, and either no conv (a diagonal
/// matrix) or one circular conv kernel (the same node) and no mul_elemwise (a
/// circulant one).
bool one_direct_solve(const std::vector<Expr>& operands);

/// ProxImaL's LinOp.is_diag(freq): `e` (of one variable) is a diagonal matrix,
/// in space (freq false: scalings, mul_elemwise, sums and reshapes of these) or in
/// the Fourier domain (freq true: scalings, circular conv, sums and reshapes).
bool is_diag_operator(const Expr& e, bool freq);
/// ProxImaL's LinOp.is_gram_diag(freq): eᵀe is diagonal in that domain. Besides
/// the diagonal operators: vstack of Gram-diagonal operands, transpose of a
/// diagonal one, subsample of a spatially diagonal one (in space only).
bool is_gram_diag_operator(const Expr& e, bool freq);

/// Checks a term and returns it: parameter ranges (alpha ≥ 0, gamma ≥ 0,
/// beta ≠ 0, all finite), parameter shapes against the operand, group axes in
/// range, counts present for poisson_norm, lower ≤ upper for box. A violation
/// is a UserError naming the function and the parameter.
FunctionTerm make_term(FunctionTerm t);

}  // namespace proxc::internal

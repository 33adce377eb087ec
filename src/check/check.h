/// \file
/// Checkers shipped as features: the adjoint (dot-product) test for any
/// operator expression on any backend, operator-norm estimates and bounds,
/// and the objective of a problem at a point.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/problem.h"
#include "step/backend.h"

namespace proxc::internal {

/// The outcome of one dot test |<Kx, y> − <x, Kᵀy>| ≤ tolerance.
///
/// Tolerance (docs/checks.md):
///   tolerance = 8 · eps · W(K) · (||Kx||·||y|| + ||x||·||Kᵀy||)
/// where eps is the backend's machine epsilon and W(K) bounds the number of
/// roundings behind one entry of Kx or Kᵀy: the sum over K's operator nodes
/// of their work per entry (kernel size for conv, 2·dims for grad, 4 for warp,
/// 3 for mul_color, max(N, M) for pxwise_matrixmult, 1 otherwise). Each
/// computed entry then carries at most W·eps relative error (first-order
/// bound), and Cauchy–Schwarz carries it to the inner products, which are
/// accumulated in double.
struct DotTestResult {
  std::string what;  ///< the operator, in .prox syntax
  double lhs = 0;    ///< <Kx, y>
  double rhs = 0;    ///< <x, Kᵀy>
  double error = 0;  ///< |lhs − rhs|
  double scale = 0;  ///< ||Kx||·||y|| + ||x||·||Kᵀy||
  double tolerance = 0;
  bool passed = false;
};

/// Runs the dot test of the linear part of `k` on `backend` with random x and
/// y (normal, seeded).
DotTestResult dot_test(Backend& backend, const Expr& k, uint64_t seed = 1);

/// W(K) of the tolerance formula above.
double rounding_work(const Expr& k);

/// ||K|| estimated by Lanczos iteration on KᵀK, as ProxImaL does (scipy's
/// eigs): the largest Ritz value after at most `max_iters` applications of
/// KᵀK, a lower bound to rounding; stops when the estimate of ||K||²
/// changes by less than `tol` relative or the recurrence's residual is that
/// small. 0, and `finite` false, when an application of KᵀK is not finite.
/// Where the first step's <v, KᵀK v> is not finite, above 1e18 or below 1e-18
/// (float32's squares overflow or underflow, to 0 too) it iterates again on K
/// divided by ProxImaL's bound (unless that is 0), unless `rescale` is false.
struct NormEstimate {
  double value = 0;
  int iterations = 0;
  bool finite = true;
};
NormEstimate estimate_norm(Backend& backend, const Expr& k, int max_iters = 100, uint64_t seed = 2,
                           double tol = 1e-6, bool rescale = true);

/// ProxImaL's upper bound of ||K||, propagated through the operator graph:
/// grad 2·sqrt(dims), mul_elemwise max|w|, conv max|otf| (exact), subsample,
/// crop, reshape, transpose 1, scale |λ|, sums the sum of the bounds,
/// composition the product, vstack the root of the sum of squares;
/// mul_color the Frobenius norm of M; pxwise_matrixmult the largest of its
/// pixels' matrices' norms (exact up to 8 rows or columns, else Schur's
/// test); warp sqrt(max row sum · max column sum)
/// of its interpolation weights (Schur's test).
double norm_bound(const Expr& k);

/// The objective of `p` at the point `x` (one array per variable node).
struct ObjectiveReport {
  std::vector<double> terms;  ///< each term's value at x
  double total = 0;
  /// The same at max(x, 0), reported when the problem has nonneg or box terms.
  bool has_projection = false;
  std::vector<double> terms_at_projection;
  double total_at_projection = 0;
};
ObjectiveReport evaluate_objective(Backend& backend, const Problem& p,
                                   const std::map<const ExprNode*, const Array*>& x);
/// The program evaluate_objective compiles: the value of each term of p
/// (outputs term0, term1, ...) at the inputs x0, x1, ... (p's variables in
/// order). A solver compiles it with its iterations, at once.
StepProgram objective_program(const Problem& p);
/// evaluate_objective with objective_program(p) compiled: `run` runs it.
ObjectiveReport evaluate_objective(const std::function<StepOutputs(const StepInputs&)>& run, const Problem& p,
                                   const std::map<const ExprNode*, const Array*>& x);

/// One comparison of a backend with the reference backend (the emulator) on
/// the same inputs: max |backend − reference| against a tolerance.
///
/// Tolerances (docs/checks.md), with eps the backend's epsilon:
///   operator forward or adjoint: 16·eps·W(K)·max(1, ‖ref‖∞, ‖in‖∞·max(1, bound(K)))
///     (each entry sums at most W roundings of terms bounded by ‖in‖∞·bound(K));
///   prox: 64·eps·max(1, ‖ref‖∞, ‖v‖∞) (a few operations per entry);
///   value: 8·eps·(1 + |ref| + S), S the sum of the absolute values of the
///     terms the value adds up (entries are rounded once or twice each; the
///     sum itself is accumulated in double).
struct ParityResult {
  std::string what;  ///< "forward grad(x)", "prox norm1 #0", ...
  double error = 0;
  double tolerance = 0;
  bool passed = false;
};

/// Runs every operator of `p` alone (forward and adjoint), every term's prox
/// (rho = 1) and value on `backend` and on `reference` with the same random
/// inputs and compares them.
std::vector<ParityResult> parity_check(Backend& backend, Backend& reference, const Problem& p, uint64_t seed = 1);

/// The operators of `k` (nodes that apply an operator to a variable
/// expression), each once, operands first.
std::vector<Expr> operators_of(const Expr& k);

/// The operator node `op` alone, over fresh variables of its operands' shapes.
Expr isolate_operator(const Expr& op);

}  // namespace proxc::internal

/// \file
/// Rewriting passes over the problem IR. Each pass is a function from a
/// problem to an equivalent problem (the same objective, in the user's units)
/// and lives in its own file with a comment saying what it guarantees.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/problem.h"

namespace proxc::internal {

/// Options the passes read.
struct PassOptions {
  /// The solver the split pass prepares for: pc, ladmm, admm or hqs.
  std::string solver = "pc";
  /// How the scale pass gets ||K||: "bound" (ProxImaL's propagated upper
  /// bound, the default) or "power" (estimated on the emulator by Lanczos iteration on KᵀK, as
  /// ProxImaL's est_CompGraph_norm with scipy's eigs; the name is the
  /// option's since the first release).
  std::string norm = "bound";
  /// split: the roles the user gives the terms, in order (proxc/passes.h
  /// PassOptions::roles); empty: the solver's partition.
  std::vector<TermRole> roles;
  /// absorb: fold operators into the parameters too (scalar scales, positive
  /// weights, direct least squares), not only offsets. False is ProxImaL's
  /// absorb=False, which still absorbs every offset (its absorb_offset).
  bool absorb_operators = true;
  /// absorb: mark data terms whose operator has a diagonal or circulant Gram
  /// matrix as least squares, for a direct solve (ProxImaL's try_diagonalize).
  bool diagonalize = true;
  /// absorb: whether a circulant one (a circular conv) is a direct solve too:
  /// not in a distributed solve, where its FFTs would span every rank's rows.
  bool circulant = true;
  /// The scale pass's operator-norm oracle: ||K|| of the stacked psi
  /// operator, by the method `norm` names. The passes depend on the IR and the
  /// constant folder only, so whoever runs them gives it (src/pipeline: operator_norm_oracle).
  std::function<double(const Expr& k)> operator_norm;
};

/// absorb: moves offsets, scalar scales and positive elementwise weights into
/// the functions' parameters, and marks quadratic data terms with a diagonal
/// or circulant Gram matrix as least squares (absorb.cpp).
Problem absorb_pass(const Problem& p, const PassOptions& o);
/// merge: folds a plain quadratic into another term on the same operand
/// (merge.cpp).
Problem merge_pass(const Problem& p, const PassOptions& o);
/// split: assigns every term to omega or psi for the chosen solver (split.cpp).
Problem split_pass(const Problem& p, const PassOptions& o);
/// scale: normalises the stacked psi operator by ||K|| (scale.cpp).
Problem scale_pass(const Problem& p, const PassOptions& o);

/// The solvers the split pass knows, and a check of a name.
const std::vector<std::string>& known_solvers();
void check_solver_name(const std::string& s);

}  // namespace proxc::internal

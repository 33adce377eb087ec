/// \file
/// A problem: minimize the sum of function terms over the variables they use.
#pragma once

#include <string>
#include <vector>

#include "ir/function.h"

namespace proxc::internal {

/// `minimize Σ terms`. Variables are the ones the terms reach, in order of
/// first appearance. Value type: copying shares the immutable nodes.
struct Problem {
  std::vector<FunctionTerm> terms;
  /// Names of the rewriting passes already applied (in order), so that a dump
  /// reloaded later continues where it stopped.
  std::vector<std::string> passes_run;
  /// The solver the split pass targeted ("" before splitting).
  std::string solver;
  /// Set by the scale pass: the problem's variables are s = sqrt(knorm)·x,
  /// where x is the user's variable; 0 means not scaled.
  double knorm = 0;
  /// Where that record was read ("d/03_split.prox:4:1", "d/03_split.json";
  /// "" when none was, or the problem was built in memory): the errors that
  /// refuse a record say where it is.
  std::string record_origin;

  /// The factor between internal and user units: s = variable_scale()·x.
  double variable_scale() const;

  /// The variables, in order of first appearance (depth first, terms in order).
  std::vector<Expr> variables() const;
};

/// All expression nodes reachable from the problem, each once, in canonical
/// order: depth first over the terms in order, operands before the node
/// (post-order), parameter constants (b, c, counts, bounds) after the operand.
std::vector<Expr> topo_order(const Problem& p);

/// The range of ||K|| (knorm) a scaled problem may record: proxc iterates in
/// float32, and results come back in the user's units through 1/sqrt(knorm).
constexpr double kMinKnorm = 1e-30;
constexpr double kMaxKnorm = 1e30;

/// Throws UserError unless the problem is well formed (at least one term,
/// at least one variable) and its record is consistent, as a dump that proxc
/// wrote is: knorm in [kMinKnorm, kMaxKnorm] exactly when "scale" has run, a
/// solver exactly when "split" has run.
void verify(const Problem& p);

}  // namespace proxc::internal

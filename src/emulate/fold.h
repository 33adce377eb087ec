/// \file
/// Constant folding. An operator applied to constants alone (`-b`, `2 * b`,
/// `b - c`, `conv(k, b)`) is one constant leaf of source Derived
/// (ir/expr.h): its values computed once by the reference semantics
/// (linop.h) in double and rounded to float32, its expression kept so that
/// printers write what the user wrote (unfold_constants, ir/traverse.h) and
/// loaders fold it again. Every place that builds expressions — the parser,
/// the JSON loader, the API, the passes — folds what it builds, so that the
/// rest of the compiler meets constants only as leaves.
#pragma once

#include "ir/problem.h"

namespace proxc::internal {

/// `e` folded when it is a constant expression (no variable, not a leaf);
/// `e` itself otherwise. What a builder calls on each node it makes (its
/// operands were folded when they were made).
Expr fold_constant(const Expr& e);

/// `e` with every maximal constant sub-expression folded into a derived
/// constant; `e` itself when there is none. A value that is not finite in
/// float32 is a UserError naming the operator.
Expr fold_constants(const Expr& e);

/// `p` with every operand and parameter folded, each term checked again.
Problem fold_constants(const Problem& p);

}  // namespace proxc::internal

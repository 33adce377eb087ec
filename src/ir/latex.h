/// \file
/// The objective of a problem as a LaTeX equation, for papers and reports.
#pragma once

#include <string>

#include "ir/problem.h"

namespace proxc::internal {

/// `\begin{equation*} \min_{x} \; ... \end{equation*}` with one summand per
/// term: norms for the functions, ∇ for grad, * for conv, ⊙ for mul_elemwise.
std::string print_latex(const Problem& p);

}  // namespace proxc::internal

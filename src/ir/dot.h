/// \file
/// The operator DAG of a problem as a Graphviz digraph, for reading.
#pragma once

#include <string>

#include "ir/problem.h"

namespace proxc::internal {

/// A `digraph` with one node per expression node (kind, shape, name) and one
/// box per term; edges run from operands to their users.
std::string print_dot(const Problem& p);

}  // namespace proxc::internal

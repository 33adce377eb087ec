/// \file
/// Entry points of the public API that read problems from files.
#pragma once

#include <string>

#include "ir/problem.h"

namespace proxc::internal {

/// Reads a problem from a .prox text file or a JSON dump (chosen by the
/// extension ".json", or by the content starting with '{'). Relative data
/// paths resolve against the file's folder.
Problem load_problem(const std::string& path);

/// True when `path` names a JSON dump rather than .prox text.
bool is_json_path(const std::string& path);

}  // namespace proxc::internal

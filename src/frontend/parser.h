/// \file
/// The .prox language front end: text → Problem IR (grammar: docs/language.md).
#pragma once

#include <map>
#include <string>

#include "ir/problem.h"

namespace proxc::internal {

/// A parsed .prox file: the problem and the names its statements bound.
struct ParsedProgram {
  Problem problem;
  /// Every `name = ...` that bound an expression (variables, constants,
  /// subexpressions), by name.
  std::map<std::string, Expr> names;
};

/// Parses .prox `text`. `file` names it in messages; `load("...")` paths are
/// resolved against `base_dir`. Every mistake is a UserError
/// "file:line:col: error: ..." with the source line and a caret.
ParsedProgram parse_program(const std::string& text, const std::string& file, const std::string& base_dir);

/// Reads and parses a .prox file; paths resolve against its folder.
ParsedProgram parse_program_file(const std::string& path);

/// The largest .prox file accepted (16 MiB).
constexpr int64_t kMaxProgramBytes = int64_t{16} << 20;

}  // namespace proxc::internal

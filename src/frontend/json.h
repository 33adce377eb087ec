/// \file
/// The JSON form of a problem: complete, so JSON → IR → JSON is identical.
///
/// Layout (docs/ir-json.md describes every field):
///
///     {"format": "proxc.problem", "version": 1, "passes_run": [...],
///      "nodes": [{"id": 0, "kind": "variable", "name": "x", "shape": [48, 40]}, ...],
///      "terms": [{"function": "sum_squares", "arg": 3, "alpha": 1, ...}, ...]}
///
/// Nodes are listed operands first and referred to by id. Constants are
/// stored by reference (a path relative to the JSON file's folder and a
/// content hash that is checked on load) or inline, by option.
#pragma once

#include <string>

#include "ir/problem.h"

namespace proxc::internal {

struct JsonPrintOptions {
  /// Store file constants' values inline instead of by path and hash.
  bool inline_constants = false;
  /// Paths of file constants are written relative to this folder.
  std::string base_dir;
  /// File constants are marked "pinned" (as a dump's are): their text form
  /// keeps the hash, so that it loads from any folder, as the JSON does.
  /// Constants loaded with a pin are marked whatever this says.
  bool pin_hashes = false;
  /// Spaces of indentation (-1: one line).
  int indent = 1;
};

/// The JSON text of `p` (ends with a newline).
std::string print_json(const Problem& p, const JsonPrintOptions& options = {});

/// Reads a problem from JSON text. `path` names the file in messages and
/// `base_dir` is where relative constant paths are resolved. Every field is
/// checked; file constants are loaded and their hash compared.
Problem parse_json(const std::string& text, const std::string& path, const std::string& base_dir);

}  // namespace proxc::internal

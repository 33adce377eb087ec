/// \file
/// Print-time name choice: the printer, not the node, owns the names.
#pragma once

#include <set>
#include <string>

namespace proxc::internal {

/// Hands out unique identifiers from hints: the first `b` is `b`, the next
/// `b_1`, then `b_2`. Hints are sanitized to [A-Za-z_][A-Za-z0-9_]* and
/// reserved words get a trailing underscore. One NameScope per printed
/// document; there is no process-wide state.
class NameScope {
 public:
  /// A fresh name derived from `hint` (or from `fallback` when the hint is
  /// empty), never returned before by this scope.
  std::string unique(const std::string& hint, const std::string& fallback = "t");

  /// True when `name` is a keyword or a built-in function of the .prox language.
  static bool is_reserved(const std::string& name);

  /// `hint` reduced to a valid identifier (possibly empty).
  static std::string sanitize(const std::string& hint);

 private:
  std::set<std::string> used_;
};

}  // namespace proxc::internal

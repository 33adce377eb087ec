/// \file
/// The rule both registries (black boxes, prox functions) hold names to.
#pragma once

#include <cctype>

namespace proxc::internal {

/// Letters, digits and '_', not empty, not starting with a digit.
inline bool is_identifier(const char* s) {
  if (!s || !*s || std::isdigit(static_cast<unsigned char>(*s))) return false;
  for (const char* p = s; *p; ++p) {
    if (!std::isalnum(static_cast<unsigned char>(*p)) && *p != '_') return false;
  }
  return true;
}

}  // namespace proxc::internal

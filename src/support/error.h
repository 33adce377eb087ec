/// \file
/// The two kinds of error proxc raises.
///
/// A UserError is the user's mistake (bad text, bad shapes, a missing file, a
/// bad option, NaN in data): its message says what is wrong and where. The CLI
/// prints it and exits with code 2. An InternalError is a bug in proxc: its
/// message says so, with the source file and line; the CLI exits with code 3.
///
/// Checks are written as streams, so the message is built only on failure:
///
///     user_assert(a.rank() == b.rank()) << "conv: kernel rank " << a.rank() ...;
///     internal_assert(node) << "null node in printer";
#pragma once

#include <sstream>
#include <string>

#include "proxc/error.h"

namespace proxc::internal {

// The public error types, also under their internal names.
using proxc::InternalError;
using proxc::UserError;

/// A position in a source text (1-based line and column; 0 means unknown).
struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;
  bool known() const { return line > 0; }
  /// "file:line:col", or "file" when the line is unknown.
  std::string to_string() const;
};

/// Collects a message and throws from its destructor. Used by the assert
/// macros below; not meant to be used directly.
class ErrorBuilder {
 public:
  ErrorBuilder(bool user, const char* file, int line, const char* cond);
  ErrorBuilder(const ErrorBuilder&) = delete;
  ErrorBuilder& operator=(const ErrorBuilder&) = delete;
  ~ErrorBuilder() noexcept(false);

  template <typename T>
  ErrorBuilder& operator<<(const T& v) {
    msg_ << v;
    return *this;
  }

 private:
  bool user_;
  std::ostringstream msg_;
};

/// Throws UserError unless `cond` holds; stream the message after it.
#define user_assert(cond) \
  if (cond) {             \
  } else                  \
    ::proxc::internal::ErrorBuilder(true, __FILE__, __LINE__, #cond)

/// Throws UserError unconditionally; stream the message after it.
#define user_error ::proxc::internal::ErrorBuilder(true, __FILE__, __LINE__, nullptr)

/// Throws InternalError unless `cond` holds; stream the message after it.
#define internal_assert(cond) \
  if (cond) {                 \
  } else                      \
    ::proxc::internal::ErrorBuilder(false, __FILE__, __LINE__, #cond)

/// Throws InternalError unconditionally.
#define internal_error ::proxc::internal::ErrorBuilder(false, __FILE__, __LINE__, nullptr)

/// Formats "file:line:col: error: message", then the source line and a caret
/// under the column (when the line is known and `source` holds it).
std::string format_located_error(const SourceLoc& loc, const std::string& message,
                                 const std::string& source);

}  // namespace proxc::internal

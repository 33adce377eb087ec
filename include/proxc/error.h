/// \file
/// The two kinds of error proxc raises.
///
/// A UserError is the user's mistake (bad text, bad shapes, a missing file, a
/// bad option, NaN in data): its message says what is wrong and where
/// (file:line:col, the operator and both shapes, the option as it was
/// written). The proxc command prints it and exits with code 2. An
/// InternalError is a bug in proxc: its message says so, with the source file
/// and line; the command exits with code 3.
#pragma once

#include <stdexcept>
#include <string>

namespace proxc {

/// A mistake in what the user gave proxc. what() is the full message.
class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& msg) : std::runtime_error(msg) {}
};

/// A bug in proxc. what() starts with "internal error" and names the place.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& msg) : std::logic_error(msg) {}
};

}  // namespace proxc

/// \file
/// File helpers: whole-file reads with clear errors, atomic writes, content
/// hashes.
#pragma once

#include <string>

namespace proxc {

/// The bytes of `path`. UserError naming the path when it cannot be read.
/// `max_bytes` guards against reading something absurd (a device, a huge file).
std::string read_file(const std::string& path, int64_t max_bytes = int64_t{1} << 34);

/// Writes `contents` to `path` whole or not at all: a temporary file in the
/// same folder, then rename. UserError naming the path on failure.
void write_file_atomic(const std::string& path, const std::string& contents);

/// A 128-bit content hash (XXH3-128), as "xxh3-128:" + 32 hex digits.
std::string content_hash(const std::string& bytes);

}  // namespace proxc

/// \file
/// File helpers: whole-file reads with clear errors, atomic writes, content
/// hashes.
#pragma once

#include <string>

namespace proxc::internal {

/// The bytes of `path`. UserError naming the path when it cannot be read.
/// `max_bytes` guards against reading something absurd (a device, a huge file).
std::string read_file(const std::string& path, int64_t max_bytes = int64_t{1} << 34);

/// Writes `contents` to `path` whole or not at all: a temporary file in the
/// same folder, then rename. UserError naming the path on failure.
void write_file_atomic(const std::string& path, const std::string& contents);

/// Where a problem may read data from: its own folder, and the folders
/// allowed explicitly (--allow-path). Loading a problem never runs code; this
/// keeps it from reading arbitrary files either.
struct PathPolicy {
  /// Also allow files under `dir`.
  static void allow(const std::string& dir);
  /// Forget every allowed folder.
  static void clear();
  /// Throws UserError unless `path` lies under `base_dir` or an allowed
  /// folder (symbolic links resolved). `written` is the path as the user
  /// wrote it, for the message.
  static void check(const std::string& path, const std::string& base_dir, const std::string& written);
};

/// A 128-bit content hash (XXH3-128), as "xxh3-128:" + 32 hex digits.
std::string content_hash(const std::string& bytes);

}  // namespace proxc::internal

/// \file
/// File helpers: whole-file reads with clear errors, atomic writes, content
/// hashes.
#pragma once

#include <string>

namespace proxc::internal {

/// The bytes of `path`. UserError naming the path when it cannot be read.
/// `max_bytes` guards against reading something absurd (a device, a huge file).
std::string read_file(const std::string& path, int64_t max_bytes = int64_t{1} << 34);

/// Writes every byte of `bytes` to the descriptor `fd` (again after EINTR
/// and short writes); false, with errno set, on failure.
bool write_all(int fd, const std::string& bytes);

/// Writes `contents` to `path` whole or not at all: a temporary file of a
/// name unique to this process and call, beside the target, then rename. A
/// symbolic link stays a link (the file it names is written); a device or a
/// FIFO is written into; an existing file keeps its permissions (and owner,
/// where this process may set it), and one that is not writable is refused.
/// UserError naming the path on failure; the target is then as it was.
void write_file_atomic(const std::string& path, const std::string& contents);

/// The file a write to `path` replaces, as an absolute path: its symbolic
/// links followed, a dangling one to the file it would create.
std::string output_target(const std::string& path);

/// Remembers what `path` names now (output_target): a later
/// write_file_atomic to it refuses, naming both, when a link made or
/// changed since has it name another file. For outputs checked before long
/// work and written after it.
void keep_output_target(const std::string& path);

/// Throws the UserError write_file_atomic would throw for `path` before
/// writing a byte: an empty name, a folder or a protected file in its place,
/// a missing or unwritable folder. For checking outputs before long work.
void check_output_path(const std::string& path);

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
  /// True when check() would accept `path`.
  static bool allows(const std::string& path, const std::string& base_dir);
};

/// A path to an array inside a container file: "frames.npz:noisy",
/// "scan.h5:/entry/data". `file` is the container's path and `member` what
/// follows the first ':' after a container extension (.npz, .h5, .hdf5, any
/// letter case); a path without one is all `file`, `member` empty, and so is
/// a path that exists as it is or whose marker lies in the name of an
/// existing folder ("runs/a.h5:old/b.npy").
struct MemberPath {
  std::string file;
  std::string member;
  bool has_member() const { return !member.empty(); }
  /// `file` and `member` joined back ("frames.npz:noisy"; the file alone without a member).
  std::string joined() const { return member.empty() ? file : file + ":" + member; }
};
MemberPath split_member_path(const std::string& path);

/// A 128-bit content hash (XXH3-128), as "xxh3-128:" + 32 hex digits.
std::string content_hash(const std::string& bytes);

}  // namespace proxc::internal

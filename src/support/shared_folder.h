/// \file
/// Writing into and loading from a folder that other processes, and maybe
/// other users, share: the on-disk pipeline cache. Every file proxc makes
/// there is made in a private scratch folder (mkdtemp: no one else can plant
/// a name in it) and published whole by a rename, which replaces whatever
/// is at the final name -- a symbolic link included -- and never writes
/// through it. A file is loaded only when it is a plain file of this user
/// or root that no one else may write; a folder that others may write is
/// used read-only. One key's work is serialised across processes by a lock
/// file, so that concurrent compiles of one pipeline give one good entry.
#pragma once

#include <string>

namespace proxc::internal {

/// A private folder for temporaries inside `parent`, removed with what it
/// holds when this object goes (an interrupted process's are removed by
/// remove_stale_scratch). Empty path() when it cannot be made.
class ScratchFolder {
 public:
  explicit ScratchFolder(const std::string& parent);
  ~ScratchFolder();
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  const std::string& path() const { return path_; }
  /// `name` inside the scratch folder.
  std::string file(const std::string& name) const;

 private:
  std::string path_;
};

/// Moves `from` (a file of a ScratchFolder) to `to` in one rename: a reader
/// sees the old file or the new one, and a link at `to` is replaced, not
/// followed. False (and `from` removed) when it cannot.
bool publish_file(const std::string& from, const std::string& to);

/// Writes `bytes` into `scratch` and publishes it at `to`; false when it cannot.
bool publish_bytes(const ScratchFolder& scratch, const std::string& bytes, const std::string& to);

/// Removes scratch folders (and the temporaries of earlier versions of
/// proxc) in `dir` that were last written more than an hour ago.
void remove_stale_scratch(const std::string& dir);

/// How far a shared folder may be trusted.
struct FolderTrust {
  bool exists = false;    ///< a folder is there (not a link to one, not a file)
  bool writable = false;  ///< this process may write into it, and it is this user's alone
  std::string why;        ///< why not writable, when it is a folder ("" otherwise)
};

/// What `dir` may be used for: a folder owned by this user (or root) that
/// no one else may write is used fully; one that others may write, or that
/// belongs to another user, is used read-only, and `why` says so.
FolderTrust folder_trust(const std::string& dir);

/// True when `path` is a plain file (no link) owned by this user or root
/// that neither its group nor others may write; else false, with `why`
/// saying what is wrong ("" when the file is simply not there).
bool is_trusted_file(const std::string& path, std::string* why);

/// An exclusive lock on `path` (made if absent, never through a link),
/// held while this object lives. locked() is false when the file cannot be
/// made or locked; the work then goes on unlocked.
class FileLock {
 public:
  explicit FileLock(const std::string& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  bool locked() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace proxc::internal

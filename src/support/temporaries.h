/// \file
/// The temporary files this process is writing, so that every way it stops
/// leaves none behind: a write that fails removes its own, a signal that
/// ends the process removes all of them (remove_temporaries_now, from the
/// signal handler), and what a process killed outright (SIGKILL, a power
/// cut) left beside an output is removed by the next write of that output
/// (remove_orphaned_temporaries).
#pragma once

#include <string>

namespace proxc::internal {

/// Registers `path` as a temporary this process is writing, until the
/// object goes (after the file is renamed into place or removed). At most
/// kMaxTemporaries at once are registered; more are still written and
/// removed on failure, just not on a signal.
class TemporaryFile {
 public:
  explicit TemporaryFile(const std::string& path);
  ~TemporaryFile();
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;

 private:
  int slot_ = -1;
};

inline constexpr int kMaxTemporaries = 64;

/// Unlinks every registered temporary. Async-signal-safe: for a handler
/// about to end the process.
void remove_temporaries_now();

/// Removes, in `dir`, the plain files named `prefix` + a process id + '.'
/// or '-' + a serial number + `suffix` whose process is gone: what a process
/// killed outright left beside an output. Each (dir, prefix, suffix) is
/// scanned once per process (write_file_atomic names its
/// temporaries "." + name + "." + pid + "." + n + ".tmp-proxc").
void remove_orphaned_temporaries(const std::string& dir, const std::string& prefix, const std::string& suffix);

}  // namespace proxc::internal

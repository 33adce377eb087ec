#include "support/temporaries.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

namespace proxc::internal {

namespace {

// Fixed storage a signal handler may read: a slot is free (0), being filled
// (1) or holds a path (2).
struct Slot {
  std::atomic<int> state{0};
  char path[PATH_MAX];
};
Slot g_slots[kMaxTemporaries];
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler reads lock-free atomics only");

}  // namespace

TemporaryFile::TemporaryFile(const std::string& path) {
  if (path.size() >= PATH_MAX) return;
  for (int i = 0; i < kMaxTemporaries; ++i) {
    int free_slot = 0;
    if (!g_slots[i].state.compare_exchange_strong(free_slot, 1)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].state.store(2);
    slot_ = i;
    return;
  }
}

TemporaryFile::~TemporaryFile() {
  if (slot_ >= 0) g_slots[slot_].state.store(0);
}

void remove_temporaries_now() {
  for (Slot& s : g_slots) {
    if (s.state.load() == 2) ::unlink(s.path);  // a file already renamed into place is no longer there
  }
}

void remove_orphaned_temporaries(const std::string& dir, const std::string& prefix, const std::string& suffix) {
  namespace fs = std::filesystem;
  // Once per folder and output in a process: what a dead process left is
  // gone after the first scan, and a solve that writes a checkpoint or a
  // snapshot every few iterations into a folder of thousands of files must
  // not read the folder at each write.
  {
    static std::mutex m;
    static std::set<std::string> scanned;
    std::lock_guard<std::mutex> lock(m);
    if (!scanned.insert(dir + "/" + prefix + "|" + suffix).second) return;
  }
  auto digits_from = [](const std::string& s, size_t at) {
    size_t end = at;
    while (end < s.size() && s[end] >= '0' && s[end] <= '9') ++end;
    return end;
  };
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir.empty() ? "." : dir, ec)) {
    // Exactly prefix + pid + ('.' or '-') + serial + suffix: nothing else is proxc's.
    const std::string name = e.path().filename().string();
    if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const size_t pid_end = digits_from(name, prefix.size());
    if (pid_end == prefix.size() || pid_end - prefix.size() > 9 || pid_end >= name.size() ||
        (name[pid_end] != '.' && name[pid_end] != '-')) {
      continue;
    }
    const size_t serial_end = digits_from(name, pid_end + 1);
    if (serial_end == pid_end + 1 || serial_end + suffix.size() != name.size()) continue;
    const long pid = std::stol(name.substr(prefix.size(), pid_end - prefix.size()));
    if (pid == ::getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code rm;
    if (fs::symlink_status(e.path(), rm).type() == fs::file_type::regular) fs::remove(e.path(), rm);
  }
}

}  // namespace proxc::internal

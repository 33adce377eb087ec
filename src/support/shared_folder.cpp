#include "support/shared_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "support/file_util.h"

namespace proxc::internal {

namespace {

namespace fs = std::filesystem;

// The prefix of every scratch folder's name: remove_stale_scratch removes
// only names it made.
constexpr const char* kScratchPrefix = ".proxc-scratch-";

// How long a process waits for another that compiles the same entry before
// it compiles the entry too: a stopped or hung process must not make every
// other one wait forever.
constexpr auto kLockPatience = std::chrono::seconds(180);

// As the backend's warnings read (backend_common.cpp).
void warn(const std::string& what) { std::fprintf(stderr, "proxc: warning: %s\n", what.c_str()); }

bool is_this_user_or_root(uid_t uid) { return uid == ::geteuid() || uid == 0; }

std::string octal_mode(mode_t m) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

}  // namespace

ScratchFolder::ScratchFolder(const std::string& parent) {
  std::string tmpl = (fs::path(parent.empty() ? "." : parent) /
                      (std::string(kScratchPrefix) + std::to_string(::getpid()) + "-XXXXXX"))
                         .string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data())) path_ = buf.data();  // mode 0700, made exclusively
}

ScratchFolder::~ScratchFolder() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string ScratchFolder::file(const std::string& name) const { return (fs::path(path_) / name).string(); }

bool publish_file(const std::string& from, const std::string& to) {
  // What no one else may write: the linker's and the umask's group-write bits go.
  struct stat st;
  if (::stat(from.c_str(), &st) == 0) ::chmod(from.c_str(), st.st_mode & 0755);
  if (std::rename(from.c_str(), to.c_str()) == 0) return true;
  std::remove(from.c_str());
  return false;
}

bool publish_bytes(const ScratchFolder& scratch, const std::string& bytes, const std::string& to) {
  if (scratch.path().empty()) return false;
  const std::string tmp = scratch.file(fs::path(to).filename().string());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = write_all(fd, bytes);
  ok = ::fsync(fd) == 0 && ok;
  ok = ::close(fd) == 0 && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    return false;
  }
  return publish_file(tmp, to);
}

void remove_stale_scratch(const std::string& dir) {
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (const auto& f : fs::directory_iterator(dir, ec)) {
    const std::string name = f.path().filename().string();
    // Also the temporaries of versions that wrote them beside the entries:
    // "<entry>.so.tmp<pid>_<n>[.o]", ".<name>.<pid>.<n>.tmp-proxc".
    const bool ours = name.rfind(kScratchPrefix, 0) == 0 || name.find(".so.tmp") != std::string::npos ||
                      (name.size() > 10 && name.compare(name.size() - 10, 10, ".tmp-proxc") == 0);
    if (!ours) continue;
    std::error_code age_ec;
    const auto written = fs::symlink_status(f.path(), age_ec).type() == fs::file_type::symlink
                             ? now  // a link is not ours to judge by age: left as it is
                             : f.last_write_time(age_ec);
    if (!age_ec && now - written > std::chrono::hours(1)) fs::remove_all(f.path(), ec);
  }
}

FolderTrust folder_trust(const std::string& dir) {
  FolderTrust t;
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return t;
  if (S_ISLNK(st.st_mode) && ::stat(dir.c_str(), &st) != 0) return t;
  if (!S_ISDIR(st.st_mode)) return t;
  t.exists = true;
  if (!is_this_user_or_root(st.st_uid)) {
    t.why = "it belongs to another user (uid " + std::to_string(st.st_uid) + ")";
  } else if ((st.st_mode & 022) != 0) {
    t.why = "others may write into it (mode " + octal_mode(st.st_mode) + "; chmod go-w makes it yours alone)";
  } else if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    t.why = "it is not writable";
  } else {
    t.writable = true;
  }
  return t;
}

bool is_trusted_file(const std::string& path, std::string* why) {
  struct stat st;
  why->clear();
  if (::lstat(path.c_str(), &st) != 0) return false;
  if (S_ISLNK(st.st_mode)) {
    *why = "it is a symbolic link, and proxc's entries are plain files";
  } else if (!S_ISREG(st.st_mode)) {
    *why = "it is not a plain file";
  } else if (!is_this_user_or_root(st.st_uid)) {
    *why = "it belongs to another user (uid " + std::to_string(st.st_uid) + ")";
  } else if ((st.st_mode & 022) != 0) {
    *why = "others may write it (mode " + octal_mode(st.st_mode) + ")";
  } else {
    return true;
  }
  return false;
}

FileLock::FileLock(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return;
  }
  const auto give_up = std::chrono::steady_clock::now() + kLockPatience;
  bool warned = false;
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {  // no locks here (some network file systems)
      ::close(fd);
      return;
    }
    if (!warned && std::chrono::steady_clock::now() > give_up - kLockPatience + std::chrono::seconds(10)) {
      warn("waiting for another process that compiles the same pipeline into the cache (" + path + ")");
      warned = true;
    }
    if (std::chrono::steady_clock::now() > give_up) {
      warn("another process has held " + path + " for " + std::to_string(kLockPatience.count()) +
           " s; compiling the pipeline here too");
      ::close(fd);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  fd_ = fd;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the lock
}

}  // namespace proxc::internal

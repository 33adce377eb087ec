#include "support/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <vector>

#include "support/error.h"
#include "support/format.h"
#include "support/temporaries.h"

namespace proxc::internal {

std::string read_file(const std::string& path, int64_t max_bytes) {
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  user_assert(!ec && std::filesystem::exists(status))
      << path << ": cannot open file: no such file or directory";
  user_assert(!std::filesystem::is_directory(status)) << path << ": is a directory, not a file";
  // A FIFO would block forever and a device never end: data and problems are regular files.
  user_assert(std::filesystem::is_regular_file(status))
      << path << ": not a regular file (a device, FIFO or socket); proxc reads regular files only";
  const auto size = std::filesystem::file_size(path, ec);
  user_assert(ec || static_cast<int64_t>(size) <= max_bytes)
      << path << ": the file has " << size << " bytes, over the limit of " << max_bytes << " bytes";
  std::ifstream in(path, std::ios::binary);
  user_assert(in.good()) << path << ": cannot open file: " << std::strerror(errno);
  std::string out;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    out.append(buf, static_cast<size_t>(in.gcount()));
    user_assert(static_cast<int64_t>(out.size()) <= max_bytes)
        << path << ": file is larger than the limit of " << max_bytes << " bytes";
  }
  user_assert(!in.bad()) << path << ": read error";
  return out;
}

bool write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

namespace {

// A path that names an open descriptor (/dev/stdout, /dev/fd/N,
// /proc/self/fd/N): its link is the kernel's, not a file to replace.
bool names_descriptor(const std::string& path) {
  for (const char* prefix : {"/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/"}) {
    if (path.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// Opens `path` (a device, FIFO or descriptor) for writing without blocking on
// a FIFO that no process reads, then writes every byte into it (appending:
// what a shell's >> or > set up stays as it set it up).
void write_into(const std::string& path, const std::string& shown, const std::string& contents) {
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC);
  const int open_err = errno;
  user_assert(fd >= 0) << shown << ": cannot write file: "
                       << (open_err == ENXIO ? "no process reads this FIFO" : std::strerror(open_err));
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  bool ok = write_all(fd, contents);
  int err = ok ? 0 : (errno ? errno : EIO);
  if (::close(fd) != 0 && ok) ok = false, err = errno;
  user_assert(ok) << shown << ": write failed: " << std::strerror(err);
}

// The file a path names after its symbolic links (a dangling link names the
// file it would create); the path itself when it is no link.
std::string follow_links(const std::string& path) {
  std::string target = path;
  for (int hops = 0;; ++hops) {
    struct stat ls;
    if (::lstat(target.c_str(), &ls) != 0 || !S_ISLNK(ls.st_mode)) return target;
    user_assert(hops < 40) << path << ": cannot write file: too many levels of symbolic links";
    std::vector<char> buf(static_cast<size_t>(ls.st_size > 0 ? ls.st_size : 4096) + 1);
    ssize_t n = ::readlink(target.c_str(), buf.data(), buf.size() - 1);
    const int err = errno;
    user_assert(n >= 0) << path << ": cannot write file: " << std::strerror(err);
    std::filesystem::path next(std::string(buf.data(), static_cast<size_t>(n)));
    if (next.is_relative()) next = std::filesystem::path(target).parent_path() / next;
    target = next.string();
  }
}

// What an output path names after the checks every write makes: the file
// after its symbolic links (a link stays a link), and its status when it
// exists -- never a folder, never a file this process may not write.
struct OutputTarget {
  std::string path;
  bool exists = false;
  struct stat st {};
};

OutputTarget resolve_output(const std::string& shown) {
  OutputTarget t;
  t.path = follow_links(shown);
  t.exists = ::stat(t.path.c_str(), &t.st) == 0;
  user_assert(!t.exists || !S_ISDIR(t.st.st_mode)) << shown << ": cannot write file: it is a folder";
  // A file its permissions protect from this process is not replaced either.
  user_assert(!t.exists || ::access(t.path.c_str(), W_OK) == 0)
      << shown << ": cannot write file: " << std::strerror(EACCES) << " (the file is not writable)";
  return t;
}

// The outputs whose targets were kept (keep_output_target): the path, as an
// absolute normal path, to the target it named then.
std::mutex& kept_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, std::string>& kept_targets() {
  static std::map<std::string, std::string> kept;
  return kept;
}

std::string absolute_normal(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(path, ec);
  return (ec ? std::filesystem::path(path) : abs).lexically_normal().string();
}

// Refuses a write to `path` when it was kept and now names another file
// than `target` (a link made or changed since).
void check_kept_target(const std::string& path, const std::string& target) {
  std::lock_guard<std::mutex> lock(kept_mutex());
  const auto it = kept_targets().find(absolute_normal(path));
  if (it == kept_targets().end()) return;
  const std::string now = absolute_normal(target);
  user_assert(now == it->second) << path << ": not written: it named " << it->second
                                 << " when the run began and names " << now
                                 << " now (a symbolic link was made or changed during the run)";
}

}  // namespace

std::string output_target(const std::string& path) { return absolute_normal(follow_links(path)); }

void keep_output_target(const std::string& path) {
  if (path.empty() || names_descriptor(path)) return;
  const std::string target = output_target(path);
  std::lock_guard<std::mutex> lock(kept_mutex());
  kept_targets()[absolute_normal(path)] = target;
}

void write_file_atomic(const std::string& path, const std::string& contents) {
  user_assert(!path.empty()) << "cannot write a file with an empty name";
  if (names_descriptor(path)) return write_into(path, path, contents);
  const OutputTarget out = resolve_output(path);
  check_kept_target(path, out.path);
  const std::string& target = out.path;
  const bool exists = out.exists;
  const struct stat& st = out.st;
  if (exists && !S_ISREG(st.st_mode)) {
    // A device or a FIFO: there is nothing to replace, so the bytes go into it.
    return write_into(target, path, contents);
  }
  // A regular file, or none: a temporary file of a name no other process
  // uses, beside the target, then rename.
  std::filesystem::path p(target);
  std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
  // What a process killed outright while writing this file left.
  remove_orphaned_temporaries(dir.string(), "." + p.filename().string() + ".", ".tmp-proxc");
  static std::atomic<unsigned> counter{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    tmp = (dir / ("." + p.filename().string() + "." + std::to_string(::getpid()) + "." +
                  std::to_string(counter++) + ".tmp-proxc"))
              .string();
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);  // the umask applies
    const int err = errno;
    user_assert(fd >= 0 || (err == EEXIST && attempt < 100)) << path << ": cannot write file: " << std::strerror(err);
  }
  const TemporaryFile registered(tmp);  // removed if a signal ends the process before the rename
  bool ok = true;
  if (exists) {
    // Keep the target's owner where this process may set it (else its group,
    // where it may), then its permissions (a chown clears set-id bits).
    if ((st.st_uid != ::geteuid() || st.st_gid != ::getegid()) && ::fchown(fd, st.st_uid, st.st_gid) != 0) {
      if (::fchown(fd, static_cast<uid_t>(-1), st.st_gid) != 0) {
        // Not permitted either: the new file is this process's, as a new file would be.
      }
    }
    ok = ::fchmod(fd, st.st_mode & 07777) == 0;
  }
  int err = ok ? 0 : errno;
  if (ok && !write_all(fd, contents)) ok = false, err = errno ? errno : EIO;
  if (ok && ::fsync(fd) != 0) ok = false, err = errno;  // on disk before the rename makes it visible
  if (::close(fd) != 0 && ok) ok = false, err = errno;
  if (!ok) {
    std::remove(tmp.c_str());
    user_error << path << ": write failed: " << std::strerror(err)
               << (err == ENOSPC ? " (disk full)" : err == EFBIG ? " (over the file size limit, ulimit -f)" : "");
  }
  if (std::rename(tmp.c_str(), target.c_str()) != 0) {
    err = errno;
    std::remove(tmp.c_str());
    user_error << path << ": cannot write file: " << std::strerror(err);
  }
}

void check_output_path(const std::string& path) {
  user_assert(!path.empty()) << "cannot write a file with an empty name";
  if (names_descriptor(path)) return;
  const OutputTarget out = resolve_output(path);
  if (out.exists && !S_ISREG(out.st.st_mode)) return;  // a device or a FIFO is written into
  const std::string& target = out.path;
  std::filesystem::path p(target);
  std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
  struct stat ds;
  user_assert(::stat(dir.c_str(), &ds) == 0)
      << path << ": cannot write file: the folder " << dir.string() << " does not exist";
  user_assert(S_ISDIR(ds.st_mode)) << path << ": cannot write file: " << dir.string() << " is not a folder";
  user_assert(::access(dir.c_str(), W_OK | X_OK) == 0)
      << path << ": cannot write file: the folder " << dir.string() << " is not writable";
}

namespace {
std::vector<std::filesystem::path>& allowed_roots() {
  static std::vector<std::filesystem::path> roots;
  return roots;
}

bool under(const std::filesystem::path& p, const std::filesystem::path& root) {
  std::filesystem::path rel = p.lexically_relative(root);
  return !rel.empty() && *rel.begin() != "..";
}

std::filesystem::path canonical_or_lexical(const std::string& p) {
  std::error_code ec;
  std::filesystem::path c = std::filesystem::weakly_canonical(std::filesystem::absolute(p), ec);
  return ec ? std::filesystem::absolute(p).lexically_normal() : c;
}
}  // namespace

void PathPolicy::allow(const std::string& dir) { allowed_roots().push_back(canonical_or_lexical(dir)); }

void PathPolicy::clear() { allowed_roots().clear(); }

bool PathPolicy::allows(const std::string& path, const std::string& base_dir) {
  std::filesystem::path p = canonical_or_lexical(path);
  if (under(p, canonical_or_lexical(base_dir.empty() ? "." : base_dir))) return true;
  for (const auto& root : allowed_roots()) {
    if (under(p, root)) return true;
  }
  return false;
}

void PathPolicy::check(const std::string& path, const std::string& base_dir, const std::string& written) {
  if (path.find('\0') != std::string::npos) {
    user_error << "the path " << quote_string(written) << " contains a NUL byte; no file has such a name";
  }
  if (allows(path, base_dir)) return;
  std::filesystem::path p = canonical_or_lexical(path);
  user_error << "\"" << written << "\" resolves to " << p.string() << ", outside the problem's folder "
             << canonical_or_lexical(base_dir.empty() ? "." : base_dir).string()
             << "; a problem reads data only from its own folder unless --allow-path DIR allows another";
}

MemberPath split_member_path(const std::string& path) {
  std::string lower = path;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t best = std::string::npos;
  for (const char* ext : {".npz:", ".h5:", ".hdf5:"}) {
    const size_t at = lower.find(ext);
    if (at != std::string::npos && (best == std::string::npos || at < best)) best = at + std::strlen(ext) - 1;
  }
  if (best == std::string::npos) return {path, ""};
  // A file of that very name, or a folder whose name holds the marker
  // ("runs/a.h5:old/b.npy"), is a path, not a member.
  std::error_code ec;
  const size_t slash = path.find_last_of('/');
  if (std::filesystem::exists(path, ec) ||
      (slash != std::string::npos && slash > best && std::filesystem::is_directory(path.substr(0, slash), ec))) {
    return {path, ""};
  }
  return {path.substr(0, best), path.substr(best + 1)};
}

std::string content_hash(const std::string& bytes) {
  XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  char buf[64];
  std::snprintf(buf, sizeof buf, "xxh3-128:%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

}  // namespace proxc::internal

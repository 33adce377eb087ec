#include "support/file_util.h"

#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "support/error.h"
#include "support/format.h"

namespace proxc::internal {

std::string read_file(const std::string& path, int64_t max_bytes) {
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  user_assert(!ec && std::filesystem::exists(status))
      << path << ": cannot open file: no such file or directory";
  user_assert(!std::filesystem::is_directory(status)) << path << ": is a directory, not a file";
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

void write_file_atomic(const std::string& path, const std::string& contents) {
  std::filesystem::path p(path);
  std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
  std::string tmp = (dir / ("." + p.filename().string() + ".tmp-proxc")).string();
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    user_assert(out.good()) << path << ": cannot write file: " << std::strerror(errno);
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    if (!out.good()) {
      std::remove(tmp.c_str());
      user_error << path << ": write failed (disk full?)";
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    user_error << path << ": cannot write file: " << std::strerror(err);
  }
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

void PathPolicy::check(const std::string& path, const std::string& base_dir, const std::string& written) {
  if (path.find('\0') != std::string::npos) {
    user_error << "the path " << quote_string(written) << " contains a NUL byte; no file has such a name";
  }
  std::filesystem::path p = canonical_or_lexical(path);
  if (under(p, canonical_or_lexical(base_dir.empty() ? "." : base_dir))) return;
  for (const auto& root : allowed_roots()) {
    if (under(p, root)) return;
  }
  user_error << "\"" << written << "\" resolves to " << p.string() << ", outside the problem's folder "
             << canonical_or_lexical(base_dir.empty() ? "." : base_dir).string()
             << "; a problem reads data only from its own folder unless --allow-path DIR allows another";
}

std::string content_hash(const std::string& bytes) {
  XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  char buf[64];
  std::snprintf(buf, sizeof buf, "xxh3-128:%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

}  // namespace proxc::internal

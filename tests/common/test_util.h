/// \file
/// Helpers shared by the test programs: paths, temporary folders, running
/// the proxc binary, expecting errors.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "support/error.h"

namespace proxc::internal::test {

inline std::string source_dir() { return PROXC_SOURCE_DIR; }
/// ../shared beside the checkout, or $PROXC_TEST_SHARED_DIR (a GPU bundle's copy: scripts/gpu-run.sh).
inline std::string shared_dir() {
  const char* dir = std::getenv("PROXC_TEST_SHARED_DIR");
  return dir && *dir ? dir : PROXC_SHARED_DIR;
}
inline std::string conformance_dir() { return shared_dir() + "/conformance"; }
/// The GPU target of the tests of the GPU schedule: host-opencl (PoCL runs it
/// on this machine's CPU), or $PROXC_TEST_GPU_TARGET (host-cuda on a GPU
/// machine: scripts/gpu-run.sh).
inline std::string gpu_target() {
  const char* t = std::getenv("PROXC_TEST_GPU_TARGET");
  return t && *t ? t : "host-opencl";
}
/// Whether a backend's target in use is a GPU target's (not its CPU fallback),
/// with doubles on OpenCL (without them: `doubles` false).
inline ::testing::AssertionResult runs_on_gpu(const std::string& target_used, bool doubles = true) {
  const bool opencl = target_used.find("opencl") != std::string::npos;
  if (target_used.find("cuda") == std::string::npos && !opencl) {
    return ::testing::AssertionFailure() << target_used << " is no GPU target: no OpenCL platform (install "
                                         << "pocl-opencl-icd) or no GPU for " << gpu_target() << "?";
  }
  if (opencl && doubles != (target_used.find("cl_doubles") != std::string::npos)) {
    return ::testing::AssertionFailure() << target_used << (doubles ? " lacks" : " has") << " cl_doubles";
  }
  return ::testing::AssertionSuccess();
}

/// Sets an environment variable for its lifetime, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old) old_ = old;
    had_ = old != nullptr;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_)
      ::setenv(name_.c_str(), old_.c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};
#ifdef PROXC_BINARY
inline std::string proxc_binary() { return PROXC_BINARY; }
#endif

/// A fresh empty folder under the test temp dir, named after the running test.
inline std::string temp_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  std::filesystem::path p = std::filesystem::path(::testing::TempDir()) / ("proxc_" + name);
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

/// Writes `text` to `path` (binary).
inline void write_text(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

/// Runs `f`, expects a UserError (not an InternalError, not success), and
/// returns its message.
template <typename F>
std::string user_error_of(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  } catch (const InternalError& e) {
    ADD_FAILURE() << "expected a UserError, got an InternalError: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected a UserError, but the call succeeded";
  return "";
}

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout and stderr together when `merge_stderr`
};

/// Runs a shell command line, capturing its stdout (and stderr with 2>&1).
inline CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// Single-quotes `s` for the shell.
inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// The .prox files under examples/, relative to it ("photos/deblur_lens.prox"), sorted.
inline std::vector<std::string> example_files() {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(source_dir() + "/examples")) {
    if (entry.path().extension() == ".prox") {
      out.push_back(fs::relative(entry.path(), source_dir() + "/examples").generic_string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// A test parameter's name for a path: every character not a letter or digit an underscore.
inline std::string path_param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

}  // namespace proxc::internal::test

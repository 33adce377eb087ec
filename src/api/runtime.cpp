// Process-wide settings of the public API (proxc/runtime.h).
#include "proxc/runtime.h"

#include <cmath>

#include "frontend/plugin.h"
#include "support/array.h"
#include "support/error.h"
#include "support/file_util.h"
#include "support/temporaries.h"

namespace proxc {

void set_max_array_bytes(int64_t bytes) {
  user_assert(bytes > 0) << "set_max_array_bytes: the limit must be > 0, got " << bytes;
  internal::Limits::set_max_array_bytes(bytes);
}

int64_t max_array_bytes() { return internal::Limits::max_array_bytes(); }

void allow_path(const std::string& dir) { internal::PathPolicy::allow(dir); }

std::vector<std::string> load_plugin(const std::string& path) { return internal::load_plugin(path); }

int64_t parse_byte_size(const std::string& s, const std::string& option) {
  size_t idx = 0;
  double v = 0;
  try {
    v = std::stod(s, &idx);
  } catch (...) {
    throw UserError(option + ": expected a size such as 4G or 512M, got '" + s + "'");
  }
  const std::string unit = s.substr(idx);
  const double mult = unit.empty() || unit == "B"    ? 1
                      : unit == "K" || unit == "KiB" ? 1024.0
                      : unit == "M" || unit == "MiB" ? 1024.0 * 1024
                      : unit == "G" || unit == "GiB" ? 1024.0 * 1024 * 1024
                                                     : -1;
  if (mult < 0 || !(v > 0) || !std::isfinite(v) || v * mult > 9.0e18) {
    throw UserError(option + ": expected a size such as 4G or 512M, got '" + s + "'");
  }
  return static_cast<int64_t>(v * mult);
}

void write_file(const std::string& path, const std::string& text) { internal::write_file_atomic(path, text); }

void check_writable(const std::string& path) { internal::check_output_path(path); }

std::string output_target(const std::string& path) { return internal::output_target(path); }

void keep_output_target(const std::string& path) { internal::keep_output_target(path); }

void remove_temporary_files_now() { internal::remove_temporaries_now(); }

const char* version() { return PROXC_VERSION; }

}  // namespace proxc

#include "io/array_io.h"

#include <cctype>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "io/npy.h"
#include "io/png.h"
#include "io/tiff.h"
#include "support/error.h"
#include "support/file_util.h"

namespace proxc::internal::io {

namespace {

constexpr const char* kSupported = ".npy, .png, .tif, .tiff";

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

enum class Format { kNpy, kPng, kTiff, kUnknown };

Format format_of(const std::string& ext) {
  if (ext == ".npy") return Format::kNpy;
  if (ext == ".png") return Format::kPng;
  if (ext == ".tif" || ext == ".tiff") return Format::kTiff;
  return Format::kUnknown;
}

Format format_or_error(const std::string& path) {
  std::string ext = lower_extension(path);
  Format f = format_of(ext);
  if (f == Format::kUnknown) {
    if (ext.empty()) {
      user_error << path << ": no file extension; cannot tell the array format (supported: " << kSupported
                 << ")";
    }
    user_error << path << ": unknown array file extension '"
               << std::filesystem::path(path).extension().string() << "' (supported: " << kSupported << ")";
  }
  return f;
}

}  // namespace

bool has_array_extension(const std::string& path) {
  return format_of(lower_extension(path)) != Format::kUnknown;
}

void check_finite(const Array& a, const std::string& path) {
  for (size_t k = 0; k < a.data.size(); ++k) {
    float v = a.data[k];
    if (std::isfinite(v)) continue;
    const char* what = std::isnan(v) ? "NaN" : (v > 0 ? "Inf" : "-Inf");
    user_error << path << ": entry " << index_to_string(a.shape, static_cast<int64_t>(k)) << " is " << what
               << "; data must be finite";
  }
}

Array load_array(const std::string& path) {
  Array a;
  switch (format_or_error(path)) {
    case Format::kNpy:
      a = read_npy(path);
      break;
    case Format::kPng:
      a = read_png(path);
      break;
    default:
      a = read_tiff(path);
      break;
  }
  check_finite(a, path);
  return a;
}

void check_array_output(const std::string& path) {
  format_or_error(path);
  check_output_path(path);
}

void save_array(const std::string& path, const Array& a) {
  switch (format_or_error(path)) {
    case Format::kNpy:
      write_npy(path, a);
      break;
    case Format::kPng:
      write_png(path, a);
      break;
    default:
      write_tiff(path, a);
      break;
  }
}

}  // namespace proxc::internal::io

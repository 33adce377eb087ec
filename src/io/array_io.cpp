#include "io/array_io.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "io/hdf5.h"
#include "io/npy.h"
#include "io/npz.h"
#include "io/png.h"
#include "io/tiff.h"
#include "support/error.h"
#include "support/file_util.h"

namespace proxc::internal::io {

namespace {

constexpr const char* kSupported = ".npy, .png, .tif, .tiff, .npz:MEMBER, .h5:/DATASET, .hdf5:/DATASET";

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

enum class Format { kNpy, kPng, kTiff, kNpz, kHdf5, kUnknown };

Format format_of(const std::string& ext) {
  if (ext == ".npy") return Format::kNpy;
  if (ext == ".png") return Format::kPng;
  if (ext == ".tif" || ext == ".tiff") return Format::kTiff;
  if (ext == ".npz") return Format::kNpz;
  if (ext == ".h5" || ext == ".hdf5") return Format::kHdf5;
  return Format::kUnknown;
}

// The format of the file `path` names (a container's member path gives the container's).
Format format_or_error(const std::string& full_path) {
  const std::string path = split_member_path(full_path).file;
  std::string ext = lower_extension(path);
  Format f = format_of(ext);
  if (f == Format::kUnknown) {
    if (ext.empty()) {
      std::error_code ec;
      user_assert(!std::filesystem::is_directory(path, ec))
          << path << ": a folder, not an array file (supported: " << kSupported << ")";
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
  return format_of(lower_extension(split_member_path(path).file)) != Format::kUnknown;
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

Array decode_array(const std::string& path, const std::string& bytes) {
  Array a;
  const MemberPath m = split_member_path(path);
  switch (format_or_error(path)) {
    case Format::kNpy:
      a = parse_npy(bytes, path);
      break;
    case Format::kPng:
      a = decode_png(bytes, path);
      break;
    case Format::kNpz:
      a = decode_npz(bytes, m.member, m.file);
      break;
    case Format::kHdf5:
      a = decode_hdf5(bytes, m.member, m.file);
      break;
    default:
      a = decode_tiff(bytes, path);
      break;
  }
  check_finite(a, path);
  return a;
}

Array load_array(const std::string& path, std::string* hash) {
  const Format f = format_or_error(path);  // an unknown extension before the file is read
  const MemoryUse use("reading " + path);  // its decoded array counts against the budget
  // A .npy larger than the largest array allowed as float64 (8 bytes for
  // each of its float32 values) and a header is refused before it is read.
  const double npy_most = 2.0 * static_cast<double>(Limits::max_array_bytes()) + (1 << 20);
  const std::string bytes = f == Format::kNpy
                                ? read_file(path, static_cast<int64_t>(std::min(npy_most, 9.0e18)))
                                : read_file(split_member_path(path).file);
  Array a = decode_array(path, bytes);
  if (hash) *hash = data_hash(path, bytes, a);
  return a;
}

std::string data_hash(const std::string& path, const std::string& file_bytes, const Array& a) {
  if (!split_member_path(path).has_member()) return content_hash(file_bytes);
  std::string bytes = "proxc-array " + shape_to_string(a.shape) + "\n";
  bytes.append(reinterpret_cast<const char*>(a.data.data()), a.data.size() * sizeof(float));
  return content_hash(bytes);
}

void check_array_output(const std::string& path) {
  const Format f = format_or_error(path);
  const MemberPath m = split_member_path(path);
  user_assert(f != Format::kNpz) << path << ": proxc reads .npz archives but does not write them; write .npy, or an HDF5 "
                                 << "dataset (result.h5:/recon)";
  user_assert(f == Format::kHdf5 || !m.has_member()) << path << ": only .npz and HDF5 files hold named arrays";
  if (f == Format::kHdf5) {
    check_hdf5_output(m.file, m.member);
    return;
  }
  check_output_path(path);
}

void save_array(const std::string& path, const Array& a) { save_array(path, a, SaveOptions()); }

bool is_hdf5_path(const std::string& path) {
  return format_of(lower_extension(split_member_path(path).file)) == Format::kHdf5;
}

Hdf5Layout check_save_options(const std::string& path, const Shape& shape, const SaveOptions& options) {
  const Format f = format_or_error(path);
  user_assert(options.is_default() || f == Format::kHdf5 || f == Format::kNpz)
      << path << ": chunks, gzip and shuffle are HDF5 storage; write the array to an HDF5 dataset (result.h5:/recon) "
      << "to use them";
  const MemberPath m = split_member_path(path);
  const bool slash = m.member.empty() || m.member[0] == '/';
  return resolve_hdf5_layout(options, shape, m.file + ":" + (slash ? "" : "/") + m.member);
}

void save_array(const std::string& path, const Array& a, const SaveOptions& options) {
  const Hdf5Layout layout = check_save_options(path, a.shape, options);
  switch (format_or_error(path)) {
    case Format::kNpy:
      write_npy(path, a);
      break;
    case Format::kPng:
      write_png(path, a);
      break;
    case Format::kNpz:
    case Format::kHdf5: {
      check_array_output(path);  // .npz is refused
      const MemberPath m = split_member_path(path);
      write_hdf5(m.file, m.member, a, layout);
      break;
    }
    default:
      write_tiff(path, a);
      break;
  }
}

}  // namespace proxc::internal::io

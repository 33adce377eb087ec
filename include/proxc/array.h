/// \file
/// Dense float32 arrays in NumPy order, and the files they are read from and
/// written to (.npy, .png, .tif/.tiff).
///
///     proxc::Array b = proxc::load_array("blurred.png");   // shape (H, W)
///     proxc::save_array("restored.png", x);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "proxc/error.h"
#include "proxc/save_options.h"

namespace proxc {

namespace internal {
struct Access;
}

/// Extents in NumPy order: (rows, cols[, channels/depth ...]). A rank-0
/// shape is a scalar.
using Shape = std::vector<int64_t>;

/// "(16, 24)": the Python tuple spelling every message uses.
std::string shape_to_string(const Shape& shape);

/// A dense float32 array with a shape, stored in C order. A value type:
/// copies copy the elements, moves are cheap (and leave an empty array).
class Array {
 public:
  /// An empty array: shape (0,), no elements.
  Array();
  /// A zero-filled array. A UserError when the shape has a negative extent
  /// or the array would exceed the memory limit (set_max_array_bytes).
  explicit Array(const Shape& shape);
  /// An array holding `values` (C order; as many as the shape has elements).
  Array(const Shape& shape, const std::vector<float>& values);
  Array(const Array& other);
  Array(Array&& other) noexcept;
  Array& operator=(const Array& other);
  Array& operator=(Array&& other) noexcept;
  ~Array();

  const Shape& shape() const;
  int rank() const;
  /// The number of elements.
  int64_t size() const;
  const float* data() const;
  /// The elements, to write: the array forgets the file it was read from
  /// (so does the non-const operator[]; read through a const Array to keep
  /// it).
  float* data();
  float operator[](int64_t i) const { return data()[i]; }
  float& operator[](int64_t i) { return data()[i]; }
  std::vector<float> to_vector() const;

  /// The file load_array read it from ("" for an array made in memory or
  /// written through data() since): a problem built from it prints
  /// load("path") and records the file's content hash. Making expressions of
  /// one Array object on several threads at once is not safe (the Array
  /// keeps the constant node it became); copies are independent.
  const std::string& source_path() const;

  struct Impl;

 private:
  friend struct internal::Access;
  // The implementation; a moved-from handle (impl_ null) reads as a new one
  // and makes one when written.
  const Impl& impl() const;
  Impl& impl();
  std::unique_ptr<Impl> impl_;
};

/// Reads an array, the format chosen by the extension (case-insensitive):
/// .npy (any real dtype, converted to float32), .png (grey → (H, W), colour →
/// (H, W, 3), scaled to [0, 1]), .tif/.tiff (several pages of one shape: a
/// stack (pages, H, W[, 3])), a member of an .npz archive ("frames.npz:noisy";
/// the only one when unnamed) or an HDF5 dataset ("scan.h5:/entry/data"; the
/// only one when unnamed). A UserError names the path and the reason (unknown
/// extension, unreadable, a missing member listing those there are, NaN or
/// Inf entries).
Array load_array(const std::string& path);

/// Writes `a` in the format the extension names (PNG at 8 bits, values
/// clamped to [0, 1]; TIFF as float32, a 3-D array (D, H, W) as D pages; an
/// HDF5 dataset "result.h5:/recon" as float32, added to an existing file),
/// whole or not at all (.npz is read only). A UserError for an unknown
/// extension or a shape the format cannot hold.
void save_array(const std::string& path, const Array& a);

/// The same, an HDF5 dataset stored as `options` say (chunked, gzip,
/// shuffle). A UserError for options that do not fit the array (a chunk
/// shape of another rank, or larger than the array) or a format other than
/// HDF5 given any but the default options.
void save_array(const std::string& path, const Array& a, const SaveOptions& options);

/// Throws the UserError save_array would throw for `path` alone: an unknown
/// extension, a missing or unwritable folder, a folder or a file that is not
/// writable in its place. Checks an output before a long solve.
void check_save_path(const std::string& path);

/// The same, and the UserError save_array(path, an array of `shape`,
/// options) would throw for the options.
void check_save_path(const std::string& path, const Shape& shape, const SaveOptions& options);

/// True when load_array and save_array handle the extension of `path`.
bool has_array_extension(const std::string& path);

/// True when `path` names an HDF5 file or a dataset in one (.h5, .hdf5 in
/// any letter case): where SaveOptions apply.
bool is_hdf5_path(const std::string& path);

/// Peak signal-to-noise ratio in dB, peak 1 (images in [0, 1]).
double psnr(const Array& x, const Array& reference);

/// Structural similarity (Wang et al. 2004) as scikit-image's
/// structural_similarity(x, ref, data_range=1, gaussian_weights=True,
/// sigma=1.5, use_sample_covariance=False[, channel_axis=-1]) computes it:
/// an 11-tap Gaussian window of sigma 1.5, K1 = 0.01, K2 = 0.03, dynamic
/// range 1, averaged over the pixels whose window lies inside the image (5
/// pixels off each border; every pixel, the window clamped at the borders,
/// for an image of at most 10 pixels a side) and over channels (the last
/// axis of a 3-D array). tests/python/test_metrics.py checks the values.
double ssim(const Array& x, const Array& reference);

/// The images left to right with a `gap`-pixel white column between them,
/// values clamped to [0, 1]; (H, W) or (H, W, 3), of the same H. `names`
/// (one per image, or empty) name the images in messages.
Array montage(const std::vector<Array>& images, const std::vector<std::string>& names = {}, int64_t gap = 4);

}  // namespace proxc

/// \file
/// Reading and writing TIFF images as float32 arrays.
///
/// Reading takes every full-resolution page (a stack) of strip- or tile-organised images with 8, 16
/// or 32-bit unsigned integer samples (scaled to [0, 1]) or 32/64-bit float
/// samples (kept as they are). Writing produces uncompressed float32 images.
/// libtiff's error and warning messages are captured, never printed.
#pragma once

#include <string>

#include "support/array.h"

namespace proxc::internal::io {

/// Reads the TIFF file at `path`: its full-resolution pages (reduced-resolution
/// ones, thumbnails and pyramid levels, are skipped), one page as (H, W) or
/// (H, W, 3), several of one shape as a stack along a new first axis
/// (pages, H, W[, 3]) (a z-stack, a time series); pages of different shapes
/// are a UserError. One sample per pixel (or gray + alpha) gives (H, W);
/// three or four samples give (H, W, 3), dropping the fourth. 8-, 16- and 32-bit unsigned integers are divided by
/// 255, 65535 and 4294967295; 32- and 64-bit floats are kept as they are.
/// Contiguous and separate planar configurations, strips and tiles are all
/// read. Throws UserError naming the path for a file that cannot be read, is
/// empty or malformed ("PATH: malformed TIFF: <libtiff message>"), an
/// unsupported layout or sample type, or an image too large for
/// Limits::max_array_bytes() (checked before allocating the image).
Array read_tiff(const std::string& path);

/// Decodes TIFF `bytes` (as read_tiff does with a file's bytes); `path`
/// names them in messages.
Array decode_tiff(const std::string& bytes, const std::string& path);

/// Writes `a` to `path` as an uncompressed float32 TIFF: one sample per pixel
/// for shape (H, W) or (H, W, 1), RGB for (H, W, 3); a stack of pages for
/// (D, H, W) (last extent not 1 or 3) and (D, H, W, 1 | 3), read back as the
/// same array. The image is written to a
/// temporary file in the same folder, which is renamed over `path` on success
/// and removed on failure. Throws UserError for another shape, an empty image
/// or a write failure.
void write_tiff(const std::string& path, const Array& a);

}  // namespace proxc::internal::io

/// \file
/// Reading and writing PNG images as float32 arrays with values in [0, 1].
///
/// Stored sample values are scaled linearly (by 1/255 or 1/65535); no gamma or
/// colour-space conversion is applied in either direction, and alpha is
/// dropped on reading.
#pragma once

#include <string>

#include "support/array.h"

namespace proxc::internal::io {

/// Reads the PNG file at `path`. Grayscale images (any bit depth, with or
/// without alpha) give shape (H, W); colour and palette images give
/// (H, W, 3). Samples are scaled to [0, 1]: 8-bit (and lower, which libpng
/// expands to 8) by 1/255, 16-bit by 1/65535. Throws UserError naming the
/// path for a file that cannot be read, is empty, truncated or malformed
/// ("PATH: malformed PNG: <reason>"), or an image too large for
/// Limits::max_array_bytes() (checked before allocating the image).
Array read_png(const std::string& path);

/// Decodes PNG `bytes` (as read_png does with a file's bytes); `path` names
/// them in messages.
Array decode_png(const std::string& bytes, const std::string& path);

/// Writes `a` to `path` as a PNG image of `bit_depth` 8 or 16 bits per sample:
/// grayscale for shape (H, W) or (H, W, 1), RGB for (H, W, 3). Values are
/// clamped to [0, 1], scaled and rounded to the nearest integer. The file is
/// encoded in memory and written atomically. Throws UserError for another
/// shape, an empty image, a bit depth other than 8 or 16, a NaN entry, or a
/// write failure.
void write_png(const std::string& path, const Array& a, int bit_depth = 8);

}  // namespace proxc::internal::io

/// \file
/// Reading and writing NumPy .npy files as float32 arrays.
///
/// Reading accepts format versions 1.0, 2.0 and 3.0, C or Fortran order, and the
/// numeric dtypes float32, float64, (u)int8/16/32/64 and bool in either byte
/// order; every value is converted to float32. Writing always produces version
/// 1.0, dtype '<f4', C order, with the header padded so the data starts at a
/// multiple of 64 bytes, as the NumPy format specification recommends.
#pragma once

#include <string>

#include "support/array.h"

namespace proxc::internal::io {

/// Decodes the bytes of a .npy file. `path_for_messages` names the file in
/// every error. Throws UserError for a malformed file (bad magic, truncated
/// header or data, trailing bytes, a bad header dictionary, a negative shape,
/// rank above 8), an unsupported dtype, a float64 value outside the float32
/// range, or an array too large for Limits::max_array_bytes() (checked before
/// anything is allocated).
Array parse_npy(const std::string& bytes, const std::string& path_for_messages);

/// Encodes `a` as a version 1.0 .npy file: dtype '<f4', C order, header padded
/// to a multiple of 64 bytes and ended by a newline.
std::string encode_npy(const Array& a);

/// Reads the .npy file at `path` (see parse_npy). Throws UserError naming the
/// path when it cannot be read or is malformed.
Array read_npy(const std::string& path);

/// Writes `a` to `path` as a .npy file (see encode_npy), atomically: the file
/// is either replaced whole or left untouched. Throws UserError on failure.
void write_npy(const std::string& path, const Array& a);

}  // namespace proxc::internal::io

/// \file
/// Reading one array of a NumPy .npz archive (np.savez, np.savez_compressed).
#pragma once

#include <string>
#include <vector>

#include "support/array.h"

namespace proxc::internal::io {

/// The arrays an .npz archive holds, by the names np.load gives them (the
/// member's name without ".npy"), in archive order. Throws UserError naming
/// `path_for_messages` when the bytes are not a readable zip archive.
std::vector<std::string> npz_members(const std::string& bytes, const std::string& path_for_messages);

/// Decodes the array `member` of the .npz archive in `bytes` ("noisy" or
/// "noisy.npy"; "" when the archive holds exactly one array) with parse_npy.
/// The member's uncompressed size is checked against Limits::max_array_bytes()
/// before it is inflated, and the bytes read must match it (and its CRC).
/// Throws UserError for a malformed archive, a missing member (listing the
/// members there are), an empty archive, or an archive of several arrays
/// when no member is named.
Array decode_npz(const std::string& bytes, const std::string& member, const std::string& path_for_messages);

}  // namespace proxc::internal::io

/// \file
/// Side-by-side images: the demo's "input | degraded | restored".
#pragma once

#include <string>
#include <vector>

#include "support/array.h"

namespace proxc::internal::io {

/// The images left to right with a `gap`-pixel white column between them,
/// values clamped to [0, 1]. Each image is (H, W) or (H, W, 3) with the same
/// H; grey images are repeated into 3 channels when any image has colour.
/// A UserError names the image (by `names`) and both shapes otherwise.
Array montage(const std::vector<Array>& images, const std::vector<std::string>& names, int64_t gap = 4);

}  // namespace proxc::internal::io

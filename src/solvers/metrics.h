/// \file
/// Image quality against a ground truth: PSNR and SSIM.
#pragma once

#include "support/array.h"

namespace proxc::internal {

/// Peak signal-to-noise ratio in dB, with peak 1 (images in [0, 1]).
double psnr(const Array& x, const Array& reference);

/// Structural similarity (Wang et al. 2004): Gaussian window sigma 1.5,
/// K1 = 0.01, K2 = 0.03, dynamic range 1, averaged over pixels (and channels:
/// the last axis of a 3-D array is taken as channels).
double ssim(const Array& x, const Array& reference);

}  // namespace proxc::internal

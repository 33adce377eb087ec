/// \file
/// Double-precision FFTs (FFTW) for circulant operators: the transfer
/// function of a convolution kernel and the solve of circulant systems.
///
/// Conventions follow docs/semantics.md: conv(k, x) over the first k.ndim
/// axes of x, kernel origin at k[size//2] on each axis, so that
///   conv(k, x) = real(ifft(fft(x) · otf)),
///   otf = fft(circshift(zeropad(k, x.shape[:r]), −(size//2))).
#pragma once

#include <complex>
#include <vector>

#include "support/array.h"

namespace proxc::internal::fft {

/// The transfer function of kernel `k` for signals of extents `dims`
/// (k.rank() == dims.size()), in FFTW's r2c layout: the last axis has
/// dims.back()/2 + 1 entries.
std::vector<std::complex<double>> kernel_otf(const Array& k, const Shape& dims);

/// The largest |otf| over all frequencies: the exact operator norm of the
/// circular convolution by `k` on signals of extents `dims`.
double conv_norm(const Array& k, const Shape& dims);

/// Solves (a·|otf|² + c) x = rhs for x, with the circulant operator of `k`
/// applied over the first k.rank() axes of `rhs` (shape `shape`) and
/// independently for each trailing index. Requires a·|otf|² + c > 0.
/// In place on `rhs` (row-major, `shape`).
void circulant_solve(const Array& k, const Shape& shape, double a, double c, DoubleData* rhs);

}  // namespace proxc::internal::fft

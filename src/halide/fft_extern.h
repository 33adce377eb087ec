/// \file
/// The FFTW extern stage of Halide pipelines: the circulant solve
/// (a·|otf|² + c) x = rhs in single precision, plans cached per size.
#pragma once

#include <HalideRuntime.h>

#include <cstdint>
#include <vector>

namespace proxc::internal {
/// The FFT geometry of an FFT stage's real buffer: its last `spatial_rank`
/// Halide dimensions are the spatial (numpy leading) axes, in numpy order in
/// `spatial` (the last one the innermost, halved by r2c); the dimensions
/// inside them are channels, each transformed on its own; n and half: the
/// real and half-spectrum points of one channel.
struct FftLayout {
  std::vector<int> spatial;
  int64_t channels = 1, n = 1, half = 1;
  FftLayout(const halide_buffer_t* real, int spatial_rank) {
    const int first = real->dimensions - spatial_rank;
    for (int i = real->dimensions - 1; i >= first; --i) spatial.push_back(real->dim[i].extent);
    for (int i = 0; i < first; ++i) channels *= real->dim[i].extent;
    for (int e : spatial) n *= e;
    half = n / spatial.back() * (spatial.back() / 2 + 1);
  }
};

/// FFTW's r2c (`forward`) or unscaled c2r transform of each channel of a
/// dense float buffer: element (channel ch, spatial flat index f) at
/// ch + f·channels; the half spectrum's complex element k of channel ch at
/// floats 2·(ch + k·channels) and the one after (see device_fft.h). The
/// host path of a device FFT stage for sizes the device library cannot plan.
void host_fft(const std::vector<int>& spatial, int64_t channels, bool forward, const float* in, float* out);
}  // namespace proxc::internal

extern "C" {
/// rhs, out: float buffers of the same shape, numpy axes (d0, ..., d_{r-1},
/// trailing channels) stored Halide-style (dimension 0 innermost). otf2: the
/// float buffer |otf|² in FFTW's r2c layout over the r spatial axes, whose
/// count is `spatial_rank`. a, c: the scalars. Handles Halide's bounds
/// queries.
int proxc_circulant_solve(halide_buffer_t* rhs, halide_buffer_t* otf2, double a, double c, int spatial_rank,
                          halide_buffer_t* out);

/// Circular convolution by FFT: out = ifft(otf · fft(x)) (adjoint: with the
/// conjugate otf, a correlation) over the last `spatial_rank` Halide
/// dimensions of x and out (the numpy leading axes), each trailing channel on
/// its own. otf: float buffer of the kernel's transfer function in FFTW's r2c
/// layout with (re, im) as dimension 0. Handles Halide's bounds queries.
int proxc_fft_conv(halide_buffer_t* x, halide_buffer_t* otf, int spatial_rank, int adjoint, halide_buffer_t* out);

/// Where FFTW's wisdom is kept (a file, made and replaced whole; nullptr or
/// "" for none, the default). With a file, transforms of at least 2^20
/// points are planned with FFTW_MEASURE, once per size: the planner times
/// candidate algorithms (1 to 3 s for a 1024² or 2048² pair on 2 cores) and
/// the plans are kept in the file for later processes; at 2048² such a plan
/// ran the pair 1.5–2× as fast as FFTW_ESTIMATE's here. Without one,
/// every size is planned with FFTW_ESTIMATE (no timing, no files). Call it
/// before the first transform of a size: plans are made once per process.
void proxc_fft_set_wisdom_file(const char* path);
}

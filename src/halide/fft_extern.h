/// \file
/// The FFTW extern stage of Halide pipelines: the circulant solve
/// (a·|otf|² + c) x = rhs in single precision, plans cached per size.
#pragma once

#include <HalideRuntime.h>

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
}

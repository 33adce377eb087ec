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
}

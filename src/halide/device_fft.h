/// \file
/// FFT extern stages that run on the GPU, on the buffers a GPU pipeline
/// keeps there: clFFT for OpenCL, cuFFT for CUDA. Both libraries are loaded
/// when first used (dlopen), so proxc runs where neither is installed.
///
/// A device pipeline's circulant solve and FFT convolution are three stages
/// (Graph::circulant_solve, Graph::fft_conv with a device FFT): this r2c
/// transform, a filter of the half spectrum that is a Halide kernel of its
/// own, and the c2r transform, which does not scale (the filter applies the
/// 1/n). The spectrum is a float buffer with (re, im) as dimension 0, then
/// the dimensions of the real buffer with the innermost spatial one halved
/// (n/2 + 1), as FFTW's, clFFT's and cuFFT's r2c transforms lay it out.
#pragma once

#include <HalideRuntime.h>

namespace proxc::internal {

/// The GPU APIs a device FFT runs on; the numbers are the extern stages' `api` argument.
enum class DeviceFftApi : int { None = 0, OpenCl = 1, Cuda = 2 };

/// Whether this machine can run the device FFT of `api`: its library loads
/// (libclFFT and libOpenCL; libcufft and libcuda; $PROXC_CLFFT or
/// $PROXC_CUFFT, where set, is the FFT library's file). Asked once per process.
bool device_fft_loads(DeviceFftApi api);

/// The library's name and version as --json reports it ("clFFT 2.12.2",
/// "cuFFT 11.0.1"), or "" when it does not load.
const char* device_fft_library(DeviceFftApi api);

/// Transforms a device stage of this process handed to FFTW on the host:
/// sizes clFFT does not plan, more than 3 spatial axes on CUDA, or a
/// library that does not load where the pipeline runs (code compiled for a
/// machine that has it).
int device_fft_host_fallbacks();

}  // namespace proxc::internal

extern "C" {
/// r2c transform over the last `spatial_rank` Halide dimensions of `in`
/// (the numpy leading axes; dimensions before them are channels, each
/// transformed on its own), on the device of `api`. `n0`: the extent of
/// the innermost spatial dimension (the spectrum's is n0/2 + 1). Handles
/// Halide's bounds queries. OpenCL sizes that clFFT cannot plan (a prime
/// factor above 13) are transformed on the host with FFTW, with copies.
int proxc_fft_r2c_device(halide_buffer_t* in, int spatial_rank, int n0, int api, halide_buffer_t* spectrum);

/// The inverse c2r transform, unscaled.
int proxc_fft_c2r_device(halide_buffer_t* spectrum, int spatial_rank, int api, halide_buffer_t* out);
}

/// \file
/// The Halide backend on the tests' GPU target (test::gpu_target(): OpenCL on
/// PoCL here, $PROXC_TEST_GPU_TARGET on a GPU machine), made once per test
/// program, without the on-disk cache.
#pragma once

#include <memory>

#include "halide/halide_backend.h"
#include "test_util.h"

namespace proxc::internal::test {

/// A new one (its target decided now: PROXC_OPENCL_DOUBLES as set at the call).
inline std::unique_ptr<Backend> make_gpu_backend() {
  HalideOptions o;
  o.target = gpu_target();
  o.cache_dir = "off";
  return make_halide_backend(o);
}

inline Backend& gpu_backend() {
  static std::unique_ptr<Backend> b = make_gpu_backend();
  return *b;
}

}  // namespace proxc::internal::test

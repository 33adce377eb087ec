/// \file
/// The Halide backend on the tests' GPU target (test::gpu_target(): OpenCL on
/// PoCL here, $PROXC_TEST_GPU_TARGET on a GPU machine), made once per test
/// program, without the on-disk cache.
#pragma once

#include <memory>

#include "halide/halide_backend.h"
#include "test_util.h"

namespace proxc::internal::test {

inline Backend& gpu_backend() {
  static std::unique_ptr<Backend> b = [] {
    HalideOptions o;
    o.target = gpu_target();
    o.cache_dir = "off";
    return make_halide_backend(o);
  }();
  return *b;
}

}  // namespace proxc::internal::test

/// \file
/// The Halide backend: each step program becomes one fused Halide pipeline,
/// JIT-compiled for the host (or a given target) and cached in the process by
/// a structural key, so new data, scalars or image sizes reuse the compiled
/// code.
#pragma once

#include <memory>
#include <string>

#include "step/backend.h"

namespace proxc {

struct HalideOptions {
  /// A Halide target string ("host", "host-cuda", ...).
  std::string target = "host";
};

std::unique_ptr<Backend> make_halide_backend(const HalideOptions& options = {});

/// How many pipelines this process has JIT-compiled (for tests of the cache).
int halide_compile_count();

/// Halide's lowered statement (`stmt`), C code (`c`) or HTML (`html`) of the
/// pipeline of `program`, for reading.
std::string halide_emit(const StepProgram& program, const std::string& kind, const HalideOptions& options = {});

}  // namespace proxc

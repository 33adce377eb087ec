/// \file
/// The Halide backend: each step program becomes one fused Halide pipeline,
/// JIT-compiled for the host (or a given target) and cached in the process by
/// a structural key, so new data, scalars or image sizes reuse the compiled
/// code.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "proxc/module.h"
#include "step/backend.h"

namespace proxc::internal {

struct HalideOptions {
  /// A Halide target string ("host", "host-cuda", ...).
  std::string target = "host";
  /// "default" (proxc's hand-written CPU schedule) or an autoscheduler:
  /// "mullapudi2016", "adams2019", "li2018" (Debian's Halide plugins). When
  /// the autoscheduler fails, the default is used and a warning printed.
  std::string schedule = "default";
  /// Compiled pipelines are kept here as shared objects keyed by a hash of
  /// the pipeline's structure, the target, the schedule and this build of
  /// proxc, so that a second process loads them instead of compiling. Empty:
  /// $PROXC_CACHE_DIR, else $XDG_CACHE_HOME/proxc, else ~/.cache/proxc;
  /// "off" (or PROXC_CACHE_DIR=off): no on-disk cache.
  std::string cache_dir;
};

/// The autoscheduler names --schedule accepts besides "default".
const std::vector<std::string>& halide_schedules();
/// Throws UserError for a name that is not "default" or an autoscheduler.
void check_schedule_name(const std::string& schedule);

/// The folder options.cache_dir resolves to ("" when the cache is off).
std::string halide_cache_dir(const HalideOptions& options);

std::unique_ptr<Backend> make_halide_backend(const HalideOptions& options = {});

/// How many pipelines this process has compiled (JIT or into the on-disk
/// cache), and how many it loaded from the on-disk cache (for tests).
int halide_compile_count();
int halide_cache_load_count();
/// Drops this process's compiled pipelines (the on-disk cache stays): the
/// next compile is what a new process would do. For benchmarks and tests.
void halide_forget_compiled();

/// |otf|² of `kernel` for signals of extents `dims` in FFTW's r2c layout: the
/// "spectrum" argument a circulant solve takes (the caller of an AOT library
/// computes it; the JIT path does so itself).
Array kernel_spectrum(const Array& kernel, const Shape& dims);

/// The transfer function of `kernel` for signals of extents `dims` in
/// FFTW's r2c layout, (re, im) as the last axis: the "otf" argument of an FFT
/// convolution (convolutions with at least 100 taps run by FFT).
Array kernel_otf_array(const Array& kernel, const Shape& dims);

/// Compiles `program` ahead of time into `dir` as a static library + header
/// that a plain C++ program links and calls without proxc or LLVM (plus
/// libproxc_runtime.a and FFTW when the program has circulant solves).
AotArtifacts halide_compile_aot(const StepProgram& program, const std::string& dir, const std::string& name,
                                const HalideOptions& options = {});

/// Halide's lowered statement (`stmt`), C code (`c`) or HTML (`html`) of the
/// pipeline of `program`, for reading; or (`source`) the standalone C++
/// generator program that builds the same pipeline from proxc/halide_ops.h.
std::string halide_emit(const StepProgram& program, const std::string& kind, const HalideOptions& options = {});

}  // namespace proxc::internal

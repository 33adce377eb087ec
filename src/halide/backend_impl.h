/// \file
/// The Halide backend's insides, shared by its files: the JIT cache
/// (jit_cache.cpp), the on-disk cache (disk_cache.cpp), the autoschedulers
/// (autoschedule.cpp), ahead-of-time compilation (aot.cpp), the printed forms
/// (emit.cpp), the common helpers (backend_common.cpp) and the backend that
/// runs compiled programs (halide_backend.cpp). Only src/halide includes it.
#pragma once

#include <Halide.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "fft/fft.h"
#include "halide/black_box_extern.h"
#include "halide/device_fft.h"
#include "halide/fft_extern.h"
#include "halide/halide_backend.h"
#include "halide/lower.h"
#include "support/blocks.h"
#include "support/error.h"
#include "support/file_util.h"
#include "support/shared_folder.h"

namespace proxc::internal {

using halide_ops::Graph;

// ---- backend_common.cpp ----

/// Pipelines compiled (JIT or into the on-disk cache) and loaded from the
/// on-disk cache by this process.
extern std::atomic<int> g_compiles;
extern std::atomic<int> g_cache_loads;

/// f(), with a Halide error rethrown as a std::runtime_error: Halide 21's
/// errors are not std::exceptions, and the backend's callers (the API, the
/// command line's "out of memory while compiling") catch those.
template <typename F>
auto halide_boundary(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Halide::Error& e) {
    throw std::runtime_error(e.what());
  }
}

/// Bytes an address-space limit (ulimit -v) leaves this process; infinity
/// without a limit.
double address_space_left();
/// Refuses (UserError, "out of memory") a compile with less than 128 MiB of
/// address space left: LLVM does not survive running out of memory (Halide
/// 21's LLVM may abort on an assertion instead of failing). Under a limit the
/// backend compiles one pipeline at a time, so that each finds the room it
/// checked.
void check_compile_room();
/// "" when files of 1 GiB may be written, else what limits them ("a file
/// size limit of 100.0 KiB is set (ulimit -f)"). LLVM ends the process
/// (exit 1, "IO failure on output stream") when a write of an object passes
/// the limit, so what LLVM writes is not started under one: the cache is
/// used read-only, an AOT compile is refused. No object comes near 1 GiB.
std::string file_size_limit_below_objects();

/// The target of a --target string, with proxc's default features.
Halide::Target parse_target(const std::string& s, bool this_machine = true);
/// t's target string without its GPU features (cuda, opencl, metal, ... and
/// their capability features): the CPU part, for a target proxc has no GPU
/// schedule for.
std::string without_gpu_features(const Halide::Target& t);
/// The schedule proxc's own lowering uses for t: Gpu for CUDA and for OpenCL
/// with cl_doubles, GpuFloat for OpenCL without it (kernels without
/// doubles), else the default CPU schedule.
halide_ops::Schedule schedule_for(const Halide::Target& t);
/// Where t's GPU schedule runs its FFT stages (Graph::device_fft's api): on
/// the device where this machine loads the target's FFT library (clFFT for
/// OpenCL, cuFFT for CUDA), else 0 (FFTW on the host, with copies);
/// $PROXC_DEVICE_FFT=0 keeps them on the host, =1 on the device whether or
/// not the library loads here (code for a machine that has it). 0 for a
/// target without a GPU feature.
int device_fft_for(const Halide::Target& t);
/// Where a backend's FFT stages ran, as --json's "target" reports it, from
/// the kinds its pipelines had (Part::fft_stages: -1 FFTW on the host, else
/// the device_fft api): "none", "FFTW (host)", the device library ("clFFT
/// 2.12.2 (device)"), both joined by " and "; a device stage that handed a
/// size to FFTW on the host says so.
std::string fft_report(const std::set<int>& stages);
/// p lowered with t's schedule and FFT stages (schedule_for, device_fft_for).
hl::Lowered lower_for(const StepProgram& p, const Halide::Target& t);
/// Why this machine cannot run t's GPU code ("" when it can): the driver
/// library Halide loads (libcuda.so, libOpenCL.so) or a device is missing, or
/// the GPU API is not one proxc schedules for (CUDA, OpenCL).
std::string gpu_unavailable(const Halide::Target& t);
/// t for proxc's GPU schedules: OpenCL with cl_doubles (the check's sums and
/// the scalars are doubles) where every OpenCL device of this machine has
/// double precision (cl_khr_fp64: PoCL and NVIDIA's do; many Intel and ARM
/// GPUs do not) or no device answers, or where t names cl_doubles itself;
/// $PROXC_OPENCL_DOUBLES=0 or 1 decides instead of the devices. Code for
/// another machine (`this_machine` false: AOT, printed sources) has
/// cl_doubles unless $PROXC_OPENCL_DOUBLES=0.
Halide::Target with_gpu_features(Halide::Target t, bool this_machine = true);
/// Whether OpenCL code gets doubles: $PROXC_OPENCL_DOUBLES (0 or 1) if set;
/// else, with ask_devices, whether every OpenCL device of this machine has
/// double precision (true when there is none to ask); else true.
bool opencl_has_doubles(bool ask_devices = true);
/// The same for code compiled ahead of time ("host": this machine's, not the
/// JIT's; OpenCL's doubles as with_gpu_features for another machine).
Halide::Target aot_target(const std::string& s);
/// Halide's extents of a numpy-order shape (reversed).
std::vector<int> halide_dims(const Shape& s);
/// A Halide buffer over an array's elements (no copy).
Halide::Buffer<float> wrap(const Array& a);
/// Halide's allocations from the block store (support/blocks.h).
void* cached_malloc(Halide::JITUserContext*, size_t n);
void cached_free(Halide::JITUserContext*, void* ptr);
void* raw_malloc(void*, size_t n);
void raw_free(void*, void* p);
/// "proxc: warning: ..." on stderr.
void warn(const std::string& what);
/// How warnings name a step program.
std::string program_label(const StepProgram& p);
std::string shell_quote(const std::string& s);
/// Runs a shell command; its exit status, and its output in *log.
int run_command(const std::string& cmd, std::string* log);

/// What identifies this build of proxc and Halide in cache keys.
constexpr const char* kBuildId = "proxc " __DATE__ " " __TIME__ " halide " PROXC_HALIDE_LIBRARY;

// ---- autoschedule.cpp ----

struct Autoscheduler {
  const char* option;  // --schedule value
  const char* name;    // its registered name
  const char* plugin;  // its library ("" when this build has none)
};

const Autoscheduler* find_autoscheduler(const std::string& s);
/// The plugin library of an autoscheduler: in $PROXC_HALIDE_PLUGIN_DIR when
/// set (a Halide built elsewhere), else where Debian's Halide put it.
std::string plugin_path(const Autoscheduler& a);
/// Warns that an autoscheduler's schedule did not work (`head` says how;
/// `why`: Halide's message) and the default schedule is used instead.
void warn_schedule_fallback(const std::string& head, std::string why);
/// Lowers `p` with the schedule asked for. An autoscheduler that fails (or
/// is missing) leaves the default schedule and a warning; *used says which ran.
hl::Lowered lower_scheduled(const StepProgram& p, const std::string& schedule, const Halide::Target& t,
                            std::string* used);

// ---- disk_cache.cpp ----

using ArgvFunction = int (*)(void**);

struct LoadedLibrary {
  void* handle = nullptr;
  ArgvFunction fn = nullptr;
  int num_arguments = 0;
};

/// What the last failed call of a cached pipeline on this thread reported.
extern thread_local std::string g_halide_error;
/// Opens a cached pipeline; nothing (and a warning) when it is unusable.
/// Callers check it with verify_cache_entry first.
bool load_library(const std::string& path, int expected_args, LoadedLibrary* out);
/// Whether the cache entry `so` (a pipeline or a shared runtime) holds the
/// bytes written for its name: its sidecar `<so>.sum` records a checksum of
/// the file's name and bytes at write time, so a truncated, rotten or
/// swapped entry is found before dlopen maps it. A bad entry gets a warning
/// and is built again (which replaces it and its sidecar).
bool verify_cache_entry(const std::string& so);
/// The folder's shared runtime for t (built, or verified and rebuilt when
/// damaged, at most once per process): its file name, or "" when it cannot
/// be built.
std::string cache_runtime(const std::string& dir, const Halide::Target& t);
/// Whether the C++ compiler that links cache entries ($CXX, else c++) is
/// there; a warning, once, when it is not.
bool cache_linker_available();
/// Compiles L into <dir>/<hash>.so (written whole or not at all), against
/// the folder's shared runtime; false and a warning when it cannot.
bool compile_to_cache(hl::Lowered& L, const Halide::Target& t, const std::string& so_path,
                      bool trusted_schedule);
/// The cache folder `dir` and what it may be used for (support/shared_folder.h),
/// made this user's alone (mode 0700) when it is not there.
FolderTrust prepare_cache_folder(const std::string& dir);
/// Keeps the cache folder under 1 GiB: the least recently written entries go first.
void prune_cache(const std::string& dir);

// ---- jit_cache.cpp ----

// A compiled pipeline shared by every program with the same structural key:
// JIT-compiled, or a shared object from the on-disk cache.
struct Entry {
  hl::Lowered lowered;  // the JIT pipeline (when `library` is not loaded)
  LoadedLibrary library;
  std::string schedule_used = "default";
  std::mutex mutex;  // binding parameters and running are not reentrant
  // Held while the entry is built: another thread wanting the same pipeline
  // waits for it instead of compiling it again.
  std::mutex build_mutex;
  bool built = false;
};

/// The compiled pipeline of p (lowered into *mine): this process's, the
/// on-disk cache's, or compiled now. Thread-safe: different pipelines
/// compile at once.
std::shared_ptr<Entry> compiled_entry(const StepProgram& p, const HalideOptions& o,
                                      const Halide::Target& target, hl::Lowered* mine);

}  // namespace proxc::internal

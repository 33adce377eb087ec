/// \file
/// proxc::Module: one compiled program of a solver (an iteration, fused or
/// not, or a step of the CG x-update) that runs compiled by Halide, runs in
/// software emulation (the reference interpreter, the ground truth), prints
/// its own standalone source and compiles ahead of time into a library.
///
///     proxc::CompileOptions options;
///     options.solver = proxc::SolverKind::LinearizedADMM;
///     proxc::Module m = proxc::compile(problem, options);
///     std::string cpp = m.source();              // a standalone Halide generator
///     proxc::AotArtifacts a = m.compile_aot("out", "deconv_step");
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "proxc/array.h"
#include "proxc/kinds.h"
#include "proxc/problem.h"

namespace proxc {

/// What compile() builds and how.
struct CompileOptions {
  SolverKind solver = SolverKind::PockChambolle;
  /// Which program of the solver.
  ProgramKind program = ProgramKind::Iteration;
  /// Iterations unrolled into the iteration program (pc, ladmm).
  int fuse = 1;
  /// A Halide target string ("host", "x86-64-linux-avx2", ...).
  std::string target = "host";
  ScheduleKind schedule = ScheduleKind::Default;
  /// The on-disk cache (SolverOptions::cache_dir).
  std::string cache_dir;
};

/// The files compile_aot() wrote.
struct AotArtifacts {
  std::string library;   ///< <name>.a: the pipeline and the Halide runtime
  std::string header;    ///< <name>.h: Halide's declaration of the function
  std::string wrapper;   ///< <name>_call.h: calls it with the program's scalars and sizes
  std::string manifest;  ///< <name>.json: every argument in order
  /// Link proxc's runtime too: the CMake target proxc::runtime
  /// (libproxc_runtime.a with -lfftw3f_threads -lfftw3f -lpthread -ldl).
  bool needs_fft_runtime = false;
  /// The black-box operators it calls: link proxc::runtime, and register
  /// each with proxc_register_black_box before the first call.
  std::vector<std::string> black_boxes;
  /// The prox functions of the user's it calls: link proxc::runtime, and
  /// register each with proxc_register_prox_fn before the first call.
  std::vector<std::string> prox_fns;
};

/// What the first compile of a Module did.
struct CompileReport {
  double seconds = 0;
  int pipelines_compiled = 0;  ///< JIT-compiled in this process
  int pipelines_loaded = 0;    ///< loaded from the on-disk cache
  std::string cache_dir;       ///< "" when the cache is off
  ScheduleKind schedule_used = ScheduleKind::Default;
};

/// A program's run-time arguments: arrays by input name, scalars by
/// parameter name (Module::inputs(), Module::params()): each of them, of the
/// input's shape, and no other.
struct ProgramInputs {
  std::map<std::string, Array> arrays;
  std::map<std::string, double> params;
};

/// What a run computed: arrays in float32, scalars (norms, dots) in double.
struct ProgramOutputs {
  std::map<std::string, Array> arrays;
  std::map<std::string, double> scalars;
};

/// A moved-from Module is empty: using it is a UserError.
class Module {
 public:
  Module(Module&& other) noexcept;
  Module& operator=(Module&& other) noexcept;
  ~Module();

  /// The program's name ("pc_iteration", "cg_apply", ...).
  std::string name() const;
  /// The array inputs with their shapes, the scalar parameters, the outputs.
  std::vector<std::pair<std::string, Shape>> inputs() const;
  std::vector<std::string> params() const;
  std::vector<std::string> outputs() const;

  /// Compiles the pipeline now (JIT, or loaded from the on-disk cache) and
  /// says how; later calls report the first compile.
  CompileReport compile();
  /// Runs the compiled pipeline (compiling it on first use).
  ProgramOutputs run(const ProgramInputs& inputs);
  /// Runs the reference interpreter on the same program (double precision).
  ProgramOutputs emulate(const ProgramInputs& inputs);

  /// A standalone, readable C++ program that builds the same pipeline and
  /// compiles it like a Halide generator; its first lines give the command.
  std::string source() const;
  /// A printed form of the program.
  std::string emit(ProgramFormat format) const;
  /// A static library + header (+ the call wrapper and argument manifest)
  /// that a plain C++ program links without proxc or LLVM.
  AotArtifacts compile_aot(const std::string& dir, const std::string& name = "proxc_step") const;

  struct Impl;

 private:
  friend struct internal::Access;
  explicit Module(std::unique_ptr<Impl> impl);
  // The implementation; a UserError for a moved-from Module.
  const Impl& impl() const;
  Impl& impl();
  std::unique_ptr<Impl> impl_;
};

/// Runs the passes `problem` has not run yet (split for options.solver) and
/// builds the chosen program. A UserError when the solver has no such
/// program for this problem (cg_* where the x-update is direct).
Module compile(const Problem& problem, const CompileOptions& options = {});

}  // namespace proxc

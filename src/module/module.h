/// \file
/// proxc::internal::Module: one compiled program (a solver iteration, or any step
/// program) that runs compiled by Halide, runs in software emulation (the
/// reference interpreter), prints its own source and compiles ahead of time.
///
///     proxc::internal::Problem p = proxc::internal::load_problem("deconv.prox");
///     proxc::internal::SolverOptions so;
///     so.solver = "pc";
///     proxc::internal::Module m = proxc::internal::Module::for_problem(p, so);
///     proxc::internal::StepOutputs fast = m.run(inputs), ref = m.emulate(inputs);
///     std::string cpp = m.source();          // a standalone Halide generator
///     m.compile_aot("out", "deconv_step");   // out/deconv_step.a + .h
#pragma once

#include <memory>
#include <string>

#include "halide/halide_backend.h"
#include "ir/problem.h"
#include "solvers/solver.h"
#include "step/backend.h"
#include "step/step.h"

namespace proxc::internal {

class Module {
 public:
  /// One iteration of options.solver on `problem`, after the rewriting passes
  /// it has not run yet (split for that solver, scaled).
  static Module for_problem(const Problem& problem, const SolverOptions& options = {},
                            const HalideOptions& halide = {});

  explicit Module(StepProgram program, HalideOptions halide = {});
  Module(Module&&) noexcept;
  Module& operator=(Module&&) noexcept;
  ~Module();

  const StepProgram& program() const { return program_; }

  /// Runs the Halide pipeline (JIT-compiled, or loaded from the on-disk cache,
  /// on first use).
  StepOutputs run(const StepInputs& inputs);
  /// Runs the reference interpreter on the same program (double precision).
  StepOutputs emulate(const StepInputs& inputs);

  /// A standalone, readable C++ program that builds the same pipeline from
  /// proxc/halide_ops.h and compiles it like a Halide generator; its first
  /// lines give the command that builds it.
  std::string source() const;
  /// A printed form: step (the step program), source, stmt, c or html.
  std::string emit(const std::string& kind) const;
  /// Static library + header (+ the call wrapper and argument manifest) that
  /// a plain C++ program links without proxc or LLVM.
  AotArtifacts compile_aot(const std::string& dir, const std::string& name = "proxc_step") const;

  /// The schedule the compiled pipeline uses ("default", or the autoscheduler
  /// asked for when it succeeded); compiles if run() has not yet.
  std::string schedule_used();

 private:
  void compile();

  StepProgram program_;
  HalideOptions halide_;
  std::unique_ptr<Backend> compiled_backend_, emulate_backend_;
  std::unique_ptr<CompiledStep> compiled_, emulated_;
};

}  // namespace proxc::internal

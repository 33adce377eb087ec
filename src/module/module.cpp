#include "module/module.h"

#include "emulate/emulate_backend.h"
#include "pipeline/pipeline.h"

namespace proxc::internal {

Module Module::for_problem(const Problem& problem, const SolverOptions& options, const HalideOptions& halide) {
  options.validate();
  PassManagerOptions po;
  po.pass.solver = options.solver;
  return Module(iteration_program(split_for_solver(problem, po), options), halide);
}

Module::Module(StepProgram program, HalideOptions halide) : program_(std::move(program)), halide_(std::move(halide)) {
  check_schedule_name(halide_.schedule);
}
Module::Module(Module&&) noexcept = default;
Module& Module::operator=(Module&&) noexcept = default;
Module::~Module() = default;

void Module::compile() {
  if (compiled_) return;
  compiled_backend_ = make_halide_backend(halide_);
  compiled_ = compiled_backend_->compile(program_);
}

StepOutputs Module::run(const StepInputs& inputs) {
  compile();
  return compiled_->run(inputs);
}

StepOutputs Module::emulate(const StepInputs& inputs) {
  if (!emulated_) {
    emulate_backend_ = make_emulate_backend();
    emulated_ = emulate_backend_->compile(program_);
  }
  return emulated_->run(inputs);
}

std::string Module::source() const { return halide_emit(program_, "source", halide_); }

std::string Module::emit(const std::string& kind) const {
  if (kind == "step") return print_step_program(program_);
  return halide_emit(program_, kind, halide_);
}

AotArtifacts Module::compile_aot(const std::string& dir, const std::string& name) const {
  return halide_compile_aot(program_, dir, name, halide_);
}

std::string Module::schedule_used() {
  compile();
  return compiled_backend_->schedule_used();
}

}  // namespace proxc::internal

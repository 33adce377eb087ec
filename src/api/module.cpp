// compile() and proxc::Module of the public API (proxc/module.h), over the
// internal Module (src/module).
#include <chrono>

#include "api/access.h"
#include "halide/halide_backend.h"
#include "passes/pass_manager.h"
#include "solvers/solver.h"
#include "step/step.h"
#include "support/error.h"

namespace proxc {

using internal::Access;

namespace internal {
SolverOptions solver_options(const proxc::SolverOptions& o);
}  // namespace internal

Module compile(const Problem& problem, const CompileOptions& options) {
  SolverOptions so;
  so.solver = options.solver;
  so.fuse = options.fuse;
  so.schedule = options.schedule;
  so.target = options.target;
  so.validate();
  internal::PassManagerOptions po;
  po.pass.solver = to_string(options.solver);
  internal::Problem split = internal::run_passes(Access::impl(problem).problem, po);
  internal::SolverOptions iso = internal::solver_options(so);
  internal::StepProgram chosen;
  if (options.program == ProgramKind::Iteration) {
    chosen = internal::iteration_program(split, iso);
  } else {
    const std::vector<internal::StepProgram> cg = internal::cg_step_programs(split, iso);
    user_assert(!cg.empty()) << "compile --program " << to_string(options.program) << ": the "
                             << to_string(options.solver)
                             << " x-update of this problem is not solved by CG (no CG programs)";
    chosen = cg[options.program == ProgramKind::CgInit ? 0 : options.program == ProgramKind::CgApply ? 1 : 2];
  }
  internal::HalideOptions h;
  h.target = options.target;
  h.schedule = to_string(options.schedule);
  h.cache_dir = options.cache_dir;
  Module m = Access::make_module(internal::Module(chosen, h));
  Access::impl(m).cache_dir = internal::halide_cache_dir(h);
  return m;
}

Module::Module(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Module::Module(Module&&) noexcept = default;
Module& Module::operator=(Module&&) noexcept = default;
Module::~Module() = default;

std::string Module::name() const { return impl_->module.program().name; }

std::vector<std::pair<std::string, Shape>> Module::inputs() const {
  std::vector<std::pair<std::string, Shape>> out;
  for (const internal::Step& s : impl_->module.program().inputs()) out.emplace_back(s->name, s->shape);
  return out;
}

std::vector<std::string> Module::params() const { return impl_->module.program().params(); }

std::vector<std::string> Module::outputs() const {
  std::vector<std::string> out;
  for (const auto& o : impl_->module.program().outputs) out.push_back(o.first);
  return out;
}

CompileReport Module::compile() {
  if (impl_->compiled) return impl_->report;
  auto t0 = std::chrono::steady_clock::now();
  const int compiled = internal::halide_compile_count(), loaded = internal::halide_cache_load_count();
  const std::string used = impl_->module.schedule_used();  // compiles
  CompileReport& r = impl_->report;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.pipelines_compiled = internal::halide_compile_count() - compiled;
  r.pipelines_loaded = internal::halide_cache_load_count() - loaded;
  r.cache_dir = impl_->cache_dir;
  internal_assert(from_string(used, &r.schedule_used)) << "unknown schedule '" << used << "'";
  impl_->compiled = true;
  return r;
}

namespace {

// Inputs for the internal program: pointers into `in` (which outlives the run).
internal::StepInputs step_inputs(const ProgramInputs& in) {
  internal::StepInputs s;
  for (const auto& [name, a] : in.arrays) s.buffers[name] = &Access::array(a);
  s.params = in.params;
  return s;
}

ProgramOutputs program_outputs(internal::StepOutputs out) {
  ProgramOutputs r;
  for (auto& [name, a] : out.arrays) r.arrays.emplace(name, Access::make_array(std::move(a)));
  r.scalars = std::move(out.scalars);
  return r;
}

}  // namespace

ProgramOutputs Module::run(const ProgramInputs& inputs) {
  compile();
  return program_outputs(impl_->module.run(step_inputs(inputs)));
}

ProgramOutputs Module::emulate(const ProgramInputs& inputs) {
  return program_outputs(impl_->module.emulate(step_inputs(inputs)));
}

std::string Module::source() const { return impl_->module.source(); }

std::string Module::emit(ProgramFormat format) const { return impl_->module.emit(to_string(format)); }

AotArtifacts Module::compile_aot(const std::string& dir, const std::string& name) const {
  return impl_->module.compile_aot(dir, name);
}

}  // namespace proxc

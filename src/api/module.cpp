// compile() and proxc::Module of the public API (proxc/module.h), over the
// internal Module (src/module).
#include <algorithm>
#include <chrono>

#include "api/access.h"
#include "halide/halide_backend.h"
#include "pipeline/pipeline.h"
#include "solvers/solver.h"
#include "step/step.h"
#include "support/error.h"

namespace proxc {

using internal::Access;

namespace internal {
SolverOptions solver_options(const proxc::SolverOptions& o);
}  // namespace internal

Module compile(const Problem& problem, const CompileOptions& options) {
  if (Access::impl(problem).problem.terms.empty()) {
    throw UserError("compile: the problem has no objective (call Problem::minimize first)");
  }
  SolverOptions so;
  so.solver = options.solver;
  so.fuse = options.fuse;
  so.schedule = options.schedule;
  so.target = options.target;
  so.adaptive_steps = false;  // a Module is the fixed-step iteration (its steps are constants)
  so.validate();
  internal::PassManagerOptions po;
  po.pass.solver = to_string(options.solver);
  internal::Problem split = internal::split_for_solver(Access::impl(problem).problem, po);
  internal::SolverOptions iso = internal::solver_options(so);
  internal::StepProgram chosen;
  if (options.program == ProgramKind::Iteration) {
    chosen = internal::iteration_program(split, iso);
  } else {
    const std::vector<internal::StepProgram> cg = internal::cg_step_programs(split, iso);
    user_assert(!cg.empty()) << "compile: there is no " << to_string(options.program) << " program: the "
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

const Module::Impl& Module::impl() const {
  if (!impl_) throw UserError("proxc::Module: this Module was moved from; use the one it was moved to");
  return *impl_;
}

Module::Impl& Module::impl() {
  if (!impl_) throw UserError("proxc::Module: this Module was moved from; use the one it was moved to");
  return *impl_;
}

std::string Module::name() const { return impl().module.program().name; }

std::vector<std::pair<std::string, Shape>> Module::inputs() const {
  std::vector<std::pair<std::string, Shape>> out;
  for (const internal::Step& s : impl().module.program().inputs()) out.emplace_back(s->name, s->shape);
  return out;
}

std::vector<std::string> Module::params() const { return impl().module.program().params(); }

std::vector<std::string> Module::outputs() const {
  std::vector<std::string> out;
  for (const auto& o : impl().module.program().outputs) out.push_back(o.first);
  return out;
}

CompileReport Module::compile() {
  if (impl().compiled) return impl().report;
  auto t0 = std::chrono::steady_clock::now();
  const int compiled = internal::halide_compile_count(), loaded = internal::halide_cache_load_count();
  const std::string used = impl().module.schedule_used();  // compiles
  CompileReport& r = impl().report;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.pipelines_compiled = internal::halide_compile_count() - compiled;
  r.pipelines_loaded = internal::halide_cache_load_count() - loaded;
  r.cache_dir = impl().cache_dir;
  internal_assert(from_string(used, &r.schedule_used)) << "unknown schedule '" << used << "'";
  impl().compiled = true;
  return r;
}

namespace {

// Inputs for the internal program: pointers into `in` (which outlives the
// run), after checking that `in` has every input of the program at its shape
// and every parameter (the convergence check's is optional), and nothing else.
internal::StepInputs step_inputs(const internal::StepProgram& p, const ProgramInputs& in, const char* what) {
  std::map<std::string, Shape> shapes;
  for (const internal::Step& s : p.inputs()) shapes[s->name] = s->shape;
  for (const auto& [name, shape] : shapes) {
    auto it = in.arrays.find(name);
    if (it == in.arrays.end()) throw UserError(std::string(what) + ": the input '" + name + "' is missing");
    if (it->second.shape() != shape) {
      throw UserError(std::string(what) + ": the input '" + name + "' has shape " +
                      shape_to_string(it->second.shape()) + ", the program takes " + shape_to_string(shape));
    }
  }
  for (const auto& [name, a] : in.arrays) {
    if (!shapes.count(name)) throw UserError(std::string(what) + ": the program has no input '" + name + "'");
  }
  const std::vector<std::string> params = p.params();
  for (const std::string& name : params) {
    if (name != internal::kCheckParam && !in.params.count(name)) {
      throw UserError(std::string(what) + ": the parameter '" + name + "' is missing");
    }
  }
  for (const auto& [name, v] : in.params) {
    if (std::find(params.begin(), params.end(), name) == params.end()) {
      throw UserError(std::string(what) + ": the program has no parameter '" + name + "'");
    }
  }
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
  return program_outputs(impl().module.run(step_inputs(impl().module.program(), inputs, "Module::run")));
}

ProgramOutputs Module::emulate(const ProgramInputs& inputs) {
  return program_outputs(
      impl().module.emulate(step_inputs(impl().module.program(), inputs, "Module::emulate")));
}

std::string Module::source() const { return impl().module.source(); }

std::string Module::emit(ProgramFormat format) const { return impl().module.emit(to_string(format)); }

AotArtifacts Module::compile_aot(const std::string& dir, const std::string& name) const {
  return impl().module.compile_aot(dir, name);
}

}  // namespace proxc

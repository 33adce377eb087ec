// solve() and SolverOptions::validate of the public API (proxc/solver.h): the
// options checked (the rules shared with the solvers: solvers/options.h, and
// the backend's), the backend made, the internal solver run, the solution
// kept on the problem.
#include "pipeline/solve.h"

#include <cmath>
#include <memory>

#include "api/access.h"
#include "emulate/emulate_backend.h"
#include "halide/halide_backend.h"
#include "solvers/options.h"
#include "support/error.h"
#include "support/file_util.h"

namespace proxc {

using internal::Access;

void SolverOptions::validate(OptionSpelling spelling) const {
  internal::check_solver_options(*this, solver, spelling);  // the rules the solvers share
  const internal::OptionNames name{spelling};
  const bool cli = spelling == OptionSpelling::CommandLine;
  user_assert(schedule == ScheduleKind::Default || backend == BackendKind::Halide)
      << (cli ? "--schedule needs --backend halide"
              : "SolverOptions.schedule needs backend = BackendKind::Halide");
  user_assert(!target.empty()) << name("target", "--target")
                               << " must not be empty (\"host\" is the default)";
}

namespace internal {

// The internal solver's options for the public ones.
SolverOptions solver_options(const proxc::SolverOptions& o) {
  SolverOptions s;
  s.solver = to_string(o.solver);
  s.max_iters = o.max_iters;
  s.eps_abs = o.eps_abs;
  s.eps_rel = o.eps_rel;
  s.time_limit_s = o.time_limit_s;
  s.fuse = o.fuse;
  s.check_every = o.check_every;
  s.proximal_stopping = o.proximal_stopping;
  s.cg_max_iters = o.cg_max_iters;
  s.cg_tol = o.cg_tol;
  s.hqs_rho_0 = o.hqs_rho_0;
  s.hqs_rho_scale = o.hqs_rho_scale;
  s.hqs_rho_max = o.hqs_rho_max;
  s.hqs_max_inner_iters = o.hqs_max_inner_iters;
  s.steps = o.steps;
  // Left out: adaptive where the steps never lost on the canonical problems (pc, ladmm; docs/solvers.md).
  s.adaptive_steps = o.adaptive_steps.value_or(
      (o.solver == SolverKind::PockChambolle || o.solver == SolverKind::LinearizedADMM) &&
      !o.proximal_stopping);
  s.absorb = o.absorb;
  s.merge = o.merge;
  s.diagonalize = o.diagonalize;
  s.norm = to_string(o.norm);
  for (const auto& [name, a] : o.x0) s.x0[name] = Access::array(a);
  s.callback = o.callback;
  s.objective_each_check = o.objective_each_check;
  if (o.iterate_callback) {
    s.iterate_callback = [cb = o.iterate_callback](const IterationInfo& info,
                                                   const std::map<std::string, internal::Array>& x) {
      std::map<std::string, proxc::Array> user;
      for (const auto& [name, a] : x) user.emplace(name, Access::make_array(a));
      return cb(info, user);
    };
  }
  s.snapshot_every = o.snapshot_every;
  if (o.snapshot_callback) {
    s.snapshot_callback = [cb = o.snapshot_callback](int iteration, const std::map<std::string, internal::Array>& x) {
      std::map<std::string, proxc::Array> user;
      for (const auto& [name, a] : x) user.emplace(name, Access::make_array(a));
      cb(iteration, user);
    };
  }
  s.interrupt = o.interrupt;
  s.started = o.started;
  s.checkpoint_path = o.checkpoint_path;
  s.checkpoint_every = o.checkpoint_every;
  s.resume_path = o.resume_path;
  s.communicator = o.communicator;
  return s;
}

std::unique_ptr<Backend> make_backend(BackendKind kind, const std::string& target, ScheduleKind schedule,
                                      const std::string& cache_dir) {
  if (kind == BackendKind::Emulate) return make_emulate_backend();
  HalideOptions h;
  h.target = target;
  h.schedule = to_string(schedule);
  h.cache_dir = cache_dir;
  return make_halide_backend(h);
}

}  // namespace internal

SolverSummary solve(Problem& problem, const SolverOptions& options) {
  options.validate();
  Problem::Impl& impl = Access::impl(problem);
  user_assert(!impl.problem.terms.empty())
      << "solve: the problem has no objective (call Problem::minimize first)";
  if (!options.x0.empty()) {
    std::string names;
    for (const Expr& v : problem.variables()) names += (names.empty() ? "" : ", ") + problem.name_of(v);
    for (const auto& [name, a] : options.x0) {
      bool found = false;
      for (const Expr& v : problem.variables()) found = found || problem.name_of(v) == name;
      user_assert(found) << "SolverOptions.x0: the problem has no variable named '" << name
                         << "' (its variables: " << names << ")";
    }
  }
  // A checkpoint that could not be written is found now, not after the first stretch of iterations.
  if (!options.checkpoint_path.empty()) {
    try {
      internal::check_output_path(options.checkpoint_path);
    } catch (const UserError& e) {
      throw UserError(std::string("SolverOptions.checkpoint_path: ") + e.what());
    }
  }
  std::unique_ptr<internal::Backend> backend =
      internal::make_backend(options.backend, options.target, options.schedule, options.cache_dir);
  const int compiled = internal::halide_compile_count(), loaded = internal::halide_cache_load_count();
  internal::SolveResult r = internal::solve(impl.problem, internal::solver_options(options), *backend);
  r.summary.pipelines_compiled = internal::halide_compile_count() - compiled;
  r.summary.pipelines_loaded = internal::halide_cache_load_count() - loaded;
  impl.values.clear();
  for (const auto& [var, name] : r.variables) {
    impl.values[var.get()] = {var, Access::make_array(std::move(r.x.at(name)))};
  }
  r.summary.history = std::move(r.history);
  return r.summary;
}

std::vector<BatchItem> solve_batch(Problem& problem, const std::vector<std::map<std::string, Array>>& data_sets,
                                   const SolverOptions& options) {
  options.validate();
  user_assert(!options.communicator)
      << "solve_batch: SolverOptions.communicator is for one problem over several ranks; give each rank its own "
         "data sets instead";
  std::vector<BatchItem> items(data_sets.size());
  for (size_t i = 0; i < data_sets.size(); ++i) {
    try {
      for (const auto& [name, a] : data_sets[i]) problem.set_constant(name, a);
      items[i].summary = solve(problem, options);
      for (const Expr& v : problem.variables()) items[i].x.emplace(problem.name_of(v), problem.value(v));
    } catch (const UserError& e) {
      items[i].error = "data set " + std::to_string(i) + ": " + e.what();
    }
  }
  return items;
}

}  // namespace proxc

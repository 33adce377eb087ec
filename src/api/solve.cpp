// solve() and SolverOptions::validate of the public API (proxc/solver.h):
// the options checked and spelled as the user wrote them, the backend made,
// the internal solver run, the solution kept on the problem.
#include <cmath>
#include <memory>

#include "api/access.h"
#include "emulate/emulate_backend.h"
#include "halide/halide_backend.h"
#include "pipeline/solve.h"
#include "support/error.h"

namespace proxc {

using internal::Access;

namespace {

// An option's name in messages: the field, or the command's flag with the field.
struct OptionNames {
  OptionSpelling spelling;
  std::string operator()(const char* field, const char* flag = nullptr) const {
    if (spelling == OptionSpelling::CommandLine && flag) return std::string(flag) + ": " + field;
    return std::string("SolverOptions.") + field;
  }
};

}  // namespace

void SolverOptions::validate(OptionSpelling spelling) const {
  const OptionNames name{spelling};
  const bool cli = spelling == OptionSpelling::CommandLine;
  user_assert(max_iters >= 1) << name("max_iters", "--iters") << " must be >= 1, got " << max_iters;
  user_assert(eps_abs >= 0 && std::isfinite(eps_abs))
      << name("eps_abs", "--eps-abs") << " must be finite and >= 0";
  user_assert(eps_rel >= 0 && std::isfinite(eps_rel))
      << name("eps_rel", "--eps-rel") << " must be finite and >= 0";
  user_assert(time_limit_s >= 0 && !std::isnan(time_limit_s))
      << name("time_limit_s", "--time-limit") << " must be >= 0";
  user_assert(fuse >= 1 && fuse <= 64) << name("fuse", "--fuse") << " must be in 1..64, got " << fuse;
  user_assert(fuse == 1 || solver == SolverKind::PockChambolle || solver == SolverKind::LinearizedADMM)
      << (cli ? "--fuse" : "SolverOptions.fuse") << ": only pc and ladmm unroll iterations ("
      << to_string(solver) << " takes fuse = 1)";
  user_assert(check_every >= 1) << name("check_every", "--check-every") << " must be >= 1, got "
                                << check_every;
  user_assert(cg_max_iters >= 1) << name("cg_max_iters") << " must be >= 1";
  user_assert(cg_tol > 0) << name("cg_tol") << " must be > 0";
  user_assert(checkpoint_every >= 0) << name("checkpoint_every", "--checkpoint-every") << " must be >= 0";
  user_assert(checkpoint_every == 0 || !checkpoint_path.empty())
      << (cli ? "--checkpoint-every needs --checkpoint"
              : "SolverOptions.checkpoint_every needs checkpoint_path");
  user_assert(hqs_rho_max >= 1 && std::isfinite(hqs_rho_max))
      << name("hqs_rho_max", "--hqs-rho-max") << " must be finite and >= 1";
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
  s.cg_max_iters = o.cg_max_iters;
  s.cg_tol = o.cg_tol;
  s.hqs_rho_max = o.hqs_rho_max;
  for (const auto& [name, a] : o.x0) s.x0[name] = Access::array(a);
  s.callback = o.callback;
  s.interrupt = o.interrupt;
  s.checkpoint_path = o.checkpoint_path;
  s.checkpoint_every = o.checkpoint_every;
  s.resume_path = o.resume_path;
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
  std::unique_ptr<internal::Backend> backend =
      internal::make_backend(options.backend, options.target, options.schedule, options.cache_dir);
  internal::SolveResult r = internal::solve(impl.problem, internal::solver_options(options), *backend);
  impl.values.clear();
  for (const auto& [var, name] : r.variables) {
    impl.values[var.get()] = {var, Access::make_array(std::move(r.x.at(name)))};
  }
  r.summary.history = std::move(r.history);
  return r.summary;
}

}  // namespace proxc

/// \file
/// The rules of a solve's options, written once for the public
/// proxc::SolverOptions (proxc/solver.h) and the internal SolverOptions, whose
/// fields have the same names: a UserError names the first option that breaks
/// its rule, as a field ("SolverOptions.max_iters") or as the command's flag
/// ("--iters: max_iters").
#pragma once

#include <cmath>
#include <optional>
#include <string>

#include "proxc/solver.h"
#include "solvers/algorithm.h"
#include "support/error.h"

namespace proxc::internal {

/// An option's name in messages: the field, or the command's flag with the field.
struct OptionNames {
  OptionSpelling spelling;
  std::string operator()(const char* field, const char* flag = nullptr) const {
    if (spelling == OptionSpelling::CommandLine && flag) return std::string(flag) + ": " + field;
    return std::string("SolverOptions.") + field;
  }
};

/// The convergence conditions of the step sizes on a scaled problem
/// (||K|| <= 1): proxc/solver.h, StepSizes.
inline void check_step_sizes(const StepSizes& s, const OptionNames& name) {
  auto positive = [&](double v, const char* field, const char* flag) {
    user_assert(v > 0 && std::isfinite(v)) << name(field, flag) << " must be finite and > 0, got " << v;
  };
  positive(s.pc_tau, "steps.pc_tau", "--tau");
  positive(s.pc_sigma, "steps.pc_sigma", "--sigma");
  user_assert(s.pc_tau * s.pc_sigma <= 1)
      << name("steps.pc_tau", "--tau") << " * " << name("steps.pc_sigma", "--sigma")
      << " must be <= 1 (Pock-Chambolle converges for tau * sigma * ||K||^2 <= 1, and the scaled problem has "
         "||K|| <= 1), got "
      << s.pc_tau * s.pc_sigma;
  user_assert(s.pc_theta >= 0 && s.pc_theta <= 1)
      << name("steps.pc_theta", "--theta") << " must be in [0, 1], got " << s.pc_theta;
  positive(s.ladmm_lambda, "steps.ladmm_lambda", "--lmb");
  positive(s.ladmm_mu, "steps.ladmm_mu", "--mu");
  user_assert(s.ladmm_mu <= s.ladmm_lambda)
      << name("steps.ladmm_mu", "--mu") << " must be <= " << name("steps.ladmm_lambda", "--lmb")
      << " (linearized ADMM converges for mu <= lambda / ||K||^2, and the scaled problem has ||K|| <= 1), got mu = "
      << s.ladmm_mu << ", lambda = " << s.ladmm_lambda;
  positive(s.admm_rho, "steps.admm_rho", "--rho");
}

// Whether options ask for adaptive steps: the internal ones' bool, or the
// public ones' std::optional set to true (unset is each solver's default,
// valid for every solver: see proxc::SolverOptions::adaptive_steps).
inline bool asks_adaptive(bool a) { return a; }
inline bool asks_adaptive(const std::optional<bool>& a) { return a.value_or(false); }

/// Checks the options of a solve with `solver` (the fields of either
/// SolverOptions).
template <typename Options>
void check_solver_options(const Options& o, SolverKind solver, OptionSpelling spelling) {
  const OptionNames name{spelling};
  const bool cli = spelling == OptionSpelling::CommandLine;
  user_assert(o.max_iters >= 1) << name("max_iters", "--iters") << " must be >= 1, got " << o.max_iters;
  user_assert(o.eps_abs >= 0 && std::isfinite(o.eps_abs))
      << name("eps_abs", "--eps-abs") << " must be finite and >= 0";
  user_assert(o.eps_rel >= 0 && std::isfinite(o.eps_rel))
      << name("eps_rel", "--eps-rel") << " must be finite and >= 0";
  user_assert(o.time_limit_s >= 0 && !std::isnan(o.time_limit_s))
      << name("time_limit_s", "--time-limit") << " must be >= 0";
  user_assert(o.fuse >= 1 && o.fuse <= 64) << name("fuse", "--fuse") << " must be in 1..64, got " << o.fuse;
  user_assert(o.fuse == 1 || Algorithm::create(solver)->unrolls())
      << (cli ? "--fuse" : "SolverOptions.fuse") << ": only pc and ladmm unroll iterations ("
      << to_string(solver) << " takes fuse = 1)";
  user_assert(o.check_every >= 1) << name("check_every", "--check-every") << " must be >= 1, got "
                                  << o.check_every;
  user_assert(!o.proximal_stopping || o.fuse == 1 || solver != SolverKind::PockChambolle)
      << (cli ? "--fuse" : "SolverOptions.fuse") << ": ProxImaL's stopping rule for pc reads the iteration "
      << "before each check (fuse = 1), got " << o.fuse;
  user_assert(o.cg_max_iters >= 1) << name("cg_max_iters", "--cg-iters") << " must be >= 1, got " << o.cg_max_iters;
  user_assert(o.cg_tol > 0 && std::isfinite(o.cg_tol)) << name("cg_tol", "--cg-tol") << " must be finite and > 0";
  user_assert(o.checkpoint_every >= 0) << name("checkpoint_every", "--checkpoint-every") << " must be >= 0";
  user_assert(o.checkpoint_every == 0 || !o.checkpoint_path.empty())
      << (cli ? "--checkpoint-every needs --checkpoint"
              : "SolverOptions.checkpoint_every needs checkpoint_path");
  user_assert(o.snapshot_every >= 0) << name("snapshot_every", "--save-every") << " must be >= 0, got "
                                     << o.snapshot_every;
  user_assert(o.hqs_rho_0 > 0 && std::isfinite(o.hqs_rho_0))
      << name("hqs_rho_0", "--rho-0") << " must be finite and > 0, got " << o.hqs_rho_0;
  user_assert(o.hqs_rho_scale > 1 && std::isfinite(o.hqs_rho_scale))
      << name("hqs_rho_scale", "--rho-scale") << " must be finite and > 1, got " << o.hqs_rho_scale;
  user_assert(o.hqs_rho_max >= o.hqs_rho_0 && std::isfinite(o.hqs_rho_max))
      << name("hqs_rho_max", "--rho-max") << " must be finite and >= hqs_rho_0 (" << o.hqs_rho_0 << "), got "
      << o.hqs_rho_max;
  user_assert(o.hqs_max_inner_iters >= 0)
      << name("hqs_max_inner_iters", "--max-inner-iters") << " must be >= 0, got " << o.hqs_max_inner_iters;
  check_step_sizes(o.steps, name);
  user_assert(!asks_adaptive(o.adaptive_steps) || solver != SolverKind::HQS)
      << (cli ? "--adaptive" : "SolverOptions.adaptive_steps")
      << ": pc, ladmm and admm adapt their step sizes, not hqs (its penalty follows its continuation: --rho-0, "
         "--rho-scale, --rho-max)";
  user_assert(!asks_adaptive(o.adaptive_steps) || !o.proximal_stopping)
      << (cli ? "--adaptive" : "SolverOptions.adaptive_steps")
      << ": ProxImaL's stopping rule reads fixed step sizes (proximal_stopping)";
}

}  // namespace proxc::internal

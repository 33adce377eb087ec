/// \file
/// Solvers: ADMM, linearized ADMM, Pock–Chambolle and half-quadratic
/// splitting over a split, scaled problem. Each iteration (K, Kᵀ, the proxes,
/// the updates and the residual norms) is one step program run by a backend;
/// the host loop only decides when to stop.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/problem.h"
#include "proxc/communicator.h"
#include "proxc/solver.h"
#include "step/backend.h"

namespace proxc::internal {

/// Options of a solve. Every field has a default (ProxImaL's); validate()
/// names the field and the rule it broke.
struct SolverOptions {
  /// pc, ladmm, admm or hqs.
  std::string solver = "pc";
  /// The passes a solve runs (proxc::SolverOptions): absorb, merge,
  /// absorb's direct solves, and the scale pass's norm ("bound" or "power").
  bool absorb = true;
  bool merge = true;
  bool diagonalize = true;
  std::string norm = "bound";
  /// Most iterations; each costs one run of the iteration pipeline.
  int max_iters = 1000;
  /// Absolute and relative tolerances of the stopping rule (0 and 0: run
  /// exactly max_iters iterations).
  double eps_abs = 3e-6;
  double eps_rel = 3e-6;
  /// Stop after this many seconds of iterating (0: no limit).
  double time_limit_s = 0;
  /// Iterations unrolled into one pipeline (residuals from the last).
  int fuse = 1;
  /// Check convergence (the residual norms, the stopping rule, divergence,
  /// the callback) every this many iterations, and after the last one. The
  /// runs in between skip the residuals (kCheckParam = 0), whose extra reads
  /// cost about as much as the update itself; a solve stops at most
  /// check_every − 1 iterations after it converged. ProxImaL's Pock–Chambolle
  /// checks every 100 (its conv_check); 1 checks every iteration.
  int check_every = 10;
  /// Check as ProxImaL does (the Python package's default): after
  /// iterations 1, C + 1, 2C + 1, ... (C = check_every; pc from C + 1), and
  /// pc with ProxImaL's residuals (proxc/solver.h).
  bool proximal_stopping = false;
  /// ADMM/HQS x-update by conjugate gradients: most steps and relative tolerance.
  int cg_max_iters = 50;
  double cg_tol = 1e-6;
  /// HQS continuation: rho = hqs_rho_0, · hqs_rho_scale, ... below
  /// hqs_rho_max, and finally hqs_rho_max (the penalised problem's solution
  /// approaches the optimum as rho grows); each level at most
  /// hqs_max_inner_iters iterations (0: max_iters spread over the levels).
  double hqs_rho_0 = 1;
  double hqs_rho_scale = 2.8284271247461903;  // 2·sqrt(2)
  double hqs_rho_max = 256;
  int hqs_max_inner_iters = 0;
  /// The algorithms' step sizes and their rules (proxc/solver.h).
  StepSizes steps;
  /// Adapt them at every check: pc, ladmm and admm (proxc/solver.h).
  bool adaptive_steps = false;
  /// Start from these values (by variable name, user units); zeros otherwise.
  std::map<std::string, Array> x0;
  /// Called after every convergence check (see check_every); return false to stop the solve.
  std::function<bool(const IterationInfo&)> callback;
  /// Evaluate the user's objective at every check (IterationInfo::objective).
  bool objective_each_check = false;
  /// Called after every check with the iterate in the user's units, by
  /// variable name (and the objective there); return false to stop the solve.
  std::function<bool(const IterationInfo&, const std::map<std::string, Array>&)> iterate_callback;
  /// The iterate (user units, by name) after every run that reaches a
  /// multiple of snapshot_every iterations, checked or not; 0: never.
  int snapshot_every = 0;
  std::function<void(int, const std::map<std::string, Array>&)> snapshot_callback;
  /// When set and true, the solve stops at the next check ("interrupted");
  /// the CLI sets it from SIGINT.
  const std::atomic<bool>* interrupt = nullptr;
  /// Called when the iterations begin (every rank).
  std::function<void()> started;
  /// Save the whole solver state to this file at the first check at least
  /// `checkpoint_every` iterations after the last save (and at the end,
  /// unless the solve diverged), written whole or not at all.
  std::string checkpoint_path;
  int checkpoint_every = 0;
  /// Continue from a checkpoint of the same problem and solver: the result is
  /// the one an uninterrupted run would give.
  std::string resume_path;
  /// A distributed solve over these ranks (proxc/communicator.h, solvers/slabs.h).
  std::shared_ptr<Communicator> communicator;

  /// Throws UserError naming the first invalid field.
  void validate() const;
};

struct SolveResult {
  /// The solution in the user's units, by variable name (as the printer
  /// names them: unique even when two variables share a hint).
  std::map<std::string, Array> x;
  /// Each variable node of the problem and its name in `x`.
  std::vector<std::pair<Expr, std::string>> variables;
  SolverSummary summary;
  /// Every convergence check, in order.
  std::vector<IterationInfo> history;
};

/// The user's objective at a solve's result, which the solvers leave to their
/// caller (src/pipeline/solve.h): programs compiled with the solver's, at
/// once, and a function that gets the result (user units, by variable node)
/// and those programs' runs, and fills the summary's objective.
struct ObjectiveHooks {
  std::vector<StepProgram> programs;
  std::function<void(const std::map<const ExprNode*, const Array*>& x,
                     const std::vector<std::function<StepOutputs(const StepInputs&)>>& runs,
                     SolverSummary* summary)>
      evaluate;
};

/// Iterates options.solver on the split, scaled problem `p` (the passes'
/// result for `user`, whose variable nodes it keeps and whose printed names
/// name the results and x0) on `backend`. `passes_s` is the caller's to set,
/// and so is the objective (0 without `objective.evaluate`).
/// The solve of a problem as a user gives it is pipeline/solve.h's solve().
SolveResult run_solver(const Problem& user, const Problem& p, const SolverOptions& options, Backend& backend,
                       const ObjectiveHooks& objective = {});

/// The step program of one iteration (for printing and `proxc compile`).
StepProgram iteration_program(const Problem& split_scaled_problem, const SolverOptions& options);

/// Adds to a program with a convergence check, for each array output A, the
/// checking runs' output finite_A = ‖A‖² (a gated sum of squares, shared with
/// an equal norm the check computes already). Below FLT_MAX it says that every
/// entry of A is finite (|a| < 1.8e19), so a check knows that the state is
/// finite from scalars the pipeline computes in its pass over the arrays;
/// only a state that large or not finite is scanned on the host, which
/// decides exactly (the float partial sums of a Halide pipeline overflow
/// beyond 1.8e19, and the emulator's double values may be too large for the
/// float arrays they round to).
void add_finiteness_norms(StepProgram* program);

/// The programs of the conjugate-gradient x-update that runs before each
/// iteration program of hqs, and of admm unless its x-update is direct (one
/// variable, ρKᵀK + omega's Hessian an invertible diagonal or circulant): cg_init,
/// cg_apply and cg_update (docs/solvers.md); empty where there is none.
std::vector<StepProgram> cg_step_programs(const Problem& split_scaled_problem, const SolverOptions& options);

}  // namespace proxc::internal

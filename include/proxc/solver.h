/// \file
/// Solving a problem: options, the summary of what a solve did, solve().
///
///     proxc::SolverOptions options;
///     options.solver = proxc::SolverKind::PockChambolle;
///     options.max_iters = 100;
///     proxc::SolverSummary summary = proxc::solve(problem, options);
///     std::cout << summary.brief_report() << "\n";
///     proxc::Array result = problem.value(x);
#pragma once

#include <atomic>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proxc/array.h"
#include "proxc/communicator.h"
#include "proxc/kinds.h"
#include "proxc/problem.h"

namespace proxc {

/// How a solve ended.
enum class Termination { NotRun, Converged, MaxIterations, TimeLimit, UserStop, Interrupted, Diverged };
/// "converged", "max_iterations", ...
const char* to_string(Termination t);

/// One convergence check, reported to the callback and kept in the summary.
struct IterationInfo {
  int iteration = 0;    ///< iterations done so far
  double r = 0;         ///< primal residual
  double s = 0;         ///< dual residual
  double eps_pri = 0;   ///< primal tolerance
  double eps_dual = 0;  ///< dual tolerance
  double seconds = 0;   ///< since the iterations started
  /// The user's objective at this check's iterate, when the solve evaluates
  /// it at every check (SolverOptions::objective_each_check, or an
  /// iterate_callback); NaN otherwise. With nonneg or box terms, at the
  /// iterate's projection max(x, 0) (SolverSummary::objective_at_projection).
  /// One evaluation: a pass over the terms' operands.
  double objective = std::numeric_limits<double>::quiet_NaN();
};

/// How validate() names an option in its messages: as a field of this
/// struct ("max_iters") or as the proxc command's flag ("--iters").
enum class OptionSpelling { Api, CommandLine };

/// The step sizes of the algorithms. They act on the scaled problem, whose
/// ||K|| is at most 1 (the scale pass), so the defaults are valid for every
/// problem; validate() checks each solver's convergence condition.
/// - Pock–Chambolle (ProxImaL's pock_chambolle: tau, sigma, theta):
///     y⁺ = prox_{σf*}(y + σ K x̄),  x⁺ = prox_{τg}(x − τ Kᵀ y⁺),  x̄⁺ = x⁺ + θ (x⁺ − x);
///   needs τ, σ > 0 with τ·σ ≤ 1 and 0 ≤ θ ≤ 1.
/// - Linearized ADMM (ProxImaL's linearized_admm: lmb, mu):
///     x⁺ = prox_{μg}(x − (μ/λ) Kᵀ(K x − z + u)),  z⁺ = prox_{λf}(K x⁺ + u),  u⁺ = u + K x⁺ − z⁺;
///   needs 0 < μ ≤ λ.
/// - ADMM (ProxImaL's admm: rho): the penalty ρ > 0 of the augmented Lagrangian.
/// HQS's penalties are its continuation (SolverOptions::hqs_rho_max).
struct StepSizes {
  double pc_tau = 1;
  double pc_sigma = 1;
  double pc_theta = 1;
  double ladmm_lambda = 1;
  double ladmm_mu = 1;
  double admm_rho = 1;
};

/// Every setting of a solve. Each field has a default (ProxImaL's where it
/// has one); validate() names the first option that breaks its rule.
struct SolverOptions {
  /// The splitting algorithm (--solver).
  SolverKind solver = SolverKind::PockChambolle;
  /// What runs the iterations (--backend).
  BackendKind backend = BackendKind::Halide;
  /// The compiled pipelines' schedule (--schedule; Halide only).
  ScheduleKind schedule = ScheduleKind::Default;
  /// A Halide target string: "host", "x86-64-linux-avx2", ... (--target).
  std::string target = "host";
  /// On-disk cache of compiled pipelines (--cache-dir): "" for
  /// $PROXC_CACHE_DIR, else $XDG_CACHE_HOME/proxc, else ~/.cache/proxc;
  /// "off" for none.
  std::string cache_dir;
  /// Most iterations (--iters).
  int max_iters = 1000;
  /// Absolute and relative tolerances of the stopping rule (--eps-abs,
  /// --eps-rel; ProxImaL's formulas, docs/solvers.md); 0 and 0 run exactly
  /// max_iters iterations. The defaults, 3e-6, are stricter than
  /// ProxImaL's 1e-3: proxc's residuals measure one iteration's change,
  /// ProxImaL's (proximal_stopping) that of check_every iterations. At 1e-3
  /// proxc's rule stops 1-6 % above the optimum on TV denoising,
  /// deconvolution and inpainting; at 3e-6 at or below the objective of
  /// ProxImaL's default solve. Set 1e-3 with proximal_stopping for
  /// ProxImaL's stops.
  double eps_abs = 3e-6;
  double eps_rel = 3e-6;
  /// Stop after this many seconds of iterating; 0: no limit (--time-limit).
  double time_limit_s = 0;
  /// Iterations unrolled into one pipeline, pc and ladmm (--fuse).
  int fuse = 1;
  /// Check convergence every this many iterations and after the last
  /// (--check-every); the runs in between skip the residual norms.
  int check_every = 10;
  /// Check convergence as ProxImaL does (the Python package's default):
  /// after iterations 1, C + 1, 2C + 1, ... (its checks at i % C == 0, i
  /// counted from 0; C = check_every; pc from C + 1), and for pc by
  /// ProxImaL's residuals in place of the primal-dual ones: with u and z as
  /// ProxImaL refreshes them (at i % C in {0, C − 1}), r = ‖K x − z‖ and
  /// s = σ‖Kᵀ(z − z_prev)‖ against eps_pri = √m·eps_abs + eps_rel·max(‖K x‖,
  /// ‖z‖), eps_dual = √n·eps_abs + eps_rel·‖Kᵀu‖/σ (docs/solvers.md).
  /// A solve then stops where ProxImaL's does. pc needs fuse = 1.
  bool proximal_stopping = false;
  /// The CG x-update of admm and hqs: most steps and relative tolerance
  /// (--cg-iters, --cg-tol).
  int cg_max_iters = 50;
  double cg_tol = 1e-6;
  /// HQS continuation, ProxImaL's rho_0, rho_scale, rho_max and
  /// max_inner_iters (--rho-0, --rho-scale, --rho-max, --max-inner-iters):
  /// rho = hqs_rho_0, · hqs_rho_scale, ... below hqs_rho_max, then
  /// hqs_rho_max; each level runs until it converges, at most
  /// hqs_max_inner_iters iterations (0: max_iters spread evenly over the
  /// levels), all levels together at most max_iters.
  double hqs_rho_0 = 1;
  double hqs_rho_scale = 2.8284271247461903;  // 2·sqrt(2)
  double hqs_rho_max = 256;
  int hqs_max_inner_iters = 0;
  /// The algorithms' step sizes (see StepSizes).
  StepSizes steps;
  /// Adapt the step sizes at the scheduled checks (--adaptive; pc, ladmm and
  /// admm, docs/solvers.md): pc balances its primal and dual residuals by
  /// scaling τ up and σ down (or the reverse) with τσ kept, by a factor
  /// 1/(1 − α) whose α starts at 0.5 and shrinks by 0.95 with each change
  /// (Goldstein, Li and Yuan, 2015), so the steps settle; admm doubles ρ
  /// when r > 10 s and halves it when s > 10 r, rescaling its scaled dual,
  /// at most 16 times (residual balancing: Boyd et al., 2011, §3.4.1);
  /// ladmm does the same with its penalty 1/λ, μ moving with λ (μ/λ kept,
  /// so μ ≤ λ/‖K‖² holds).
  /// steps gives the starting values; the summary reports the last ones.
  /// Unset (the default): pc and ladmm adapt under proxc's own stopping rule
  /// (they need 2.5–5× and 1.7–1.8× or more fewer iterations to 1e-4 of the optimum on
  /// the canonical problems, docs/performance.md), and admm and hqs, and pc
  /// and ladmm under ProxImaL's rule, keep their fixed steps (ProxImaL's).
  /// true / false (--adaptive / --fixed-steps) ask for either.
  std::optional<bool> adaptive_steps;
  /// ProxImaL's Problem switches (--no-absorb, --no-merge,
  /// --no-diagonalize, --norm): whether the absorb and merge passes run
  /// (absorb=, merge=); whether absorb makes a data term whose operator has a
  /// diagonal or circulant Gram matrix a direct solve (try_diagonalize=);
  /// how the scale pass gets ||K|| (try_fast_norm=True: Bound, False:
  /// Power). The split and scale passes always run: proxc's solvers iterate
  /// on the split problem scaled to ||K|| <= 1. Without absorb, offsets still
  /// move into the functions' b (`sum_squares(x - b)` as `sum_squares(x, b=b)`),
  /// as ProxImaL's absorb=False does; operators stay in K.
  bool absorb = true;
  bool merge = true;
  bool diagonalize = true;
  NormKind norm = NormKind::Bound;
  /// Start from these values (by variable name as Problem::name_of gives
  /// it, user units); zeros otherwise (--x0). An unknown name is a UserError.
  std::map<std::string, Array> x0;
  /// Called after every convergence check; return false to stop the solve.
  std::function<bool(const IterationInfo&)> callback;
  /// Evaluate the user's objective at every check (IterationInfo::objective
  /// and the history; one evaluation per check).
  bool objective_each_check = false;
  /// Called after every convergence check with the iterate in the user's
  /// units, by variable name as Problem::name_of gives it (the objective
  /// there in the info); return false to stop the solve. Each call copies
  /// the variables once.
  std::function<bool(const IterationInfo&, const std::map<std::string, Array>& x)> iterate_callback;
  /// Called with the iterate in the user's units (by variable name) after
  /// every run that reaches a multiple of snapshot_every iterations (with
  /// fuse F, the first run at or past it), checked or not: a snapshot costs
  /// one copy of the variables, no convergence check. 0: never.
  int snapshot_every = 0;
  std::function<void(int iteration, const std::map<std::string, Array>& x)> snapshot_callback;
  /// When set and true, the solve stops at the next check ("interrupted").
  const std::atomic<bool>* interrupt = nullptr;
  /// Called when the iterations begin, after the passes and compiling (on
  /// every rank of a distributed solve): the proxc command stops at once on a
  /// signal before it, and at the next check after it.
  std::function<void()> started;
  /// Save the whole solver state here (--checkpoint) at the first check at
  /// least checkpoint_every iterations after the last save, and at the end;
  /// written whole or not at all.
  std::string checkpoint_path;
  int checkpoint_every = 0;
  /// Continue from a checkpoint of the same problem and solver (--resume).
  std::string resume_path;
  /// Solve over several processes (--distributed under mpirun): every rank
  /// calls solve() with the same problem, data and options and iterates on a
  /// slab of the variables' rows, exchanging ghost rows with its neighbours
  /// after every iteration and summing the residual norms when a check runs
  /// (proxc/communicator.h; docs/distributed.md). The iterates are the
  /// single-process ones to float rounding; a circular conv in a
  /// sum_squares is applied as an operator instead of solved by FFTs (it
  /// reaches the same optimum). Every solver; admm and hqs run their CG
  /// x-update on the slabs, an x-update that is one FFT solve (admm with
  /// only a conv and scalings) is refused. The result (the
  /// variables' values, the objective) is rank 0's; a checkpoint holds the
  /// whole state, which any number of ranks resumes. Null: one process.
  std::shared_ptr<Communicator> communicator;

  /// Throws UserError naming the first invalid option, spelled as the user
  /// wrote it.
  void validate(OptionSpelling spelling = OptionSpelling::Api) const;
};

/// What a solve did. Starts as "not run".
struct SolverSummary {
  Termination termination = Termination::NotRun;
  SolverKind solver = SolverKind::PockChambolle;
  int iterations = 0;
  IterationInfo last;  ///< the final residuals and tolerances
  /// Every convergence check, in order.
  std::vector<IterationInfo> history;
  /// The user's objective at the result, and at max(x, 0) when the problem
  /// has nonneg or box terms: on the solve's backend (Halide with the default
  /// schedule: each term's elements in float32, its sums in double;
  /// otherwise the emulator, in double).
  double objective = 0;
  bool has_projection = false;
  double objective_at_projection = 0;
  /// The terms the objective leaves out: prox functions of the user's
  /// without a value callback (a denoiser), by name.
  std::vector<std::string> objective_leaves_out;
  /// What the caller should know about the result, one sentence each: a
  /// convergence that the absolute tolerance alone decided, where the
  /// relative parts of both tolerances are under a hundredth of their
  /// absolute parts (most often the problem's values are small for eps_abs:
  /// the result may be short of the optimum; docs/solvers.md, "Units"). The proxc
  /// command prints them on stderr; Python raises them as RuntimeWarning.
  std::vector<std::string> warnings;
  /// Seconds per phase.
  double parse_s = 0, passes_s = 0, compile_s = 0, iterate_s = 0;
  BackendKind backend_requested = BackendKind::Halide, backend_used = BackendKind::Halide;
  ScheduleKind schedule_requested = ScheduleKind::Default, schedule_used = ScheduleKind::Default;
  /// The Halide target asked for (SolverOptions::target, "host" by default)
  /// and the one the pipelines were compiled for, in full (a GPU target's CPU
  /// part where this machine cannot run its GPU code); "emulator" for both on
  /// the emulator.
  std::string target_requested, target_used;
  /// Where the FFT stages (circulant solves, FFT convolutions) ran: "none"
  /// (the problem has none), "FFTW (host)", or on a GPU target the device
  /// library ("clFFT 2.12.2 (device)", "cuFFT 11.0.1 (device)").
  std::string target_fft = "none";
  /// Iterations per run of the iteration program (SolverOptions::fuse), and
  /// whether runs without a check ran and ran them blocked in time: a strip
  /// of rows through all of them before the next strip (the default CPU
  /// schedule, where the program allows; see docs/performance.md). Checking
  /// runs run the whole program unblocked, so a solve whose every run checks
  /// (check_every <= fuse, max_iters <= fuse) says false.
  int fuse = 1;
  bool fuse_blocked_in_time = false;
  /// Pipelines this solve JIT-compiled, and loaded from the on-disk cache
  /// (0 and 0 when every one was already compiled in this process: a solve
  /// of the same problem with other data).
  int pipelines_compiled = 0, pipelines_loaded = 0;
  /// The operator norm the scale pass divided by (1 when not scaled).
  double knorm = 1;
  /// Conjugate-gradient steps of the x-updates (hqs, and admm where its
  /// x-update is not direct); 0 otherwise.
  int cg_steps = 0;
  /// An adaptive solve's step sizes at its end (SolverOptions::adaptive_steps;
  /// the scaled problem's: pc "pc_tau", "pc_sigma"; ladmm "ladmm_lambda"; admm "admm_rho") and how
  /// many of this process's checks changed them; empty and 0 otherwise.
  std::map<std::string, double> adapted_steps;
  int step_changes = 0;
  /// A distributed solve (SolverOptions::communicator): its ranks, the ghost
  /// rows each slab holds on either side, the bytes rank 0 sent its
  /// neighbours per run of the iteration, and its seconds exchanging rows and
  /// summing over the ranks (within iterate_s). ranks = 0 for one process.
  struct Distribution {
    int ranks = 0;
    int ghost_rows = 0;
    double halo_bytes_per_run = 0;
    double communicate_s = 0;
  };
  Distribution distributed;
  /// Where the iterating time went: each compiled program (the iteration,
  /// the CG programs, a program's setup of its loop invariants), its runs and
  /// their wall seconds, in the order of their first run.
  struct ProgramTime {
    std::string name;
    int runs = 0;
    double seconds = 0;
  };
  std::vector<ProgramTime> programs;

  /// One line: solver, termination, iterations, objective, time.
  std::string brief_report() const;
  /// Several lines: every field, and the time per program.
  std::string full_report() const;
  /// One JSON object (docs/cli.md).
  std::string to_json() const;
};

/// Solves `problem`: runs the rewriting passes it has not run yet (split for
/// options.solver, scaled), compiles the iteration on options.backend and
/// iterates until the stopping rule holds. The solution is then
/// problem.value(x) for each variable x. Throws UserError for invalid
/// options or a problem the solver cannot take.
SolverSummary solve(Problem& problem, const SolverOptions& options = {});

/// One data set's solve in solve_batch: the variables' values (by name, as
/// Problem::name_of gives them) and its summary, or the error that stopped it.
struct BatchItem {
  std::map<std::string, Array> x;
  SolverSummary summary;
  std::string error;  ///< empty when it was solved
};

/// Solves `problem` once per data set (`proxc batch` of the CLI, from C++):
/// each data set's arrays replace the constants of those names
/// (Problem::set_constant) and the solve starts from options.x0 (zeros by
/// default) as if it were alone; the pipelines compile for the first data set
/// and are reused by the others (data of other shapes compile their own). A
/// data set that fails (an unknown name, another shape than the variable
/// allows, a diverged solve is not a failure) has its item's error set and
/// the others go on. `problem` is left with the last data set's constants
/// and values. options.communicator must be null: to share data sets over
/// MPI ranks, give each rank its own (the CLI's `mpirun ... proxc batch`).
std::vector<BatchItem> solve_batch(Problem& problem, const std::vector<std::map<std::string, Array>>& data_sets,
                                   const SolverOptions& options = {});

}  // namespace proxc

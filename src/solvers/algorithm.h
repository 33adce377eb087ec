/// \file
/// One interface for the four splitting algorithms (Ceres' Minimizer::Create
/// is the model): each builds its iteration program and says what the
/// generic host loop (solve.cpp) needs to run it — its state arrays, the
/// penalty parameter per iteration, whether its x-update is a CG solve on the
/// host, and its tolerances from a checking run's outputs. One file each:
/// pc.cpp, ladmm.cpp, admm.cpp, hqs.cpp.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "proxc/kinds.h"
#include "solvers/layout.h"
#include "solvers/solver.h"
#include "step/backend.h"

namespace proxc::internal {

class Algorithm {
 public:
  /// The algorithm of `kind`.
  static std::unique_ptr<Algorithm> create(SolverKind kind);
  /// The algorithm of a solver name ("pc", ...); a UserError listing the
  /// names for an unknown one.
  static std::unique_ptr<Algorithm> create(const std::string& name);
  virtual ~Algorithm() = default;

  virtual SolverKind kind() const = 0;
  const char* name() const { return to_string(kind()); }

  /// Whether `fuse` iterations can be unrolled into one program.
  virtual bool unrolls() const { return false; }

  /// One run of the iteration program: o.fuse iterations with o.steps's
  /// step sizes, the last one computing the residual norms when kCheckParam
  /// is set. Its inputs and outputs are the state arrays (state_names), its
  /// parameters rho where takes_rho().
  virtual StepProgram iteration(const Layout& l, const SolverOptions& o) const = 0;

  /// Whether the x-update runs as a conjugate-gradient solve on the host
  /// before each iteration program (cg.h).
  virtual bool host_cg(const Layout& l, const SolverOptions& o) const { return false; }

  /// The state besides the variables (set by the caller): zero duals, an
  /// extrapolation equal to x, ...
  virtual void init_state(const Layout& l, std::map<std::string, Array>* state) const = 0;

  /// The state a stopping rule keeps besides the iterates (zeros at the
  /// start), and its update after each run that ends iteration `iteration`
  /// (counted from 0; `prev`: the state before the run). Pock–Chambolle's
  /// under ProxImaL's rule (SolverOptions::proximal_stopping); none otherwise.
  virtual void init_check_state(const Layout& l, const SolverOptions& o, std::map<std::string, Array>* state) const {}
  virtual void after_run(const Layout& l, const SolverOptions& o, int iteration,
                         const std::map<std::string, Array>& prev, std::map<std::string, Array>* state) const {}
  /// Whether after_run reads or writes arrays after the run that ends
  /// `iteration` (the host loop brings a GPU's arrays back first).
  virtual bool after_run_uses_arrays(const SolverOptions& o, int iteration) const { return false; }

  /// Whether the iteration program takes the penalty parameter rho.
  virtual bool takes_rho() const { return false; }
  /// The penalty levels run in turn, max_iters spread over them (HQS's
  /// continuation); ADMM's one penalty; one level of 1 otherwise.
  virtual std::vector<double> rho_levels(const SolverOptions& o) const { return {1.0}; }

  /// Adaptive step sizes (SolverOptions::adaptive_steps): the run-time
  /// parameters the iteration program takes in place of constants, with
  /// their starting values (names starting with "_": the rule's own state,
  /// not passed to the program); none without adaptive steps or for an
  /// algorithm that has none. adapt() updates them after a check that did
  /// not stop the solve, rescaling state arrays where the rule needs it, and
  /// says whether it changed them.
  virtual std::map<std::string, double> adaptive_params(const SolverOptions& o) const { return {}; }
  virtual bool adapt(const Layout& l, const IterationInfo& info, std::map<std::string, double>* params,
                     std::map<std::string, Array>* state) const {
    return false;
  }
  /// Whether adapt() would rescale state arrays (on the host) after a check
  /// with `info`: the host loop brings a GPU's arrays back first.
  virtual bool adapt_rescales_state(const IterationInfo& info, const std::map<std::string, double>& params) const {
    return false;
  }

  /// The primal and dual tolerances of a checking run's outputs; m and n are
  /// the sizes of K's output and of the variables.
  virtual void tolerances(const StepOutputs& out, double m, double n, const SolverOptions& o,
                          IterationInfo* info) const = 0;
};

/// Residual balancing of a penalty (Boyd et al., 2011, §3.4.1, with their
/// μ = 10 and τ = 2): the factor the penalty changes by after a check with
/// `info`: 2 when r > 10 s, 1/2 when s > 10 r, 1 when they are within a
/// factor 10 or after `changes` reached kMaxPenaltyChanges (their
/// convergence argument needs the penalty fixed after finitely many changes).
inline constexpr double kMaxPenaltyChanges = 16;
double penalty_factor(const IterationInfo& info, double changes);
/// Multiplies every psi term's scaled dual u by s (a penalty's change
/// rescales it so that the unscaled dual is kept).
void scale_duals(const Layout& l, double s, std::map<std::string, Array>* state);

/// The tolerances of the ADMM-type algorithms (ladmm, admm, hqs), from the
/// outputs admm_residuals adds.
void admm_tolerances(const StepOutputs& out, double m, double n, const SolverOptions& o, IterationInfo* info);
/// Zero z and u for every psi term.
void init_split_state(const Layout& l, std::map<std::string, Array>* state);

std::unique_ptr<Algorithm> make_pock_chambolle();
std::unique_ptr<Algorithm> make_linearized_admm();
std::unique_ptr<Algorithm> make_admm();
std::unique_ptr<Algorithm> make_hqs();

}  // namespace proxc::internal

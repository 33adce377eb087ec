/// \file
/// Running the rewriting passes as proxc's tools do: the pass manager of
/// src/passes with the instrumentation the options ask for (a dump of each
/// pass's result as .prox and JSON, the verifier with its objective-
/// preservation check, the problem printed after each pass, each pass's time)
/// and the scale pass's operator-norm oracle (ProxImaL's bound, or a Lanczos
/// estimate on the emulator). Resuming from a dump is the pass manager's.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "passes/pass_manager.h"

namespace proxc::internal {

struct PassManagerOptions {
  /// Passes to run (empty: the default pipeline).
  std::vector<std::string> pipeline;
  /// The passes' options; an unset operator_norm is the oracle of pass.norm.
  PassOptions pass;
  /// Write NN_<pass>.prox and NN_<pass>.json here after each pass ("" = none).
  std::string dump_dir;
  /// Print the text form after each pass to `log`.
  bool print_after_all = false;
  /// Verify the IR and the objective's preservation after each pass.
  bool verify_each = false;
  /// Report each pass's time to `log`.
  bool time_passes = false;
  std::ostream* log = nullptr;
  /// More instrumentation, run after the above.
  std::vector<PassInstrumentation*> instrumentations;
};

/// Runs the passes of the pipeline that `p` has not run yet (run_pipeline)
/// with the instrumentation `o` asks for.
Problem run_passes(const Problem& p, const PassManagerOptions& o, std::vector<PassRecord>* records = nullptr);

/// run_passes for a solve or a compile for the solver o.pass.solver: a
/// problem split for another solver is refused, and so is a result whose
/// record of passes is inconsistent (a hand-edited or corrupt dump: roles that
/// solver cannot take), as UserErrors. A problem whose record of passes is in
/// the default order but does not start o.pipeline (a dump made with other
/// switches, or split without merge) continues with the passes after its last.
Problem split_for_solver(const Problem& p, const PassManagerOptions& o);

/// ||K|| by the method `norm` names: "bound" (ProxImaL's propagated upper
/// bound) or "power" (estimated on the emulator by Lanczos iteration on KᵀK,
/// as ProxImaL's est_CompGraph_norm with scipy's eigs); a UserError for any
/// other name.
std::function<double(const Expr& k)> operator_norm_oracle(const std::string& norm);

/// Relative tolerance of the objective-preservation check (docs/passes.md).
constexpr double kObjectiveTolerance = 1e-9;

/// Largest relative difference |F_after(s_a) − F_before(s_b)| / (1 + Σ|terms|)
/// over `points` random points x (uniform in [0, 1]), evaluated by the emulator
/// in double, where s = variable_scale·x for each problem. +inf when one side
/// is finite and the other not.
double objective_difference(const Problem& before, const Problem& after, int points = 3, uint64_t seed = 1);

/// The instrumentations run_passes registers, for a caller that builds its own list.
class DumpPasses : public PassInstrumentation {
 public:
  explicit DumpPasses(std::string dir) : dir_(std::move(dir)) {}
  void before_pipeline(const Problem& p) override;
  void after_pass(const Problem& before, const Problem& after, PassRecord* record) override;

 private:
  std::string dir_;
};

class VerifyPasses : public PassInstrumentation {
 public:
  void after_pass(const Problem& before, const Problem& after, PassRecord* record) override;
};

/// Prints the problem after each pass and/or each pass's time to `log`.
class ReportPasses : public PassInstrumentation {
 public:
  ReportPasses(std::ostream* log, bool print_after_all, bool time_passes)
      : log_(log), print_(print_after_all), time_(time_passes) {}
  void after_pass(const Problem& before, const Problem& after, PassRecord* record) override;

 private:
  std::ostream* log_;
  bool print_, time_;
};

}  // namespace proxc::internal

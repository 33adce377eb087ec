/// \file
/// The pass manager: named passes, the default pipeline as a plain list, and
/// the tooling around them — dumps after each pass, a verifier with an
/// objective-preservation check, timing, and resuming from a dump.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace proxc::internal {

/// A pass as the pass manager and the CLI see it.
struct PassInfo {
  const char* name;
  const char* description;
  Problem (*run)(const Problem&, const PassOptions&);
};

/// Every pass, in the order of the default pipeline.
const std::vector<PassInfo>& all_passes();
/// The pass named `name`; UserError listing the passes when there is none.
const PassInfo& find_pass(const std::string& name);

/// The default pipeline, read top to bottom.
std::vector<std::string> default_pipeline();

struct PassManagerOptions {
  /// Passes to run (empty: the default pipeline).
  std::vector<std::string> pipeline;
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
};

/// What one pass did.
struct PassRecord {
  std::string name;
  double seconds = 0;
  bool changed = false;
  /// With verify_each: the largest relative objective difference seen.
  double objective_error = 0;
};

/// Runs the passes of the pipeline that `p` has not run yet: `p.passes_run`
/// must be a prefix of the pipeline (a dump continues where it stopped).
Problem run_passes(const Problem& p, const PassManagerOptions& o, std::vector<PassRecord>* records = nullptr);

/// The IR verifier: well-formed terms, roles consistent with the recorded
/// passes (after split every term has one; omega terms are least_squares).
void verify_passes_invariants(const Problem& p);

/// Relative tolerance of the objective-preservation check (docs/passes.md).
constexpr double kObjectiveTolerance = 1e-9;

/// Largest relative difference |F_after(s_a) − F_before(s_b)| / (1 + Σ|terms|)
/// over `points` random points x (uniform in [0, 1]), evaluated by the emulator
/// in double, where s = variable_scale·x for each problem. +inf when one side
/// is finite and the other not.
double objective_difference(const Problem& before, const Problem& after, int points = 3, uint64_t seed = 1);

}  // namespace proxc::internal

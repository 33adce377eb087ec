/// \file
/// The pass manager: named passes, the default pipeline as a plain list, and
/// running a pipeline with instrumentation around each pass (MLIR's
/// PassInstrumentation). It depends on the IR alone: the dumps, the
/// objective verifier and the timing report are instrumentations that the
/// callers register (src/pipeline), as is the scale pass's norm oracle.
#pragma once

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

/// What one pass did.
struct PassRecord {
  std::string name;
  /// Its number in the pipeline, from 1.
  int number = 0;
  double seconds = 0;
  bool changed = false;
  /// With verification: the largest relative objective difference seen.
  double objective_error = 0;
};

/// Hooks around the passes of a pipeline.
class PassInstrumentation {
 public:
  virtual ~PassInstrumentation() = default;
  /// Before the passes, once the pipeline is checked (also when none is left to run).
  virtual void before_pipeline(const Problem& p) {}
  /// After a pass turned `before` into `after`; it may add to *record.
  virtual void after_pass(const Problem& before, const Problem& after, PassRecord* record) {}
};

/// Runs the passes of `pipeline` (empty: the default) that `p` has not run
/// yet: `p.passes_run` must be a prefix of the pipeline (a dump continues
/// where it stopped). The instrumentations run in order after each pass.
Problem run_pipeline(const Problem& p, const std::vector<std::string>& pipeline, const PassOptions& options,
                     const std::vector<PassInstrumentation*>& instrumentations = {},
                     std::vector<PassRecord>* records = nullptr);

/// What breaks the record of passes, "" when nothing: roles consistent with
/// the recorded passes (after split every term has one; omega terms as the
/// recorded solver can take them: least_squares, several only where its
/// x-update solves them together, or for pc and ladmm one function of the
/// variable itself; one variable), a solver recorded exactly when split, knorm
/// exactly when scaled and every psi operand scaled by 1/knorm. Words for a
/// user who edited a dump (the terms counted from 1).
std::string passes_record_violation(const Problem& p);

/// The IR verifier: well-formed terms and passes_record_violation's checks,
/// a violation an InternalError (the passes made it).
void verify_passes_invariants(const Problem& p);

}  // namespace proxc::internal

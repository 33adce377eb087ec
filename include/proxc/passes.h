/// \file
/// The rewriting passes (absorb, merge, split, scale) that turn a problem
/// into what a solver needs, with their instrumentation: a dump after each
/// pass (text that parses back, JSON that loads back and continues), the
/// verifier with its objective-preservation check, timing. docs/passes.md
/// says what each pass does.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "proxc/kinds.h"
#include "proxc/problem.h"

namespace proxc {

struct PassOptions {
  /// The passes to run, by name; empty: the default pipeline (pass_names()).
  /// A problem continues where its passes_run() stopped.
  std::vector<std::string> pipeline;
  /// The solver the split pass prepares for.
  SolverKind solver = SolverKind::PockChambolle;
  /// How the scale pass gets ||K||.
  NormKind norm = NormKind::Bound;
  /// absorb: fold operators (scalar scales, positive weights, direct least
  /// squares) into the functions' parameters as well as offsets. False is
  /// ProxImaL's absorb=False, which still moves every offset into b
  /// (SolverOptions::absorb = false runs absorb so).
  bool absorb_operators = true;
  /// A split of the user's own (ProxImaL's Problem(psi_fns=, omega_fns=)):
  /// the split pass gives term i the role roles[i] instead of the solver's
  /// partition. The roles are those of the terms the split pass sees (after
  /// absorb and merge, which can change their number: run the split with
  /// pipeline {"absorb", "split"}, as ProxImaL's own split skips merge, and a
  /// solve continues it). An omega sum_squares is solved in the x-update as
  /// least squares; a split no solver takes (an omega term whose Gram matrix
  /// is neither diagonal nor circulant, every term omega, ...) is a UserError
  /// naming the term. Empty: the solver's partition (docs/passes.md).
  std::vector<SplitRole> roles;
  /// Write NN_<pass>.prox and NN_<pass>.json here after each pass ("": none).
  std::string dump_dir;
  /// Print the problem after each pass to `log`.
  bool print_after_all = false;
  /// Verify the IR and that the objective is preserved after each pass (a
  /// UserError naming the pass when it is not).
  bool verify_each = false;
  /// Report each pass's time to `log`.
  bool time_passes = false;
  /// Where print_after_all, verify_each and time_passes write (null: none).
  std::ostream* log = nullptr;
};

/// Every pass's name, in the order of the default pipeline.
std::vector<std::string> pass_names();

/// Runs the passes of the pipeline that `problem` has not run yet.
Problem run_passes(const Problem& problem, const PassOptions& options = {});

}  // namespace proxc

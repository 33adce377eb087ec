/// \file
/// `proxc check`: dot tests of every operator, of each term's K and of the
/// whole K of a problem, with norm estimates; as text or JSON.
#pragma once

#include <string>
#include <vector>

#include "check/check.h"

namespace proxc::internal {

struct ProblemCheck {
  std::string backend;
  std::vector<DotTestResult> operators;  ///< each operator alone
  std::vector<DotTestResult> terms;      ///< each term's operand (linear part)
  DotTestResult whole;                   ///< all terms' operands stacked
  NormEstimate norm;                     ///< ||K|| by Lanczos iteration
  double bound = 0;                      ///< ProxImaL's upper bound of ||K||
  bool bound_holds = false;              ///< norm ≤ bound (up to 1e-6 relative)
  /// With a reference backend: each operator, prox and value against it.
  std::vector<ParityResult> parity;
  bool passed = false;                   ///< every dot test and comparison passed and the bound holds
};

/// Runs every check of `p` on `backend`; with `reference` (the emulator, for
/// a compiled backend) also compares each node's results with it.
ProblemCheck check_problem(Backend& backend, const Problem& p, uint64_t seed = 1, Backend* reference = nullptr);

/// A human-readable table.
std::string format_check_text(const ProblemCheck& c);
/// One JSON object (documented in docs/cli.md).
std::string format_check_json(const ProblemCheck& c);

}  // namespace proxc::internal

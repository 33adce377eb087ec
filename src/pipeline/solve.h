/// \file
/// Solving a problem as a user gives it: the rewriting passes it has not run
/// yet (the default pipeline, split for the solver), the solver's iterations
/// (solvers/solver.h: run_solver), and the user's objective at the result.
#pragma once

#include "solvers/solver.h"

namespace proxc::internal {

/// Solves `problem`: runs the rewriting passes it has not run yet (the
/// default pipeline, split for options.solver), then iterates on `backend`;
/// the summary has the user's objective at the result (on the backend with
/// its default schedule, else on the emulator).
SolveResult solve(const Problem& problem, const SolverOptions& options, Backend& backend);

}  // namespace proxc::internal

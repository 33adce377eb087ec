/// \file
/// The public API of proxc: build or load a problem, rewrite it, check it,
/// solve it, compile its programs. Only proxc's own headers are needed:
///
///     #include <proxc/proxc.h>
///
///     proxc::Array b = proxc::load_array("noisy.png");
///     proxc::Problem problem;
///     proxc::Expr x = problem.variable(b.shape(), "x");
///     problem.minimize(proxc::sum_squares(x - b) + 0.1 * proxc::group_norm1(proxc::grad(x), {2}));
///     proxc::SolverSummary summary = proxc::solve(problem, proxc::SolverOptions());
///     proxc::save_array("restored.png", problem.value(x));
///
/// docs/api.md describes it; a CMake project links it with
/// find_package(proxc) and target_link_libraries(app PRIVATE proxc::proxc).
#pragma once

#include "proxc/array.h"
#include "proxc/black_box.h"
#include "proxc/check.h"
#include "proxc/communicator.h"
#include "proxc/error.h"
#include "proxc/kinds.h"
#include "proxc/module.h"
#include "proxc/passes.h"
#include "proxc/prox_fn.h"
#include "proxc/problem.h"
#include "proxc/runtime.h"
#include "proxc/solver.h"

/// \file
/// Checking a problem's operators: the dot test <K x, y> = <x, Kᵀ y> of every
/// operator, of each term's operand and of the whole K; an estimate of ||K||
/// against ProxImaL's bound; with a compiled backend, every node compared
/// with the emulator. docs/checks.md gives the tolerances.
#pragma once

#include <cstdint>
#include <string>

#include "proxc/kinds.h"
#include "proxc/problem.h"

namespace proxc {

struct CheckOptions {
  /// The backend that computes K and Kᵀ; a compiled one is also compared
  /// with the emulator node by node.
  BackendKind backend = BackendKind::Emulate;
  /// The Halide target string (backend Halide).
  std::string target = "host";
  /// Seed of the random test vectors.
  uint64_t seed = 1;
  /// For testing the checker itself: compute this operator kind's adjoint
  /// wrongly ("" for none); the check must then fail.
  std::string debug_break_adjoint;
};

/// What check() found.
struct CheckReport {
  /// Every dot test and comparison passed and the norm is within the bound.
  bool passed = false;
  /// The estimate of ||K|| and ProxImaL's upper bound.
  double norm_estimate = 0;
  double norm_bound = 0;
  /// A table for people, and one JSON object (docs/cli.md).
  std::string text;
  std::string json;
};

CheckReport check(const Problem& problem, const CheckOptions& options = {});

}  // namespace proxc

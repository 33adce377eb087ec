#!/usr/bin/env bash
# Installs the dependencies, builds proxc with its tests and runs the whole
# test suite. Exits non-zero on any failure. CI runs this.
#
# 1. The dev build (gcc): every test group.
# 2. The fuzz build (clang, AddressSanitizer + UndefinedBehaviorSanitizer,
#    libFuzzer): the unit, error, golden and correctness tests again under the
#    sanitizers, and a smoke run of every fuzz target on its seed corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs="$(nproc 2>/dev/null || echo 2)"

bash scripts/build.sh dev
ctest --test-dir build/dev --output-on-failure -j "$jobs"

bash scripts/build.sh fuzz unit_tests error_tests golden_tests correctness_tests \
  fuzz_prox fuzz_json fuzz_npy fuzz_png fuzz_tiff
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/fuzz --output-on-failure -j "$jobs" -L 'unit|error|golden|correctness|fuzz'

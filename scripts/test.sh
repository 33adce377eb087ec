#!/usr/bin/env bash
# Installs the dependencies, builds proxc with its tests and runs the whole
# test suite. Exits non-zero on any failure. CI runs this.
#
# 1. The dev build (gcc): every test group.
# 2. The Python package: the sdist and the self-contained wheel built from it
#    (scripts/wheel.sh), installed into a fresh virtual environment
#    (build/venv), then pytest on tests/python (ProxImaL's scripts against the
#    conformance cases, the package's promises, every block of
#    docs/python.md, the examples); then the wheel in a bare Debian root
#    (scripts/test-wheel.sh: installed with pip where nothing else is, its
#    checks, its results against the dev build's).
# 3. The fuzz build (clang, AddressSanitizer + UndefinedBehaviorSanitizer,
#    libFuzzer): the unit, error, golden and correctness tests again under the
#    sanitizers, and a smoke run of every fuzz target on its seed corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs="$(nproc 2>/dev/null || echo 2)"

bash scripts/build.sh dev
ctest --test-dir build/dev --output-on-failure -j "$jobs"

# The Python package as users get it: the source distribution, the wheel
# built from it and repaired (scripts/wheel.sh), installed into a fresh
# virtual environment for the pytest suite; then installed again into a
# bare Debian root and checked there against the source build
# (scripts/test-wheel.sh).
bash scripts/wheel.sh
rm -rf build/venv
python3 -m venv build/venv
build/venv/bin/python -m pip install --quiet --upgrade pip
build/venv/bin/python -m pip install --quiet pytest matplotlib scikit-image h5py scipy
build/venv/bin/python -m pip install --quiet build/wheelhouse/proxc-*.whl
build/venv/bin/python -m pytest -q tests/python
bash scripts/test-wheel.sh

bash scripts/build.sh fuzz unit_tests error_tests golden_tests correctness_tests \
  fuzz_prox fuzz_json fuzz_npy fuzz_png fuzz_tiff fuzz_npz fuzz_hdf5
# (Not the deconvolution's default stop with admm: 1000 CG iterations, two of
# this run's three minutes under the sanitizers; the TV and inpainting admm
# cases run the same CG code, and the dev build runs it.)
ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS="suppressions=$PWD/fuzz/lsan-suppressions.txt" UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/fuzz --output-on-failure -j "$jobs" -L 'unit|error|golden|correctness|fuzz' \
  -E 'TheExampleStopsWhereItDid/deconv_tv_prox_admm$'

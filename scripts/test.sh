#!/usr/bin/env bash
# Installs the dependencies, builds proxc with its tests (dev preset) and runs
# the whole test suite. Exits non-zero on any failure. CI runs this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh dev
ctest --test-dir build/dev --output-on-failure -j "$(nproc 2>/dev/null || echo 2)"

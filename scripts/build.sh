#!/usr/bin/env bash
# Configures and builds one CMake preset (dev, release or asan): scripts/build.sh PRESET [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-dev}"
shift || true
jobs="$(nproc 2>/dev/null || echo 2)"
if [ ! -f "build/$preset/CMakeCache.txt" ]; then
  cmake --preset "$preset" -G Ninja >/dev/null
fi
if [ "$#" -gt 0 ]; then
  cmake --build "build/$preset" -j "$jobs" --target "$@"
else
  cmake --build "build/$preset" -j "$jobs"
fi

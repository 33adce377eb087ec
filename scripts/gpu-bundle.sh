#!/usr/bin/env bash
# Packs the release build for a GPU machine that has no network and no build
# tools: scripts/gpu-bundle.sh [OUT] (default build/gpu-bundle) writes
# OUT/proxc.tar.xz (bin/proxc, the test programs of the GPU schedule --
# halide_tests, solver_tests, conformance_tests -- with ProxImaL's
# conformance cases, and the shared libraries they load, libHalide.so 165 MB
# of them: xz keeps the bundle under the device tool's 64 MiB) and OUT/run.sh
# (scripts/gpu-run.sh). On the GPU machine: bash OUT/run.sh [TARGET] -- see
# that script. Needs build/release (scripts/build.sh release).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-build/gpu-bundle}"
bin=build/release/tools/proxc/proxc
[ -x "$bin" ] || { echo "gpu-bundle: build the release first: bash scripts/build.sh release" >&2; exit 2; }
tests=(build/release/tests/halide_tests build/release/tests/solver_tests build/release/tests/conformance_tests)
for t in "${tests[@]}"; do
  [ -x "$t" ] || { echo "gpu-bundle: $t is missing: bash scripts/build.sh release" >&2; exit 2; }
done
[ -f ../shared/conformance/cases.json ] || { echo "gpu-bundle: ../shared/conformance is missing" >&2; exit 2; }
rm -rf "$out"
stage="$(mktemp -d)"
mkdir -p "$stage/bin" "$stage/lib" "$stage/shared"
cp "$bin" "${tests[@]}" "$stage/bin/"
cp -r ../shared/conformance "$stage/shared/"
# Every library the programs load but the C library's own (the machine has those).
for b in "$bin" "${tests[@]}"; do ldd "$b"; done | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) continue ;;
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done
mkdir -p "$out"
tar -C "$stage" -cf - bin lib shared | xz -T0 -6 > "$out/proxc.tar.xz"
rm -rf "$stage"
cp scripts/gpu-run.sh "$out/run.sh"
du -sh "$out"

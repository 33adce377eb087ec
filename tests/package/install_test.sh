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
ls "$work/prefix/$libdir/libproxc_runtime.a" "$work/prefix/share/proxc/halide_ops/proxc/halide_ops.h" >/dev/null
# patch_NLM's module (OpenCV), loaded from beside the installed libproxc.
ls "$work/prefix/$libdir/libproxc_nlm.so" >/dev/null
# Nothing internal is installed: only the public headers.
if ls "$work/prefix/include/proxc" | grep -v -E '^(array|black_box|check|communicator|error|kinds|module|passes|problem|prox_fn|proxc|runtime|save_options|solver)\.h$'; then
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
# Ahead of time: the installed proxc writes a pipeline library with an FFT
# solve; a CMake project links it with proxc::runtime alone (no libproxc, no
# Halide, no LLVM) and calls it: handed null buffers, the pipeline's own
# argument check answers (so its code and Halide's runtime are linked and run).
"$work/prefix/bin/proxc" compile "$src/examples/deconv_tv.prox" --solver pc --aot "$work/aot" --name deconv \
  >"$work/aot.log"
grep -q "proxc::runtime" "$work/aot.log"
mkdir -p "$work/aot_consumer"
cat >"$work/aot_consumer/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.16)
project(aot_consumer CXX)
find_package(proxc REQUIRED)
add_executable(driver main.cpp)
target_include_directories(driver PRIVATE "$work/aot")
target_link_libraries(driver PRIVATE "$work/aot/deconv.a" proxc::runtime)
EOF
cat >"$work/aot_consumer/main.cpp" <<'EOF'
#include <cstdio>
#include "deconv_call.h"
int main() {
  // Every buffer null: the pipeline's argument check reports one. (Inputs x0, xbar0, y0, y1, the
  // check flag, data0 (b), data1 and data2 (the Gaussian kernel's two factors), spectrum0; outputs
  // r2, s2, pri_a, pri_b, dual_a, dual_b, x0, xbar0, y0, y1 and the finiteness norms finite_x0,
  // finite_xbar0, finite_y0, finite_y1.)
  int rc = deconv_call(nullptr, nullptr, nullptr, nullptr, 1.0, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                  nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                  nullptr);
  std::printf("deconv returned %d\n", rc);
  return rc != 0 ? 0 : 1;
}
EOF
cmake -S "$work/aot_consumer" -B "$work/aot_consumer/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  >"$work/aot_configure.log" || { cat "$work/aot_configure.log"; exit 1; }
cmake --build "$work/aot_consumer/build" >"$work/aot_build.log" || { cat "$work/aot_build.log"; exit 1; }
if ldd "$work/aot_consumer/build/driver" | grep -E "libproxc|Halide|LLVM"; then
  echo "the AOT driver links more than proxc::runtime"; exit 1
fi
# Halide's runtime reports the null buffer and aborts (its default error handler).
if "$work/aot_consumer/build/driver" >"$work/aot_run.txt" 2>&1; then cat "$work/aot_run.txt"; exit 1; fi
grep -q "Buffer argument .* is nullptr" "$work/aot_run.txt" || { cat "$work/aot_run.txt"; exit 1; }

# The generator program Module::source() prints builds with the command in its
# own header, which names the installed op library (share/proxc/halide_ops).
"$work/prefix/bin/proxc" compile "$src/examples/denoise_tv_iso.prox" --emit source -o "$work/gen.cpp"
grep -q -- "-I $work/prefix/share/proxc/halide_ops -I $work/prefix/include " "$work/gen.cpp" ||
  { echo "the generator's build line does not name the installed headers:"; sed -n 3,4p "$work/gen.cpp"; exit 1; }
build_line="$(sed -n '3,4p' "$work/gen.cpp" | sed 's|^//||; s|\\$||' | tr '\n' ' ' | sed 's/&&.*//')"
(cd "$work" && eval "${build_line/THIS_FILE.cpp/gen.cpp}") >"$work/gen_build.log" 2>&1 ||
  { echo "$build_line"; cat "$work/gen_build.log"; exit 1; }
(cd "$work" && ./generator "$work/gen_out" denoise) >"$work/gen_run.log" 2>&1 || { cat "$work/gen_run.log"; exit 1; }
ls "$work/gen_out/denoise.a" "$work/gen_out/denoise.h" >/dev/null

echo "install test: ok (headers, libproxc, proxcConfig; consumer built and equal to proxc solve;" \
  "an AOT library linked with proxc::runtime; a printed generator built from the installed headers)"

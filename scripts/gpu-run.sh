#!/usr/bin/env bash
# Runs on a GPU machine from a bundle made by scripts/gpu-bundle.sh:
#   bash run.sh [TARGET]   (default host-cuda-cuda_capability_86; PTX for
#                           sm_86, which the driver compiles for newer GPUs)
# 1. Correctness: TV denoising and TV deconvolution at 512^2, 100 iterations
#    with fixed steps, on TARGET and on the CPU: PSNR of TARGET's iterate
#    against the CPU's (peak 1; the data's range is about 1) and the target
#    used, which must name the GPU API, and where the FFT stages ran (cuFFT
#    on the device where libcufft loads).
# 2. Speed: ms per iteration at 512^2, 1024^2, 2048^2 and 4096^2 on TARGET
#    and on the CPU, for pc on both problems, from two solves (100 and 300
#    iterations, one check at the end): the slope is the cost of an
#    iteration, the rest of the 100-iteration solve's iterating time its
#    fixed cost (on the GPU: the state and data copied up by the first run,
#    the driver's kernel compiles, the scalars of the one check; the copy
#    back at the end comes after the solve's iterating time); with the
#    effective bandwidth of a
#    TV iteration (pc reads x, x̄, y (2 floats per pixel) and b and writes x,
#    x̄, y: 36 bytes per pixel at least) and the time to compile. One line per
#    size and target, to paste in a note. Also the deconvolution with conv in
#    K (--no-diagonalize), with its taps staged in shared memory and without.
# 3. The tests of the GPU schedule on TARGET (PROXC_TEST_GPU_TARGET): every
#    operator, prox and value against the emulator, reductions, resident
#    solves against the CPU, ProxImaL's conformance cases (HalideGpu.*,
#    DeviceResidency.*, the OpenCL-named conformance cases, which then run on
#    TARGET). TESTS=0 skips them.
# The problems are built from gaussian(...) constants: no data files.
# SIZES="512 1024" runs fewer sizes, SIZES= none.
set -euo pipefail
cd "$(dirname "$0")"
target="${1:-host-cuda-cuda_capability_86}"
# Unpacked once per bundle (again when the bundle is newer than what is unpacked).
if [ ! -x bin/proxc ] || [ ! -x bin/halide_tests ] || [ proxc.tar.xz -nt bin/proxc ]; then
  rm -rf bin lib shared
  xz -dc proxc.tar.xz | tar -xf -
  touch bin/proxc
fi
export LD_LIBRARY_PATH="$PWD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# cuFFT (the device FFT stages of CUDA pipelines) where the CUDA toolkit keeps it.
for d in "${CUDA_HOME:-/usr/local/cuda}/lib64" /usr/local/cuda/lib64; do
  if [ -e "$d/libcufft.so" ]; then export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"; break; fi
done
export PROXC_CACHE_DIR=off
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
work="$(mktemp -d)"
problem() {  # NAME N: writes $work/NAME_N.prox; b peaks at about 0.9
  local name=$1 n=$2 amp=$(($2 * $2 * 16 / 100))
  if [ "$name" = tv ]; then
    printf 'b = %d * gaussian([%d, %d], %d)\nx = variable(shape(b))\nminimize sum_squares(x - b) + 0.1 * group_norm1(grad(x), [2]) + nonneg(x)\n' \
      "$amp" "$n" "$n" $((n / 6)) > "$work/tv_$n.prox"
  else
    printf 'b = %d * gaussian([%d, %d], %d)\nk = gaussian(7, 1.5)\nx = variable(shape(b))\nminimize sum_squares(conv(k, x) - b) + 0.001 * group_norm1(grad(x), [2]) + nonneg(x)\n' \
      "$amp" "$n" "$n" $((n / 6)) > "$work/deconv_$n.prox"
  fi
}
summary() {  # prints ms/iteration, compile seconds, psnr and the target used from --json
  python3 -c 'import json,sys; d=json.load(sys.stdin); s=d["seconds"]; print("%.4f ms/it  compile %.2f s  psnr %s  used %s  fft %s" % (1e3*s["iterate"]/d["iterations"], s["compile"], d.get("psnr","-"), d["target"]["used"], d["target"].get("fft","-")))' 2>/dev/null ||
    grep -o '"iterate": [0-9.e-]*\|"used": "[^"]*"\|"psnr": [0-9.]*'
}
echo "== correctness: $target against the CPU, 512^2, 100 iterations"
for name in tv deconv; do
  problem "$name" 512
  bin/proxc solve "$work/${name}_512.prox" --iters 100 --eps-abs 0 --eps-rel 0 --fixed-steps --json \
    -o "$work/${name}_cpu.npy" > /dev/null
  # PSNR (peak 1) of the target's iterate against the CPU's: 80 dB is an RMS difference of 1e-4.
  echo "$name: $(bin/proxc solve "$work/${name}_512.prox" --iters 100 --eps-abs 0 --eps-rel 0 --fixed-steps --json \
    --target "$target" --reference "$work/${name}_cpu.npy" | summary)"
done
echo "== speed: pc, 100 and 300 iterations, a check at the end"
iterate() {  # FILE TARGET ITERS [FLAGS]: the solve's iterate seconds and compile seconds
  bin/proxc solve "$1" --iters "$3" --eps-abs 0 --eps-rel 0 --fixed-steps --check-every 1000 --json --target "$2" ${4:-} |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["seconds"]["iterate"], d["seconds"]["compile"], d["target"]["used"])'
}
# "stencil": the deconvolution with conv in K (--no-diagonalize), its 7x7
# taps read from shared memory, and "unstaged" the same without
# (PROXC_GPU_STAGED_TAPS=0): what staging buys.
for n in ${SIZES-512 1024 2048 4096}; do
  for name in tv deconv stencil unstaged; do
    file=$name flags= staged=
    case $name in
      stencil) file=deconv flags=--no-diagonalize ;;
      unstaged) file=deconv flags=--no-diagonalize staged=0 ;;
      *) problem "$name" "$n" ;;
    esac
    for t in host "$target"; do
      [ "$name" = unstaged ] && [ "$t" = host ] && continue
      failed() { echo "gpu-run: the solve of ${name} at ${n}^2 on $t failed (run it by hand for its message)" >&2; exit 1; }
      read -r t100 c100 used < <(PROXC_GPU_STAGED_TAPS=$staged iterate "$work/${file}_$n.prox" "$t" 100 "$flags") || failed
      read -r t300 c300 _ < <(PROXC_GPU_STAGED_TAPS=$staged iterate "$work/${file}_$n.prox" "$t" 300 "$flags") || failed
      python3 -c 'import sys
name, n, t, t100, t300, c, used = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]), sys.argv[7]
per = (t300 - t100) / 200
fixed = t100 - 100 * per
bw = 36 * n * n / per / 1e9 if name == "tv" and per > 0 else float("nan")
print("%s %d %s: %.4f ms/it  fixed %.2f ms per solve  %.0f GB/s (TV: 36 B/px)  compile %.2f s  used %s" %
      (name, n, t, 1e3 * per, 1e3 * fixed, bw, c, used))' "$name" "$n" "$t" "$t100" "$t300" "$c300" "$used"
    done
  done
done
rm -rf "$work"
if [ "${TESTS:-1}" != 0 ]; then
  echo "== tests of the GPU schedule on $target"
  export PROXC_TEST_GPU_TARGET="$target" PROXC_TEST_SHARED_DIR="$PWD/shared"
  status=0
  bin/halide_tests --gtest_filter='HalideGpu.*' --gtest_brief=1 || status=1
  bin/solver_tests --gtest_filter='DeviceResidency.*' --gtest_brief=1 || status=1
  bin/conformance_tests --gtest_filter='*OpenCl*:*opencl*' --gtest_brief=1 || status=1
  echo "tests: $([ $status = 0 ] && echo passed || echo FAILED)"
  exit $status
fi

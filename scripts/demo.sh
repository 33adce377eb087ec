#!/usr/bin/env bash
# The main job: installs the dependencies, builds proxc (release) and runs a
# real reconstruction on a bundled example — TV deconvolution of a blurred,
# noisy image with the compiled (Halide) solver — writing the restored image
# and printing a summary with PSNR/SSIM before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh release proxc
proxc=build/release/tools/proxc/proxc
mkdir -p out
example=examples/deconv_tv.prox
echo "== $proxc check $example --backend halide"
$proxc check "$example" --backend halide | tail -2
echo "== $proxc solve $example (Pock-Chambolle, Halide JIT)"
$proxc solve "$example" --iters 1000 --eps-abs 0 --eps-rel 0 --reference examples/data/clean.npy \
  -o out/deconv_tv.png --full
echo "== the degraded input, for comparison"
$proxc metrics examples/data/blurred.npy examples/data/clean.npy

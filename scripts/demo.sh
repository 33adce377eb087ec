#!/usr/bin/env bash
# The main job: installs the dependencies, builds proxc (release) and restores
# a real photograph: examples/photos/camera.png (CC0) is blurred by a 9x9
# Gaussian and noised, then deconvolved with total variation by the compiled
# (Halide) Pock-Chambolle solver. Writes the restored image and a side-by-side
# PNG (original | degraded | restored) and a report page (out/report/index.html:
# the formula, the images, the convergence plot) to out/, and prints PSNR/SSIM
# before and after and the time of each phase.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh release proxc proxc_make_example_data
proxc=build/release/tools/proxc/proxc
mkdir -p out
photo=examples/photos/camera.png
echo "== degrading $photo (Gaussian blur 9x9, sigma 2; noise 0.01) and making the other examples' inputs"
build/release/examples/proxc_make_example_data examples --photos
example=examples/photos/deblur_camera.prox
echo "== $proxc solve $example (Pock-Chambolle, Halide)"
$proxc solve "$example" --iters 400 --eps-abs 0 --eps-rel 0 --reference "$photo" -o out/camera_restored.png \
  --report out/report --full
echo "== the degraded input, for comparison"
$proxc metrics examples/photos/camera_gauss_blurred.npy "$photo"
$proxc montage "$photo" examples/photos/camera_gauss_blurred.npy out/camera_restored.png -o out/camera_side_by_side.png

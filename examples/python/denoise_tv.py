"""TV denoising of a photograph, written as a ProxImaL script (only the import differs).

    python3 examples/python/denoise_tv.py [--out DIR]

Adds Gaussian noise (sigma 0.1) to examples/photos/camera.png, restores it by
isotropic total variation with nonneg (Pock-Chambolle, 300 iterations checked every 10),
writes DIR/denoise_tv.png (noisy | restored | original) and
DIR/denoise_tv_convergence.png, and prints PSNR and SSIM.
"""
import argparse
import os
import time

import numpy as np

from proxc import *  # was: from proximal import *
import proxc

here = os.path.dirname(os.path.abspath(__file__))
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--out", default="out/python")
args = parser.parse_args()
os.makedirs(args.out, exist_ok=True)

original = proxc.load_array(os.path.join(here, "..", "photos", "camera.png"))
rng = np.random.default_rng(1)
noisy = (original + 0.1 * rng.standard_normal(original.shape)).astype(np.float32)

x = Variable(noisy.shape)
prob = Problem(sum_squares(x - noisy) + 0.15 * group_norm1(grad(x), [2]) + nonneg(x))
start = time.perf_counter()
objective = prob.solve(max_iters=300, eps_abs=0, eps_rel=0, conv_check=10, history=True)
seconds = time.perf_counter() - start

proxc.save_array(os.path.join(args.out, "denoise_tv.png"), np.hstack([noisy, x.value, original]).clip(0, 1))
try:  # matplotlib is optional
    proxc.plot_convergence(prob.history, os.path.join(args.out, "denoise_tv_convergence.png"), title="TV denoising")
except ImportError as e:
    print(f"(no convergence plot: {e})")
# (solve() returns ProxImaL's value, +inf when an entry of x is below -1e-3; the summary has it at max(x, 0).)
print(f"TV denoising {noisy.shape}: {prob.summary.iterations} iterations, objective "
      f"{prob.summary.objective_at_projection:.6g} at max(x, 0), {seconds:.2f} s")
print(f"PSNR {proxc.psnr(noisy, original):.2f} dB -> {proxc.psnr(x.value, original):.2f} dB, "
      f"SSIM {proxc.ssim(noisy, original):.3f} -> {proxc.ssim(x.value, original):.3f}")

"""Inpainting of a photograph with half its pixels missing, written as a ProxImaL script.

    python3 examples/python/inpaint.py [--out DIR]

Keeps a random half of examples/photos/camera.png's pixels, fills in the rest
by isotropic TV (linearized ADMM), writes DIR/inpaint.png (observed | restored
| original) and DIR/inpaint_convergence.png, and prints PSNR and SSIM.
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
rng = np.random.default_rng(3)
mask = (rng.random(original.shape) < 0.5).astype(np.float32)
observed = mask * original

x = Variable(original.shape)
prob = Problem(sum_squares(mul_elemwise(mask, x) - observed) + 0.01 * group_norm1(grad(x), [2]))
start = time.perf_counter()
objective = prob.solve(solver="ladmm", max_iters=500, eps_abs=1e-4, eps_rel=1e-4, history=True)
seconds = time.perf_counter() - start

proxc.save_array(os.path.join(args.out, "inpaint.png"), np.hstack([observed, x.value, original]).clip(0, 1))
try:  # matplotlib is optional
    proxc.plot_convergence(prob.history, os.path.join(args.out, "inpaint_convergence.png"), title="inpainting")
except ImportError as e:
    print(f"(no convergence plot: {e})")
print(f"inpainting {original.shape}: {prob.summary.iterations} iterations, objective {objective:.6g}, {seconds:.2f} s")
print(f"PSNR {proxc.psnr(observed, original):.2f} dB -> {proxc.psnr(x.value, original):.2f} dB, "
      f"SSIM {proxc.ssim(observed, original):.3f} -> {proxc.ssim(x.value, original):.3f}")

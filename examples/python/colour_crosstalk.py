"""Colour crosstalk and vignetting undone pixel by pixel, written as a ProxImaL script.

    python3 examples/python/colour_crosstalk.py [--out DIR]

A sensor whose colour channels leak into each other more towards the corners (5 % at the
centre, 25 % at the corners) and whose gain falls to 0.55 there: each pixel sees its own 3x3
matrix of examples/photos/chelsea.png's colours, then Gaussian noise (sigma 0.03). Dividing by
each pixel's matrix (np.linalg.solve) amplifies the noise where the matrices are worst; the
model pxwise_matrixmult(A, x) (ProxImaL's matrix per pixel) fitted with colour total variation
and nonneg is solved by linearized ADMM (400 iterations). Writes DIR/colour_crosstalk.png
(observed | per-pixel inverse | restored | original) and DIR/colour_crosstalk_convergence.png,
and prints PSNR and SSIM of the per-pixel inverse and of the restoration.
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

original = proxc.load_array(os.path.join(here, "..", "photos", "chelsea.png"))  # (300, 451, 3) in [0, 1]
rows, cols, _ = original.shape
r2 = ((np.arange(rows)[:, None] - (rows - 1) / 2) / (rows / 2)) ** 2 + \
     ((np.arange(cols)[None, :] - (cols - 1) / 2) / (cols / 2)) ** 2
r2 = r2 / r2.max()                                     # 0 at the centre, 1 at the corners
leak = 0.05 + 0.20 * r2                                # the share each channel gives each other one
gain = 1.0 - 0.45 * r2                                 # vignetting
eye = np.eye(3)
A = (gain[..., None, None] * ((1 - 3 * leak[..., None, None]) * eye + leak[..., None, None])).astype(np.float32)

rng = np.random.default_rng(3)
observed = (np.einsum("...ij,...j->...i", A, original) + 0.03 * rng.standard_normal(original.shape))
observed = observed.astype(np.float32)
inverse = np.linalg.solve(A.astype(np.float64), observed[..., None].astype(np.float64))[..., 0]

x = Variable(original.shape)
prob = Problem(sum_squares(pxwise_matrixmult(A, x) - observed)
               + 0.02 * group_norm1(grad(x, dims=2), [2, 3]) + nonneg(x))
start = time.perf_counter()
prob.solve(solver="ladmm", max_iters=400, eps_abs=0, eps_rel=0, conv_check=10, history=True)
seconds = time.perf_counter() - start

panel = np.hstack([observed, inverse, x.value, original]).clip(0, 1)
proxc.save_array(os.path.join(args.out, "colour_crosstalk.png"), panel.astype(np.float32))
try:  # matplotlib is optional
    proxc.plot_convergence(prob.history, os.path.join(args.out, "colour_crosstalk_convergence.png"),
                           title="Colour crosstalk")
except ImportError as e:
    print(f"(no convergence plot: {e})")
print(f"Colour crosstalk {original.shape}: {prob.summary.iterations} iterations, objective "
      f"{prob.summary.objective_at_projection:.6g} at max(x, 0), {seconds:.2f} s")
print(f"PSNR {proxc.psnr(inverse, original):.2f} dB -> {proxc.psnr(x.value, original):.2f} dB, "
      f"SSIM {proxc.ssim(inverse, original):.3f} -> {proxc.ssim(x.value, original):.3f} "
      f"(the per-pixel inverse -> the restoration)")

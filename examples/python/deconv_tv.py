"""TV deconvolution of a photograph, written as a ProxImaL script (only the import differs).

    python3 examples/python/deconv_tv.py [--out DIR] [--solver pc|ladmm|admm]

Blurs examples/photos/camera.png by a 9x9 Gaussian (sigma 2, circular) with
noise 0.01, restores it by isotropic TV with nonneg (the README's problem),
writes DIR/deconv_tv.png (blurred | restored | original) and
DIR/deconv_tv_convergence.png, and prints PSNR and SSIM.
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
parser.add_argument("--solver", default="pc")
parser.add_argument("--iters", type=int, default=400)
args = parser.parse_args()
os.makedirs(args.out, exist_ok=True)

original = proxc.load_array(os.path.join(here, "..", "photos", "camera.png"))
t = np.arange(9) - 4
g = np.exp(-t ** 2 / (2 * 2.0 ** 2))
k = np.outer(g, g).astype(np.float32)
k /= k.sum()
# The blur (circular, centred as conv's kernel is) and the noise, in NumPy.
pad = np.zeros(original.shape, np.float32)
pad[:9, :9] = k
pad = np.roll(pad, (-4, -4), axis=(0, 1))
blurred = np.real(np.fft.ifft2(np.fft.fft2(original) * np.fft.fft2(pad))).astype(np.float32)
rng = np.random.default_rng(2)
blurred = (blurred + 0.01 * rng.standard_normal(blurred.shape)).astype(np.float32)

x = Variable(blurred.shape)
prob = Problem(sum_squares(conv(k, x) - blurred) + 0.001 * group_norm1(grad(x), [2]) + nonneg(x))
start = time.perf_counter()
objective = prob.solve(solver=args.solver, max_iters=args.iters, eps_abs=0, eps_rel=0, conv_check=20,
                       history=True)
seconds = time.perf_counter() - start

proxc.save_array(os.path.join(args.out, "deconv_tv.png"), np.hstack([blurred, x.value, original]).clip(0, 1))
try:  # matplotlib is optional
    proxc.plot_convergence(prob.history, os.path.join(args.out, "deconv_tv_convergence.png"), title="TV deconvolution")
except ImportError as e:
    print(f"(no convergence plot: {e})")
print(f"TV deconvolution {blurred.shape} ({args.solver}): {prob.summary.iterations} iterations, "
      f"objective {prob.summary.objective_at_projection:.6g} at max(x, 0), {seconds:.2f} s ({1e3 * prob.summary.iterate_s / prob.summary.iterations:.2f} ms "
      f"per iteration)")
print(f"PSNR {proxc.psnr(blurred, original):.2f} dB -> {proxc.psnr(x.value, original):.2f} dB, "
      f"SSIM {proxc.ssim(blurred, original):.3f} -> {proxc.ssim(x.value, original):.3f}")

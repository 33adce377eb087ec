"""Deblurring with a prior written in Python: a prox function of your own.

    python3 examples/python/pnp_wavelet.py [--out DIR] [--levels L] [--weight T]

Blurs examples/photos/camera.png by a 9x9 Gaussian (sigma 2, circular) with
noise 0.01 and restores it with a wavelet-sparsity prior that proxc does not
have: T * ||details of W x||_1 for the orthonormal 2-D Haar transform W of L
levels. Its prox is exact and takes a few lines of NumPy (threshold the
detail coefficients, transform back), so it is registered from Python with
proxc.register_prox_fn and used like any function; a plug-and-play denoiser
(a network, BM3D) would be registered the same way. The compiled solver calls
it between its fused regions each iteration. Writes DIR/pnp_wavelet.png
(blurred | restored | original) and DIR/pnp_wavelet_convergence.png, and
prints PSNR and SSIM.
"""
import argparse
import os
import time

import numpy as np

from proxc import *  # noqa: F403
import proxc

here = os.path.dirname(os.path.abspath(__file__))
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--out", default="out/python")
parser.add_argument("--levels", type=int, default=4)
parser.add_argument("--weight", type=float, default=0.001)
parser.add_argument("--iters", type=int, default=200)
args = parser.parse_args()
os.makedirs(args.out, exist_ok=True)


def haar(a, levels, inverse=False):
    """The orthonormal 2-D Haar transform of `levels` levels (or its inverse):
    each level splits the top-left block into averages and differences along
    rows, then along columns, scaled by 1/sqrt(2)."""
    a = np.array(a, dtype=np.float64)
    sizes = [(a.shape[0] >> i, a.shape[1] >> i) for i in range(levels)]
    for h, w in (reversed(sizes) if inverse else sizes):
        block = a[:h, :w]
        for axis in (1, 0) if inverse else (0, 1):
            b = np.moveaxis(block, axis, 0)
            if inverse:
                lo, hi = b[: b.shape[0] // 2], b[b.shape[0] // 2:]
                out = np.empty_like(b)
                out[0::2], out[1::2] = (lo + hi) / np.sqrt(2), (lo - hi) / np.sqrt(2)
            else:
                out = np.concatenate([(b[0::2] + b[1::2]) / np.sqrt(2), (b[0::2] - b[1::2]) / np.sqrt(2)])
            block[...] = np.moveaxis(out, 0, axis)
    return a


def details(shape, levels):
    """The mask of the detail coefficients (all but the coarsest averages)."""
    m = np.ones(shape, bool)
    m[: shape[0] >> levels, : shape[1] >> levels] = False
    return m


def wavelet_prox(v, rho, t=1.0, levels=4.0):
    """argmin_x t*||details of W x||_1 + (rho/2)||x - v||^2 = W^T soft(W v, t/rho) on the details."""
    levels = int(levels)
    c = haar(v, levels)
    d = details(c.shape, levels)
    c[d] = np.sign(c[d]) * np.maximum(np.abs(c[d]) - t / rho, 0)
    return haar(c, levels, inverse=True)


def wavelet_value(x, t=1.0, levels=4.0):
    levels = int(levels)
    c = haar(x, levels)
    return t * np.abs(c[details(c.shape, levels)]).sum()


proxc.register_prox_fn("haar_l1", wavelet_prox, wavelet_value, t=1.0, levels=4.0)

original = proxc.load_array(os.path.join(here, "..", "photos", "camera.png"))
assert original.shape[0] % (1 << args.levels) == 0 and original.shape[1] % (1 << args.levels) == 0
# The inverse undoes the transform (it is orthonormal, so the prox above is exact).
probe = np.random.default_rng(0).standard_normal((16, 16))
assert np.allclose(haar(haar(probe, 3), 3, inverse=True), probe)

t = np.arange(9) - 4
g = np.exp(-t ** 2 / (2 * 2.0 ** 2))
k = np.outer(g, g).astype(np.float32)
k /= k.sum()
pad = np.zeros(original.shape, np.float32)
pad[:9, :9] = k
pad = np.roll(pad, (-4, -4), axis=(0, 1))
blurred = np.real(np.fft.ifft2(np.fft.fft2(original) * np.fft.fft2(pad))).astype(np.float32)
rng = np.random.default_rng(2)
blurred = (blurred + 0.01 * rng.standard_normal(blurred.shape)).astype(np.float32)

x = Variable(blurred.shape)
prob = Problem(sum_squares(conv(k, x) - blurred) + prox_fn("haar_l1", x, t=args.weight, levels=args.levels)
               + nonneg(x))
start = time.perf_counter()
objective = prob.solve(max_iters=args.iters, eps_abs=0, eps_rel=0, conv_check=10, history=True)
seconds = time.perf_counter() - start

proxc.save_array(os.path.join(args.out, "pnp_wavelet.png"), np.hstack([blurred, x.value, original]).clip(0, 1))
try:  # matplotlib is optional
    proxc.plot_convergence(prob.history, os.path.join(args.out, "pnp_wavelet_convergence.png"),
                           title="Deblurring, Haar-sparsity prior in Python")
except ImportError as e:
    print(f"(no convergence plot: {e})")
print(f"Haar-l1 deblurring {blurred.shape}, {args.levels} levels: {prob.summary.iterations} iterations, objective "
      f"{prob.summary.objective_at_projection:.6g} at max(x, 0), {seconds:.2f} s")
print(f"PSNR {proxc.psnr(blurred, original):.2f} dB -> {proxc.psnr(x.value, original):.2f} dB, "
      f"SSIM {proxc.ssim(blurred, original):.3f} -> {proxc.ssim(x.value, original):.3f}")

"""A few of ProxImaL's utilities (proximal.utils.utils), for its scripts."""
import time

import numpy as np

Impl = {"numpy": 0, "halide": 1, "pycuda": 2}


def im2nparray(img, datatype=np.float32):
    """An integer image scaled to [0, 1] (a float image is returned as it is)."""
    a = np.asarray(img)
    if np.issubdtype(a.dtype, np.integer):
        return (a / float(np.iinfo(a.dtype).max)).astype(datatype)
    return a.astype(datatype)


def psnr(x, ref, pad=None, maxval=1.0):
    """PSNR in dB of x against ref, `pad` pixels cropped from each border."""
    x, ref = np.asarray(x, np.float64), np.asarray(ref, np.float64)
    if pad:
        x, ref = x[pad:-pad, pad:-pad], ref[pad:-pad, pad:-pad]
    mse = np.mean((x - ref) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(maxval ** 2 / mse)


_t0 = [0.0]


def tic():
    _t0[0] = time.perf_counter()


def toc():
    """Milliseconds since tic()."""
    return (time.perf_counter() - _t0[0]) * 1000.0

"""ProxImaL's utilities (proximal.utils.utils) that its scripts import:
images to arrays, timing, FFTs over leading axes and the optical transfer
function of a kernel, the noise estimate estimate_std. Written for proxc with
NumPy; the functions that read ProxImaL's own test data (get_test_image,
get_kernel) are not here."""
import numbers
import time

import numpy as np

Impl = {"numpy": 0, "halide": 1, "pycuda": 2}


def im2nparray(img, datatype=np.float32):
    """An integer image divided by 2**bits - 1 (ProxImaL's scaling: 255 for
    8 bits, 65535 for 16); a float image is returned as it is, in `datatype`."""
    a = np.asarray(img)
    if np.issubdtype(a.dtype, np.integer):
        return (a.astype(np.float64) / float(2 ** (8 * a.dtype.itemsize) - 1)).astype(datatype)
    return a.astype(datatype)


def psnr(x, ref, pad=None, maxval=1.0):
    """PSNR in dB of x against ref (inf where they agree to rounding), pad[j]
    entries cropped from both ends of axis j (ProxImaL's per-axis tuple; an
    int crops every axis)."""
    x, ref = np.asarray(x, np.float64), np.asarray(ref, np.float64)
    if x.shape != ref.shape:
        raise ValueError(f"psnr: x has shape {x.shape}, ref {ref.shape}")
    if pad is not None:
        pads = [int(pad)] * x.ndim if np.isscalar(pad) else [int(p) for p in pad]
        pads += [0] * (x.ndim - len(pads))
        crop = tuple(slice(p, -p) if p > 0 else slice(None) for p in pads[:x.ndim])
        x, ref = x[crop], ref[crop]
    mse = np.mean((x - ref) ** 2)
    return float("inf") if mse <= np.finfo(float).eps else float(10 * np.log10(maxval ** 2 / mse))


_last_tic = [None]


def tic():
    """Starts the timer; returns its start (for toc(t))."""
    _last_tic[0] = time.perf_counter()
    return _last_tic[0]


def toc(t=None):
    """Milliseconds since `t`, or since the last tic()."""
    start = _last_tic[0] if t is None or (isinstance(t, list) and not t) else t
    if start is None:
        raise RuntimeError("toc: tic() was never called")
    return (time.perf_counter() - start) * 1000.0


def _leading_axes(dims):
    return None if dims is None else tuple(range(int(dims)))


def fftd(I, dims=None):  # noqa: E741 (ProxImaL's name)
    """The FFT over the first `dims` axes (every axis when None)."""
    return np.fft.fftn(I, axes=_leading_axes(dims))


def ifftd(I, dims=None):  # noqa: E741
    """The inverse FFT over the first `dims` axes (every axis when None)."""
    return np.fft.ifftn(I, axes=_leading_axes(dims))


def circshift(x, shifts):
    """x rolled by shifts[j] along axis j, for each leading axis j."""
    return np.roll(x, tuple(int(s) for s in shifts), axis=tuple(range(len(shifts))))


def psf2otf(K, outsize, dims=None):
    """The optical transfer function of kernel K for arrays of shape
    `outsize`: K zero-padded to outsize with its centre (index k // 2 on each
    axis) moved to the origin, transformed over the first `dims` axes (all
    when None), so that multiplying by it in the Fourier domain is proxc's and
    ProxImaL's circular conv. An imaginary part below the transform's
    rounding (relative to the largest magnitude) is dropped, as ProxImaL does."""
    K = np.asarray(K)
    if K.ndim != len(outsize):
        raise ValueError(f"psf2otf: the kernel has {K.ndim} axes, outsize {len(outsize)}")
    if any(k > n for k, n in zip(K.shape, outsize)):
        raise ValueError(f"psf2otf: the kernel {K.shape} is larger than outsize {tuple(outsize)}")
    padded = np.zeros(tuple(int(n) for n in outsize), dtype=np.result_type(K.dtype, np.float32))
    padded[tuple(slice(0, k) for k in K.shape)] = K
    n_axes = K.ndim if dims is None else min(int(dims), K.ndim)
    padded = circshift(padded, [-(k // 2) for k in K.shape[:n_axes]])
    otf = fftd(padded, dims)
    # Rounding of the transforms: about log2(k)·k operations per entry along each transformed axis.
    ks = K.shape[:n_axes]
    work = sum(k * np.log2(k) * (np.prod(ks) / k) for k in ks if k > 1)
    biggest = np.max(np.abs(otf)) if otf.size else 0.0
    if biggest > 0 and np.max(np.abs(otf.imag)) / biggest <= work * np.finfo(np.float32).eps:
        otf = otf.real + 0j
    return otf


NoiseEstMethod = {"daub_reflect": 0, "daub_replicate": 1}

# Daubechies' 6-tap high-pass filter, ProxImaL's constants (its estimate_std).
_DAUB6 = np.array([0.03522629188571, 0.08544127388203, -0.13501102001025,
                   -0.45987750211849, 0.80689150931109, -0.33267055295008])


def estimate_std(z, method="daub_reflect"):
    """ProxImaL's estimate of the standard deviation of additive Gaussian
    noise: the median absolute value of the image's diagonal wavelet detail
    (Daubechies' 6-tap filter along the rows, then along the columns, as
    OpenCV's sepFilter2D correlates it: taps at offsets -3..2, the image
    extended by reflection without repeating the edge ("daub_reflect") or by
    repeating it ("daub_replicate")) divided by 0.6745. One value per
    channel of an (H, W) or (H, W, C) image; like ProxImaL's, each is the
    median over every channel. Written with NumPy (ProxImaL calls OpenCV)."""
    if isinstance(method, numbers.Integral) and not isinstance(method, bool) and method in NoiseEstMethod.values():
        method = {v: k for k, v in NoiseEstMethod.items()}[method]
    if not isinstance(method, str) or method not in NoiseEstMethod:
        raise ValueError(f"estimate_std: method must be one of {sorted(NoiseEstMethod)}, got {method!r}")
    try:
        z = np.asarray(z, np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"estimate_std: expected an image of numbers ({e})") from None
    if z.ndim not in (2, 3):
        raise ValueError(f"estimate_std: an image of 2 or 3 axes, got shape {z.shape}")
    if z.size == 0:
        raise ValueError(f"estimate_std: the image of shape {z.shape} has no pixels")
    if z.ndim == 2:
        z = z[..., np.newaxis]
    if not np.isfinite(z).all():
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(z))[0])
        raise ValueError(f"estimate_std: the pixel at {bad[:2]} is {z[bad]} (NaN or Inf)")
    rows, cols = z.shape[:2]
    ext = np.pad(z, ((3, 2), (3, 2), (0, 0)), mode="reflect" if method == "daub_reflect" else "edge")
    along_rows = sum(_DAUB6[i] * ext[:, i:i + cols] for i in range(6))
    detail = sum(_DAUB6[i] * along_rows[i:i + rows] for i in range(6))
    return np.full(z.shape[2], np.median(np.abs(detail)) / 0.6745)

"""proxc.ssim and proxc.psnr against scikit-image's structural_similarity and
peak_signal_noise_ratio on the same images, with the settings
include/proxc/array.h states (Wang et al.'s: Gaussian window sigma 1.5, K1
0.01, K2 0.03, population covariances, range 1)."""
import numpy as np
import pytest

import proxc
from conftest import REPO

metrics = pytest.importorskip("skimage.metrics")


def _pairs():
    rng = np.random.default_rng(4)
    grey = proxc.load_array(REPO / "examples" / "photos" / "camera.png")
    colour = proxc.load_array(REPO / "examples" / "photos" / "chelsea.png")
    for clean in (grey, colour, grey[:37, :64]):
        for noise in (0.02, 0.1, 0.3):
            noisy = np.clip(clean + noise * rng.standard_normal(clean.shape), 0, 1).astype(np.float32)
            yield clean, noisy


def test_ssim_is_scikit_images():
    for clean, noisy in _pairs():
        # (in float64: scikit-image computes in the inputs' precision, proxc in double)
        want = metrics.structural_similarity(clean.astype(np.float64), noisy.astype(np.float64), data_range=1.0,
                                             gaussian_weights=True, sigma=1.5,
                                             use_sample_covariance=False,
                                             channel_axis=-1 if clean.ndim == 3 else None)
        assert proxc.ssim(noisy, clean) == pytest.approx(want, abs=1e-9), clean.shape


def test_psnr_is_scikit_images():
    for clean, noisy in _pairs():
        want = metrics.peak_signal_noise_ratio(clean.astype(np.float64), noisy.astype(np.float64), data_range=1.0)
        assert proxc.psnr(noisy, clean) == pytest.approx(want, rel=1e-9)

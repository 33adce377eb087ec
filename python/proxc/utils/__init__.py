"""ProxImaL's utilities (proximal.utils): ``proxc.utils.utils`` holds them, as
``proximal.utils.utils`` does, so ``from proxc.utils.utils import psf2otf``
works where a script imported it from ProxImaL; ``proxc.utils.metrics`` has
its metrics (``psnr_metric``, for Problem.solve's ``metric=``)."""
from . import metrics  # noqa: F401
from .utils import (Impl, NoiseEstMethod, circshift, estimate_std, fftd, ifftd, im2nparray, psf2otf,  # noqa: F401
                    psnr, tic, toc)

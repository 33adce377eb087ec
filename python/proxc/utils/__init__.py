"""ProxImaL's utilities (proximal.utils): ``proxc.utils.utils`` holds them, as
``proximal.utils.utils`` does, so ``from proxc.utils.utils import psf2otf``
works where a script imported it from ProxImaL; ``proxc.utils.metrics`` has
its metrics (``psnr_metric``, for Problem.solve's ``metric=``) and
``proxc.utils.convergence_log`` the log for ``convlog=``."""
from . import convergence_log, metrics  # noqa: F401
from .convergence_log import ConvergenceLog  # noqa: F401
from .utils import (Impl, NoiseEstMethod, circshift, estimate_std, fftd, ifftd, im2nparray, psf2otf,  # noqa: F401
                    psnr, tic, toc)

"""ProxImaL's reconstruction metrics (proximal.utils.metrics): a metric is
passed to Problem.solve as ``metric=``, and each verbose line of a check then
ends with its message at the current iterate (in the user's units)."""
import numpy as np

from .utils import psnr


class metric:  # noqa: N801 (ProxImaL's name)
    """A measure of the iterate: desc, unit, and the decimals it is rounded to
    (None: not rounded). Subclasses define _eval(v)."""

    def __init__(self, desc, unit, decimals=None):
        self.desc, self.unit, self.decimals = desc, unit, decimals

    def _eval(self, v):
        raise NotImplementedError("metric: a subclass defines _eval(v)")

    def eval(self, v):
        value = self._eval(v)
        return value if self.decimals is None else np.round(value, decimals=self.decimals)

    def message(self, v):
        return f"{self.desc}: {self.eval(v)} {self.unit}"


class psnr_metric(metric):  # noqa: N801
    """PSNR of the iterate (reshaped to ref's shape) against ref, in dB."""

    def __init__(self, ref, maxval=1.0, pad=None, decimals=2):
        self.ref, self.maxval, self.pad = np.asarray(ref), maxval, pad
        super().__init__("PSNR", "dB", decimals)

    def _eval(self, v):
        return psnr(np.reshape(v, self.ref.shape), self.ref, pad=self.pad, maxval=self.maxval)

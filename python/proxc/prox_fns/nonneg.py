"""ProxImaL's module proximal.prox_fns.nonneg: nonneg, weighted_nonneg, masked_nonneg."""
from .._prox_fns import nonneg, weighted_nonneg, masked_nonneg  # noqa: F401

__all__ = ["nonneg", "weighted_nonneg", "masked_nonneg"]

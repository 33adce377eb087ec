"""ProxImaL's module proximal.prox_fns.norm1: norm1, weighted_norm1."""
from .._prox_fns import norm1, weighted_norm1  # noqa: F401

__all__ = ["norm1", "weighted_norm1"]

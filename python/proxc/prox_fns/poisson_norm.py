"""ProxImaL's module proximal.prox_fns.poisson_norm: poisson_norm, weighted_poisson_norm."""
from .._prox_fns import poisson_norm, weighted_poisson_norm  # noqa: F401

__all__ = ["poisson_norm", "weighted_poisson_norm"]

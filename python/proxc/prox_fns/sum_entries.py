"""ProxImaL's module proximal.prox_fns.sum_entries: sum_entries, zero_prox."""
from .._prox_fns import sum_entries, zero_prox  # noqa: F401

__all__ = ["sum_entries", "zero_prox"]

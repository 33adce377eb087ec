"""ProxImaL's module proximal.prox_fns.diff_fn: diff_fn."""
from .._prox_fns import diff_fn  # noqa: F401

__all__ = ["diff_fn"]

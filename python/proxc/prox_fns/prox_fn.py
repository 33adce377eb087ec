"""ProxImaL's module proximal.prox_fns.prox_fn: ProxFn."""
from .._prox_fns import ProxFn  # noqa: F401

__all__ = ["ProxFn"]

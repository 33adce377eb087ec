"""ProxImaL's module proximal.lin_ops.grad: grad."""
from .._lin_ops import grad  # noqa: F401

__all__ = ["grad"]

"""ProxImaL's module proximal.lin_ops.constant: Constant."""
from .._lin_ops import Constant  # noqa: F401

__all__ = ["Constant"]

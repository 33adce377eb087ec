"""ProxImaL's module proximal.lin_ops.sum: sum, copy."""
from .._lin_ops import sum, copy  # noqa: F401

__all__ = ["sum", "copy"]

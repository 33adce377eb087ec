"""ProxImaL's module proximal.lin_ops.scale: scale."""
from .._lin_ops import scale  # noqa: F401

__all__ = ["scale"]

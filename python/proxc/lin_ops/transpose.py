"""ProxImaL's module proximal.lin_ops.transpose: transpose."""
from .._lin_ops import transpose  # noqa: F401

__all__ = ["transpose"]

"""ProxImaL's module proximal.lin_ops.warp: warp."""
from .._lin_ops import warp  # noqa: F401

__all__ = ["warp"]

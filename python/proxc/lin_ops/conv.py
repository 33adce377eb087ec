"""ProxImaL's module proximal.lin_ops.conv: conv."""
from .._lin_ops import conv  # noqa: F401

__all__ = ["conv"]

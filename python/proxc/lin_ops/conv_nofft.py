"""ProxImaL's module proximal.lin_ops.conv_nofft: conv_nofft."""
from .._lin_ops import conv_nofft  # noqa: F401

__all__ = ["conv_nofft"]

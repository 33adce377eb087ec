"""ProxImaL's module proximal.lin_ops.pxwise_matrixmult: pxwise_matrixmult."""
from .._lin_ops import pxwise_matrixmult  # noqa: F401

__all__ = ["pxwise_matrixmult"]

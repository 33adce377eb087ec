"""ProxImaL's module proximal.lin_ops.mul_elemwise: mul_elemwise."""
from .._lin_ops import mul_elemwise  # noqa: F401

__all__ = ["mul_elemwise"]

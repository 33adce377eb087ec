"""ProxImaL's module proximal.lin_ops.mul_color: mul_color."""
from .._lin_ops import mul_color  # noqa: F401

__all__ = ["mul_color"]

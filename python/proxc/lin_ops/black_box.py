"""ProxImaL's module proximal.lin_ops.black_box: LinOpFactory."""
from .._lin_ops import LinOpFactory  # noqa: F401

__all__ = ["LinOpFactory"]

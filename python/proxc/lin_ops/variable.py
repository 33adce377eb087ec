"""ProxImaL's module proximal.lin_ops.variable: Variable."""
from .._lin_ops import Variable  # noqa: F401

__all__ = ["Variable"]

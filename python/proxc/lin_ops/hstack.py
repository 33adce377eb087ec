"""ProxImaL's module proximal.lin_ops.hstack: hstack."""
from .._lin_ops import hstack  # noqa: F401

__all__ = ["hstack"]

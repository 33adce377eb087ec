"""ProxImaL's module proximal.lin_ops.vstack: vstack."""
from .._lin_ops import vstack  # noqa: F401

__all__ = ["vstack"]

"""ProxImaL's module proximal.lin_ops.reshape: reshape."""
from .._lin_ops import reshape  # noqa: F401

__all__ = ["reshape"]

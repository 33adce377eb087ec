"""ProxImaL's module proximal.lin_ops.subsample: subsample, uneven_subsample."""
from .._lin_ops import subsample, uneven_subsample  # noqa: F401

__all__ = ["subsample", "uneven_subsample"]

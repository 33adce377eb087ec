"""ProxImaL's module proximal.prox_fns.group_norm1: group_norm1, weighted_group_norm1."""
from .._prox_fns import group_norm1, weighted_group_norm1  # noqa: F401

__all__ = ["group_norm1", "weighted_group_norm1"]

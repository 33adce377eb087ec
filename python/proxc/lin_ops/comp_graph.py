"""ProxImaL's module proximal.lin_ops.comp_graph: CompGraph, est_CompGraph_norm."""
from .._lin_ops import CompGraph, est_CompGraph_norm  # noqa: F401

__all__ = ["CompGraph", "est_CompGraph_norm"]

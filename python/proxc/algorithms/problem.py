"""ProxImaL's module proximal.algorithms.problem: Problem."""
from ..problem import Problem  # noqa: F401

__all__ = ["Problem"]

"""ProxImaL's module proximal.prox_fns.sum_squares: sum_squares, weighted_sum_squares, least_squares, lsqr_options, cg_options."""
from .._prox_fns import sum_squares, weighted_sum_squares, least_squares, lsqr_options, cg_options  # noqa: F401

__all__ = ["sum_squares", "weighted_sum_squares", "least_squares", "lsqr_options", "cg_options"]

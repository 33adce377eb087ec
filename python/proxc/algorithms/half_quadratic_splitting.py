"""ProxImaL's proximal.algorithms.half_quadratic_splitting (hqs) on proxc: partition and solve."""
import math

from . import _split


def partition(prox_fns, try_diagonalize=True):
    """(psi_fns, omega_fns) as proxc splits the functions for hqs: the first
    least-squares term is omega (docs/passes.md says why not admm's rule)."""
    return _split.partition("hqs", prox_fns, try_diagonalize)


def solve(psi_fns, omega_fns, rho_0=1.0, rho_scale=math.sqrt(2.0) * 2.0, rho_max=2**8, max_iters=-1,
          max_inner_iters=100, x0=None, eps_rel=1e-3, eps_abs=1e-3, lin_solver="cg", lin_solver_options=None,
          try_diagonalize=True, scaled=False, try_fast_norm=None, metric=None, convlog=None, verbose=0,
          **kwargs):
    """Half-quadratic splitting over the user's split: the objective at the solution."""
    return _split.solve("hqs", psi_fns, omega_fns, try_fast_norm=try_fast_norm, scaled=scaled, rho_0=rho_0, rho_scale=rho_scale,
                        rho_max=rho_max, max_iters=max_iters, max_inner_iters=max_inner_iters, x0=x0,
                        eps_rel=eps_rel, eps_abs=eps_abs, lin_solver=lin_solver,
                        lin_solver_options=lin_solver_options, metric=metric, convlog=convlog, verbose=verbose,
                        **kwargs)

"""ProxImaL's proximal.algorithms.admm on proxc: partition and solve."""
from . import _split


def partition(prox_fns, try_diagonalize=True):
    """(psi_fns, omega_fns) as proxc splits the functions for admm (docs/passes.md)."""
    return _split.partition("admm", prox_fns, try_diagonalize)


def solve(psi_fns, omega_fns, rho=1.0, max_iters=1000, eps_abs=1e-3, eps_rel=1e-3, x0=None, lin_solver="cg",
          lin_solver_options=None, try_diagonalize=True, try_fast_norm=None, scaled=True, conv_check=100,
          implem=None, metric=None, convlog=None, verbose=0, **kwargs):
    """ADMM over the user's split: the objective at the solution."""
    return _split.solve("admm", psi_fns, omega_fns, try_fast_norm=try_fast_norm, scaled=scaled, rho=rho, max_iters=max_iters,
                        eps_abs=eps_abs, eps_rel=eps_rel, x0=x0, lin_solver=lin_solver,
                        lin_solver_options=lin_solver_options, conv_check=conv_check, metric=metric,
                        convlog=convlog, verbose=verbose, **kwargs)

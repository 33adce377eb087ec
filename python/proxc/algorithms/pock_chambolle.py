"""ProxImaL's proximal.algorithms.pock_chambolle (pc) on proxc: partition and solve."""
from . import _split


def partition(prox_fns, try_diagonalize=True):
    """(psi_fns, omega_fns) as proxc splits the functions for pc (docs/passes.md);
    omega holds the user's functions (ProxImaL's holds the least-squares
    x-update it builds of them)."""
    return _split.partition("pc", prox_fns, try_diagonalize)


def solve(psi_fns, omega_fns, tau=None, sigma=None, theta=None, max_iters=1000, eps_abs=1e-3, eps_rel=1e-3,
          x0=None, lin_solver="cg", lin_solver_options=None, conv_check=100, try_diagonalize=True,
          try_fast_norm=None, scaled=True, implem=None, metric=None, convlog=None, verbose=0, callback=None,
          adapter=None, **kwargs):
    """Pock-Chambolle over the user's split: the objective at the solution."""
    return _split.solve("pc", psi_fns, omega_fns, try_fast_norm=try_fast_norm, scaled=scaled, tau=tau, sigma=sigma, theta=theta,
                        max_iters=max_iters, eps_abs=eps_abs, eps_rel=eps_rel, x0=x0, lin_solver=lin_solver,
                        lin_solver_options=lin_solver_options, conv_check=conv_check, metric=metric,
                        convlog=convlog, verbose=verbose, callback=callback, **kwargs)

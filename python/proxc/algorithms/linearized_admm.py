"""ProxImaL's proximal.algorithms.linearized_admm (ladmm) on proxc: partition and solve."""
from . import _split


def partition(prox_fns, try_diagonalize=True):
    """(psi_fns, omega_fns) as proxc splits the functions for ladmm (docs/passes.md)."""
    return _split.partition("ladmm", prox_fns, try_diagonalize)


def solve(psi_fns, omega_fns, lmb=1.0, mu=None, quad_funcs=None, max_iters=1000, eps_abs=1e-3, eps_rel=1e-3,
          lin_solver="cg", lin_solver_options=None, implem=None, try_diagonalize=True, try_fast_norm=None,
          scaled=False, metric=None, convlog=None, verbose=0, **kwargs):
    """Linearized ADMM over the user's split: the objective at the solution."""
    if quad_funcs:
        raise ValueError("ladmm.solve: quad_funcs is not supported; put those functions in omega_fns")
    return _split.solve("ladmm", psi_fns, omega_fns, try_fast_norm=try_fast_norm, lmb=lmb, mu=mu,
                        max_iters=max_iters, eps_abs=eps_abs, eps_rel=eps_rel, lin_solver=lin_solver,
                        lin_solver_options=lin_solver_options, metric=metric, convlog=convlog, verbose=verbose,
                        **kwargs)

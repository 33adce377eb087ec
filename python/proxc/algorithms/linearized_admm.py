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
        import warnings
        warnings.warn("ladmm.solve: quad_funcs is ignored, as ProxImaL 0.1.7's linearized_admm.solve ignores it",
                      stacklevel=2)
    return _split.solve("ladmm", psi_fns, omega_fns, try_fast_norm=try_fast_norm, scaled=scaled, lmb=lmb, mu=mu,
                        max_iters=max_iters, eps_abs=eps_abs, eps_rel=eps_rel, lin_solver=lin_solver,
                        lin_solver_options=lin_solver_options, metric=metric, convlog=convlog, verbose=verbose,
                        **kwargs)

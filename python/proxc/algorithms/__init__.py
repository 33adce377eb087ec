"""ProxImaL's proximal.algorithms: the solver modules (each with partition and
solve over a split of the user's), Problem, and its passes as functions on
the Python objects (absorb_offset, absorb_lin_op, can_merge, merge_fns and
equil; the modules absorb, merge and equil as ProxImaL's).

    from proxc.algorithms import admm, pc      # was: from proximal.algorithms import ...
    psi_fns, omega_fns = admm.partition(prox_fns)
    objective = admm.solve(psi_fns, omega_fns, 1.0, eps_abs=1e-5, eps_rel=1e-5)

Each solve is Problem(psi_fns=..., omega_fns=...).solve(solver): proxc's
passes and compiled iterations, with ProxImaL's defaults of that module
(docs/python.md, "A split of your own")."""
from ..problem import Problem
from . import admm
from . import half_quadratic_splitting as hqs
from . import linearized_admm as ladmm
from . import pock_chambolle as pc
from .absorb import absorb_lin_op, absorb_offset
from .equil import equil
from .merge import can_merge, merge_fns

__all__ = ["admm", "pc", "hqs", "ladmm", "Problem", "absorb_offset", "absorb_lin_op", "can_merge", "merge_fns",
           "equil"]

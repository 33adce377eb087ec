"""What the solver modules share: partition and solve over a split of the user's."""
import numbers

import numpy as np

from .. import _proxc
from .._lin_ops import Constant
from ..problem import Problem, _solver_name
from .._prox_fns import ProxFn


def _fns(v, what):
    if isinstance(v, ProxFn):
        return [v]
    v = list(v)
    for f in v:
        if not isinstance(f, ProxFn):
            raise TypeError(f"{what} must hold proximal functions, got {type(f).__name__}")
    return v


def partition(solver, prox_fns, try_diagonalize=True):
    """(psi_fns, omega_fns): the user's functions as proxc's split pass assigns
    them for `solver` (docs/passes.md), after absorb; try_diagonalize, as in
    ProxImaL's partitions, does not change which functions are omega."""
    name = _solver_name(solver)
    prox_fns = _fns(prox_fns, f"{name}.partition: prox_fns")
    if not prox_fns:
        return [], []
    prob = Problem(list(prox_fns))
    split = _proxc.run_passes(prob._native, ["absorb", "split"], name)
    roles = _roles(split)
    psi, omega, at = [], [], 0
    for f, n in zip(prox_fns, prob._term_counts):
        (omega if "omega" in roles[at:at + n] else psi).append(f)
        at += n
    return psi, omega


def _roles(native):
    import json
    return [t["role"] for t in json.loads(native.print("json", "", False))["terms"]]


def solve(solver, psi_fns, omega_fns, try_fast_norm=None, scaled=None, **kwargs):
    """ProxImaL's <module>.solve(psi_fns, omega_fns, ...): the objective at the
    solution; each Variable's value set. The split is the user's (proxc's
    passes absorb offsets and scale ||K||, and keep the roles)."""
    name = _solver_name(solver)
    psi = _fns(psi_fns, f"{name}.solve: psi_fns")
    omega = _fns(omega_fns if omega_fns is not None else [], f"{name}.solve: omega_fns")
    if not psi and not omega:
        raise ValueError(f"{name}.solve: no functions to minimize")
    prob = Problem(psi + omega, psi_fns=psi, omega_fns=omega, solver=name,
                   try_fast_norm=True if try_fast_norm is None else try_fast_norm)
    kwargs = {k: v for k, v in kwargs.items() if v is not None or k in ("x0",)}
    _unscaled_steps(prob, name, kwargs, scaled)
    return prob.solve(name, **kwargs)


def _unscaled_steps(prob, name, kw, scaled):
    """ProxImaL's module solves do not scale the problem: their step sizes are
    in the units of K. proxc's solvers iterate on K' = K/N (N = Knorm, the
    bound of ||K||; the variable s = sqrt(N) x), where the same iterates take
    (as long as absorb leaves the psi operands as written: a scalar factor or a
    positive weight it moves into beta changes K, not the optimum):
    admm rho' = N rho (the penalty (rho'/2)||K's - z'||^2 is (rho'/(2N))||Kx - z||^2),
    hqs likewise rho_0 and rho_max; ladmm lmb' = lmb/N, mu' = N mu (ProxImaL's
    mu defaults to lmb/||K||^2, here lmb/N^2, or lmb with scaled=True); pc
    tau' = N tau, sigma' = N sigma when tau, sigma and theta are all given, and
    with scaled=False ProxImaL's sigma (1) and tau = 1/(sigma ||K||^2). pc's
    steps otherwise are proxc's: sigma as given (1) and tau = 1/sigma on the
    scaled problem (ProxImaL's module default, tau = sigma = 1 in K's units,
    iterates unstably when ||K|| > 1). Steps that N, a bound above ||K||,
    makes too long for proxc's rule (tau' sigma' <= 1, mu' <= lmb') are
    shortened to it, with a warning."""
    steps = {"admm": ("rho",), "hqs": ("rho_0", "rho_max"), "ladmm": ("lmb", "mu"),
             "pc": ("tau", "sigma", "theta")}[name]
    given = all(kw.get(k) is not None for k in steps)
    if name == "pc" and not given and scaled is not False:
        return
    from ..problem import _check_steps
    _check_steps(kw)
    n = _knorm(prob, name)
    if name == "admm":
        kw["rho"] = float(kw.get("rho", 1.0)) * n
    elif name == "hqs":
        kw["rho_0"] = float(kw.get("rho_0", 1.0)) * n
        kw["rho_max"] = float(kw.get("rho_max", 2.0**8)) * n
    elif name == "ladmm":
        lmb = max(float(kw.get("lmb", 1.0)), 1e-5)
        mu = float(kw["mu"]) if kw.get("mu") is not None else lmb / (1.0 if scaled else n * n)
        lmb, mu = max(lmb / n, 1e-5), mu * n
        if mu > lmb * (1 + 1e-12):
            _shortened(f"ladmm.solve: mu = {mu / n:g} is above lmb/N^2 = {lmb / n:g}", n, "mu = lmb/N^2")
        kw["lmb"], kw["mu"] = lmb, min(mu, lmb)
    else:
        if given:
            tau, sigma = float(kw["tau"]) * n, float(kw["sigma"]) * n
        else:  # scaled=False: ProxImaL's est_params_pc with ||K|| = N
            sigma = float(kw.get("sigma") or 1.0) * n
            tau, kw["theta"] = 1 / sigma, 1.0
        if tau * sigma > 1 + 1e-12:
            _shortened(f"pc.solve: tau*sigma = {tau * sigma / (n * n):g} is above 1/N^2 = {1 / (n * n):g}", n,
                       "sigma = 1/(tau N^2)")
        kw["tau"], kw["sigma"] = tau, min(sigma, 1 / tau)


def _shortened(what, n, to):
    import warnings
    warnings.warn(f"{what}, where N = {n:g} is proxc's bound of ||K|| (ProxImaL's steps must satisfy it with "
                  f"||K||; proxc's rule, with N): {to} instead", stacklevel=4)


def _knorm(prob, name):
    import json
    norm = "bound" if prob.try_fast_norm else "power"
    scaled = _proxc.run_passes(prob._split_native(name), ["scale"], name, norm)
    return float(json.loads(scaled.print("json", "", False))["knorm"])


def absorb_offset(prox_fn):
    """ProxImaL's absorb_offset: the function with its operand's constant offset
    e0 (the operand at x = 0) taken out and moved into b: f(beta*L(x) - (b - e0)),
    as ProxImaL writes it (b - e0, not b - beta*e0)."""
    if not isinstance(prox_fn, ProxFn):
        raise TypeError(f"absorb_offset: expected a proximal function, got {type(prox_fn).__name__}")
    op = prox_fn.lin_op
    if not op.constants():
        return prox_fn
    e0 = op.get_offset().astype(np.float32)
    if not e0.any():
        return prox_fn
    b = prox_fn.b
    b = (float(b) if isinstance(b, numbers.Real) else np.asarray(b.value if isinstance(b, Constant) else b,
                                                                     dtype=np.float32)) - e0
    return prox_fn.copy(lin_op=op - Constant(e0), b=b)

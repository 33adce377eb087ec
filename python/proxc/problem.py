"""ProxImaL's Problem over proxc's problem, solve and compiled programs."""
import inspect
import math
import warnings

import numpy as np

from . import _proxc
from ._lin_ops import Constant, Variable, _is_int
from ._prox_fns import ProxFn

__all__ = ["Problem", "load", "parse", "SOLVER_NAMES"]

#: ProxImaL's solver names and proxc's.
SOLVER_NAMES = {
    "pc": "pc", "pock_chambolle": "pc",
    "ladmm": "ladmm", "linearized_admm": "ladmm",
    "admm": "admm",
    "hqs": "hqs", "half_quadratic_splitting": "hqs",
}

# How often each of ProxImaL's solvers checks convergence by default (its
# conv_check): pc and admm every 100 iterations, ladmm every 20.
_CONV_CHECK = {"pc": 100, "ladmm": 20, "admm": 100, "hqs": 100}

# Every keyword solve() takes, besides the solver's step sizes.
_SOLVE_KEYWORDS = {
    "max_iters", "eps_abs", "eps_rel", "x0", "conv_check", "verbose", "callback", "metric", "convlog",
    "lin_solver", "lin_solver_options", "try_diagonalize", "try_fast_norm", "scaled", "implem", "adapter",
    "quad_funcs",
    # proxc's own
    "backend", "schedule", "target", "cache_dir", "fuse", "time_limit", "history", "checkpoint",
    "checkpoint_every", "resume", "proximal_stopping", "adaptive",
}
_STEP_KEYWORDS = {
    "pc": {"tau", "sigma", "theta"},
    "ladmm": {"lmb", "mu"},
    "admm": {"rho"},
    "hqs": {"rho_0", "rho_scale", "rho_max", "max_inner_iters"},
}


def _solver_name(name):
    if name not in SOLVER_NAMES:
        raise ValueError(f"unknown solver '{name}' (one of {', '.join(SOLVER_NAMES)})")
    return SOLVER_NAMES[name]


class Problem:
    """minimize the sum of `prox_fns` (a ProxFn or a list of them).

    ProxImaL's switches: absorb, merge, try_diagonalize and try_fast_norm
    choose proxc's passes; try_split and scale are always on in proxc (its
    solvers iterate on the split problem scaled to ||K|| <= 1), and implem is
    ProxImaL's backend (proxc's is solve(backend=...))."""

    def __init__(self, prox_fns=None, implem=None, try_diagonalize=True, absorb=True, merge=True, try_split=True,
                 try_fast_norm=True, scale=True, psi_fns=None, omega_fns=None, lin_solver="cg", solver="pc",
                 _native=None, _variables=None):
        if not try_split:
            warnings.warn("Problem(try_split=False): proxc always splits the problem", stacklevel=2)
        if not scale:
            warnings.warn("Problem(scale=False): proxc always scales the problem to ||K|| <= 1 "
                          "(the same optimum by another path)", stacklevel=2)
        self.absorb, self.merge = bool(absorb), bool(merge)
        self.try_diagonalize, self.try_fast_norm = bool(try_diagonalize), bool(try_fast_norm)
        self.implem = implem
        self.set_lin_solver(lin_solver)
        self.solver = _solver_name(solver)
        self._constants = []
        self._const_versions = {}
        self._const_names = {}
        self.summary = None
        self.history = []
        self.psi_fns, self.omega_fns, self._roles = [], [], None
        if _native is not None:
            self.prox_fns = []
            self._native = _native
            self._variables = _variables
            return
        if isinstance(prox_fns, ProxFn):
            prox_fns = [prox_fns]
        if psi_fns is not None or omega_fns is not None:
            prox_fns = self._user_split(prox_fns, psi_fns, omega_fns)
        if prox_fns is not None and not isinstance(prox_fns, (list, tuple)):
            raise TypeError(f"Problem: expected proximal functions (sum_squares(...) + ...), got "
                            f"{type(prox_fns).__name__}")
        prox_fns = list(prox_fns or [])
        for f in prox_fns:
            if not isinstance(f, ProxFn):
                raise TypeError(f"Problem: expected proximal functions, got {type(f).__name__}")
        if not prox_fns:
            raise ValueError("Problem: no functions to minimize")
        self.prox_fns = prox_fns
        self._build()

    def _user_split(self, prox_fns, psi_fns, omega_fns):
        """ProxImaL's Problem(prox_fns, psi_fns=, omega_fns=): the split is the
        user's; either list may be left out (the other functions). As in
        ProxImaL the problem solved is omega_fns + psi_fns, so that a function
        in both counts twice (with a warning). Returns those functions; sets
        psi_fns, omega_fns and each one's role."""
        def fns(v, what):
            v = [v] if isinstance(v, ProxFn) else list(v)
            for f in v:
                if not isinstance(f, ProxFn):
                    raise TypeError(f"Problem: {what} must hold proximal functions, got {type(f).__name__}")
            return v

        def has(v, f):
            return any(g is f for g in v)

        if prox_fns is None:
            prox_fns = fns(omega_fns or [], "omega_fns") + fns(psi_fns or [], "psi_fns")
        prox_fns = fns(prox_fns, "prox_fns")
        omega = fns(omega_fns, "omega_fns") if omega_fns is not None else None
        psi = fns(psi_fns, "psi_fns") if psi_fns is not None else None
        if omega is None:
            omega = [f for f in prox_fns if not has(psi, f)]
        if psi is None:
            psi = [f for f in prox_fns if not has(omega, f)]
        for f in psi + omega:
            if not has(prox_fns, f):
                raise ValueError(f"Problem: {f!r} is in psi_fns or omega_fns but not in prox_fns")
        for f in prox_fns:
            if not has(psi, f) and not has(omega, f):
                raise ValueError(f"Problem: {f!r} is in neither psi_fns nor omega_fns (each function is in one of "
                                 "them)")
        if not psi:
            raise ValueError("Problem: psi_fns is empty: at least one function must be split off (psi), or the "
                             "x-update would be the whole problem (ProxImaL refuses it too)")
        for f in omega:
            if has(psi, f):
                warnings.warn(f"Problem: {f!r} is in both psi_fns and omega_fns: it counts twice in the objective, "
                              "as in ProxImaL", stacklevel=3)
        self.psi_fns, self.omega_fns = psi, omega
        self._roles = ["omega"] * len(omega) + ["psi"] * len(psi)
        return omega + psi

    def _split_native(self, name):
        """The problem to solve: the user's split, when given, as a problem that
        has run absorb (offsets into b; operators too unless absorb=False) and a
        split with the user's roles; a solve continues it with the scale pass
        (docs/python.md)."""
        if self._roles is None:
            return self._native
        roles = [r for r, n in zip(self._roles, self._term_counts) for _ in range(n)]
        try:
            return _proxc.run_passes(self._native, ["absorb", "split"], name, roles=roles,
                                     absorb_operators=self.absorb)
        except ValueError as e:
            raise ValueError(f"Problem: psi_fns and omega_fns: {self._split_message(e)}") from None

    def _split_message(self, e):
        """A message about the user's split in its own words: the function, not
        the term (the split pass checks the roles as a solve checks a dump's)."""
        import re
        m = re.sub(r"^split: ", "", str(e))
        owner = [f for f, n in zip(self.prox_fns, self._term_counts) for _ in range(n)]

        def fn(i):
            return repr(owner[i]) if 0 <= i < len(owner) else f"term {i + 1}"

        m = re.sub(r"term (\d+) \(sum_squares\) is omega, which it can be only",
                   lambda g: f"{fn(int(g.group(1)) - 1)} in omega_fns is not solved in the x-update: it can be "
                   "omega only", m)
        m = re.sub(r"term (\d+) \([a-z_0-9]+\)", lambda g: fn(int(g.group(1)) - 1), m)
        return m + " (docs/python.md, 'A split of your own')"

    def _build(self):
        terms, variables, constants = None, [], []
        self._term_counts = []
        for f in self.prox_fns:
            t, c = f._term()
            terms = t if terms is None else terms + t
            self._term_counts.append(len(t))
            variables += f.variables()
            constants += c
        self._native = _proxc.Problem()
        self._native.minimize(terms)
        self._variables = list(dict.fromkeys(variables))
        self._constants = [c for c in dict.fromkeys(constants) if isinstance(c, Constant)]
        self._const_versions = {id(c): c._version for c in self._constants}
        # The names the printed problem gives them (set_constant replaces the
        # node, not the name).
        self._const_names = {}
        for c in self._constants:
            try:
                self._const_names[id(c)] = self._native.name_of(c._expr)
            except ValueError:
                pass  # folded into another constant: its value is fixed

    # ProxImaL's setters.
    def set_absorb(self, absorb):
        self.absorb = bool(absorb)

    def set_merge(self, merge):
        self.merge = bool(merge)

    def set_solver(self, solver):
        self.solver = _solver_name(solver)

    def set_implementation(self, implem=None):
        self.implem = implem

    def set_automatic_frequency_split(self, freq_split):
        pass

    def set_lin_solver(self, lin_solver):
        if lin_solver not in ("cg", "lsqr"):
            raise ValueError(f"Problem: unknown lin_solver '{lin_solver}' (cg or lsqr)")
        if lin_solver == "lsqr":
            warnings.warn("lin_solver='lsqr': proxc's x-updates use conjugate gradients", stacklevel=3)
        self.lin_solver = lin_solver

    def variables(self):
        """The variables, in order of first appearance."""
        return list(self._variables)

    # The problem's printed forms.
    def print(self, format="text", base_dir="", inline_constants=False):  # noqa: A002
        """The problem as .prox text, JSON (loads back with proxc.load), dot or LaTeX."""
        return self._native.print(format, base_dir, inline_constants)

    def __str__(self):
        """The .prox text, with each array's values left out (print() has them)."""
        lines = []
        for line in self.print("text").splitlines():
            name, eq, rest = line.partition(" = array(")
            if eq and len(line) > 120:
                shape = rest.split("], [", 1)[0].lstrip("[")
                line = f"{name} = array(({shape}), ...)"
            lines.append(line)
        return "\n".join(lines)

    def __repr__(self):
        return f"<proxc.Problem of {self._native.num_terms()} terms>\n{self}"

    def _repr_latex_(self):
        return self.print("latex").strip()

    def save(self, path, inline_constants=False):
        """Writes the problem (.prox text, or JSON for a .json path), whole or not at all.
        Data held in memory goes inline; a .prox file cannot hold it (use .json)."""
        import errno
        import os
        import tempfile
        path = os.fspath(path)
        fmt = "json" if path.endswith(".json") else "text"
        base = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(base):
            raise FileNotFoundError(errno.ENOENT, f"cannot save the problem to {path}: the folder {base} does not exist",
                                    path)
        if os.path.isdir(path):
            raise IsADirectoryError(errno.EISDIR, f"cannot save the problem to {path}: it is a folder", path)
        text = self._native.print(fmt, base, inline_constants or fmt == "json")
        # A temporary of this process's own (created exclusively, never through a link), renamed
        # over the path: a failure leaves the path as it was and no temporary behind.
        try:
            mode = os.stat(path).st_mode & 0o7777  # a file replaced keeps its permissions
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp-proxc", dir=base)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.chmod(tmp, mode)
            os.replace(tmp, path)
        except OSError as e:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise type(e)(e.errno, f"cannot save the problem to {path}: {e.strerror}", path) from e
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def check(self, backend="emulate", seed=1):
        """Dot tests of every operator, ||K|| against its bound (proxc check)."""
        return _proxc.check(self._native, backend, "host", seed)

    def compile(self, solver=None, program="iteration", fuse=1, target="host", schedule="default", cache_dir=""):
        """The compiled program of one step of `solver` (a Module)."""
        name = _solver_name(solver or self.solver)
        native = self._split_native(name)
        return Module(_proxc.compile(native, name, program, fuse, target, schedule, cache_dir))

    def _sync_constants(self):
        """Hands constants whose value changed since the last solve to proxc."""
        for c in self._constants:
            if self._const_versions.get(id(c)) != c._version:
                if id(c) not in self._const_names:
                    raise ValueError("Problem.solve: a Constant whose value changed was folded into another "
                                     "constant when the problem was built (an operator applied to constants); "
                                     "build the Problem again")
                self._native.set_constant(self._const_names[id(c)], c.value)
                self._const_versions[id(c)] = c._version

    def solve(self, solver=None, test_adjoints=False, test_norm=False, show_graph=False, *args, **kwargs):
        """Solves the problem; returns the objective at the solution and sets
        each Variable's value. Takes ProxImaL's keywords (max_iters, eps_abs,
        eps_rel, x0, conv_check, verbose, callback, and each solver's step
        sizes: tau, sigma, theta; lmb, mu; rho; rho_0, rho_scale, rho_max,
        max_inner_iters) and proxc's (backend, schedule, target, cache_dir,
        fuse, time_limit, history, checkpoint, checkpoint_every, resume)."""
        if args:
            raise TypeError("Problem.solve: pass the solver's settings by keyword")
        name = _solver_name(solver) if solver is not None else self.solver
        unknown = set(kwargs) - _SOLVE_KEYWORDS - _STEP_KEYWORDS[name]
        if unknown:
            other = sorted(k for k in unknown if any(k in s for s in _STEP_KEYWORDS.values()))
            hint = f" ({', '.join(other)}: another solver's)" if other else ""
            raise TypeError(f"Problem.solve: unknown keyword(s) for solver '{name}': "
                            f"{', '.join(sorted(unknown))}{hint}")
        if show_graph:
            warnings.warn("show_graph: print the problem with problem.print('dot') instead", stacklevel=2)
        if test_adjoints or test_norm:
            report = self.check()
            if kwargs.get("verbose"):
                print(report.text)
            if not report.passed:
                raise ValueError("Problem.solve: the operators' check failed:\n" + report.text)
        self._sync_constants()
        o = _options(self, name, kwargs)
        verbose = int(kwargs.get("verbose", 0) or 0)
        callback = kwargs.get("callback")
        keep_history = bool(kwargs.get("history", False))
        convlog = kwargs.get("convlog")
        if convlog is not None and not all(callable(getattr(convlog, m, None))
                                           for m in ("record_objective", "record_timing")):
            raise TypeError("Problem.solve: convlog must have record_objective(value) and record_timing(ms) methods "
                            "(proxc.utils.convergence_log.ConvergenceLog)")
        o.objective_each_check = keep_history or verbose >= 2 or convlog is not None
        metric = kwargs.get("metric")
        if metric is not None and not callable(getattr(metric, "message", None)):
            raise TypeError("Problem.solve: metric must have a message(x) method (proxc.utils.metrics.psnr_metric)")
        cb, pass_iterate = _callback(self, callback, verbose, o.proximal_stopping, metric)
        if verbose:
            print(f"proxc: solving with {name} ({o.backend}), at most {o.max_iters} iterations, "
                  f"checked every {o.check_every}")
        native = self._split_native(name)
        summary = _proxc.solve(native, o, cb, pass_iterate)
        self.summary = summary
        self.history = [_history_row(i) for i in summary.history]
        by_name = {native.name_of(e): e for e in native.variables()}
        for v in self._variables:
            # proxc's array, no copy (the user's split: the split problem's variable of that name)
            v._value = native.value(by_name[self._native.name_of(v._expr)])
        if convlog is not None:
            # One entry per check: its objective and the milliseconds of iterating since the check before.
            before = 0.0
            for info in summary.history:
                convlog.record_objective(info.objective)
                convlog.record_timing((info.seconds - before) * 1000.0)
                before = info.seconds
        if verbose:
            print(summary.full_report() if verbose >= 2 else summary.brief_report())
        if summary.termination == "diverged":
            warnings.warn("Problem.solve: the iterates diverged (" + summary.brief_report() + ")", stacklevel=2)
        for w in summary.warnings:
            warnings.warn("Problem.solve: " + w, RuntimeWarning, stacklevel=2)
        return summary.objective

    def solve_batch(self, data_sets, solver=None, **kwargs):
        """Solves the problem once per data set, each as if alone (from x0 or
        zeros), the pipelines compiled for the first and reused: `data_sets`
        is a list of dicts mapping a Constant (or its printed name) to its new
        value. Returns one dict per data set mapping each Variable to its
        value (a copy), and keeps each solve's summary in `self.summaries`;
        solve's keywords apply to every solve. The CLI's `proxc batch` is the
        same over files (and over MPI ranks)."""
        results, summaries = [], []
        by_name = {self._const_names[id(c)]: c for c in self._constants if id(c) in self._const_names}
        for i, data in enumerate(data_sets):
            try:
                for key, value in data.items():
                    if isinstance(key, str):
                        if key not in by_name:
                            raise ValueError(f"no constant named '{key}' (its constants: "
                                             f"{', '.join(sorted(by_name)) or 'none'})")
                        key = by_name[key]
                    if not isinstance(key, Constant):
                        raise ValueError(f"a key must be a Constant or a constant's name, got {type(key).__name__}")
                    key.value = value
                self.solve(solver, **kwargs)
            except ValueError as e:
                raise ValueError(f"Problem.solve_batch: data set {i}: {e}") from None
            results.append({v: np.array(v.value, copy=True) for v in self._variables})
            summaries.append(self.summary)
        self.summaries = summaries
        return results

    @property
    def objective(self):
        return None if self.summary is None else self.summary.objective


def _history_row(info):
    return {"iteration": info.iteration, "r": info.r, "s": info.s, "eps_pri": info.eps_pri,
            "eps_dual": info.eps_dual, "objective": info.objective, "seconds": info.seconds}


def _hqs_levels(rho_0, rho_scale, rho_max):
    n, rho = 0, rho_0
    while rho < rho_max:
        n += 1
        rho *= rho_scale
    return n + 1


# The step sizes by ProxImaL's names: a finite number, > 0 (theta >= 0,
# rho_scale > 1), refused otherwise even where it would be ignored (tau
# without sigma and theta) or clamped (ProxImaL's max(lmb, 1e-5)), and before
# hqs counts its continuation levels (a rho_0 <= 0 or rho_scale <= 1 never
# reaches rho_max).
def _check_steps(kw):
    for k in ("tau", "sigma", "theta", "lmb", "mu", "rho", "rho_0", "rho_scale", "rho_max"):
        v = kw.get(k)
        if v is None:
            continue
        f = float(v)
        least = 1.0 if k == "rho_scale" else 0.0
        if not math.isfinite(f) or f < least or (f == least and k != "theta"):
            bound = ">= 0" if k == "theta" else f"> {least:g}"
            raise ValueError(f"{k} must be a finite number {bound}, got {v!r}")


def _count(kw, key, default):
    """kw[key] as a C int: an integer or a float without a fraction (ProxImaL's conv_check works
    with 100.0), not 10.5 truncated or "10" parsed, which would hide a mistake."""
    v = kw.get(key, default)
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        v = int(v)
    if not _is_int(v):
        raise TypeError(f"{key} must be an integer, got {v!r}")
    if not -2**31 <= int(v) < 2**31:
        raise ValueError(f"{key} must be below 2**31, got {int(v)}")
    return int(v)


def _options(problem, name, kw):
    _check_steps(kw)
    o = _proxc.SolverOptions()
    o.solver = name
    o.absorb, o.merge, o.diagonalize = problem.absorb, problem.merge, problem.try_diagonalize
    o.norm = "bound" if problem.try_fast_norm else "power"
    o.backend = kw.get("backend", "halide")
    o.schedule = kw.get("schedule", "default")
    o.target = kw.get("target", "host")
    o.cache_dir = kw.get("cache_dir", "")
    o.max_iters = _count(kw, "max_iters", 1000)
    o.check_every = _count(kw, "conv_check", _CONV_CHECK[name])
    # Adaptive steps (pc, ladmm, admm: proxc's, docs/solvers.md) go with proxc's rule;
    # left out, pc and ladmm adapt under proxc's rule and keep ProxImaL's steps under
    # ProxImaL's.
    if kw.get("adaptive") is not None:
        o.adaptive_steps = bool(kw["adaptive"])
    # Checked where ProxImaL checks, pc by ProxImaL's residuals (docs/python.md).
    o.proximal_stopping = bool(kw.get("proximal_stopping", not kw.get("adaptive", False)))
    # ProxImaL's tolerances under its rule; proxc's rule, whose residuals
    # measure one iteration's change, needs 3e-6 to stop as near the
    # optimum (docs/solvers.md, "Stopping").
    eps = 1e-3 if o.proximal_stopping else 3e-6
    o.eps_abs = float(kw.get("eps_abs", eps))
    o.eps_rel = float(kw.get("eps_rel", eps))
    o.fuse = _count(kw, "fuse", 1)
    o.time_limit_s = float(kw.get("time_limit", 0))
    opts = kw.get("lin_solver_options") or {}
    if "num_iters" in opts or "maxiter" in opts:
        key = "num_iters" if "num_iters" in opts else "maxiter"
        o.cg_max_iters = _count(opts, key, None)
    if "tol" in opts:
        o.cg_tol = float(opts["tol"])
    s = o.steps
    if name == "pc":
        # ProxImaL: unless tau, sigma and theta are all given, theta = 1,
        # sigma as given (1) and tau = 1 / sigma (||K|| = 1 after scaling).
        if all(kw.get(k) is not None for k in ("tau", "sigma", "theta")):
            s.pc_tau, s.pc_sigma, s.pc_theta = float(kw["tau"]), float(kw["sigma"]), float(kw["theta"])
        else:
            s.pc_sigma = float(kw.get("sigma") or 1.0)
            s.pc_tau, s.pc_theta = 1.0 / s.pc_sigma, 1.0
    elif name == "ladmm":
        lmb = max(float(kw.get("lmb") if kw.get("lmb") is not None else 1.0), 1e-5)
        s.ladmm_lambda = lmb
        s.ladmm_mu = float(kw["mu"]) if kw.get("mu") is not None else lmb
    elif name == "admm":
        s.admm_rho = float(kw["rho"]) if kw.get("rho") is not None else 1.0
    elif name == "hqs":
        o.hqs_rho_0 = float(kw.get("rho_0", 1.0))
        o.hqs_rho_scale = float(kw.get("rho_scale", 2.0 * math.sqrt(2.0)))
        o.hqs_rho_max = float(kw.get("rho_max", 2.0 ** 8))
        inner = _count(kw, "max_inner_iters", 100)
        if inner < 1:
            raise ValueError(f"max_inner_iters must be >= 1, got {kw['max_inner_iters']!r}")
        o.hqs_max_inner_iters = inner
        levels = _hqs_levels(o.hqs_rho_0, o.hqs_rho_scale, o.hqs_rho_max)
        # ProxImaL's max_iters counts continuation levels (its default -1 runs
        # none; here: every level), each at most max_inner_iters iterations.
        outer = _count(kw, "max_iters", -1)
        if outer == 0 or outer < -1:
            raise ValueError(f"max_iters must be >= 1, or -1 for every level, got {outer}")
        o.max_iters = inner * (levels if outer <= 0 else min(outer, levels))
        o.check_every = _count(kw, "conv_check", 1)
    x0 = kw.get("x0")
    variables = problem._variables
    if x0 is None and any(v.initval is not None for v in variables):
        x0 = {v: v.initval for v in variables if v.initval is not None}
    if x0 is not None:
        starts = _x0(problem, x0)
        for n, a in starts.items():
            if not np.isfinite(a).all():
                raise ValueError(f"x0: the start of {n} has non-finite entries (NaN or infinity)")
        o.x0 = starts
    if kw.get("checkpoint"):
        o.checkpoint_path = str(kw["checkpoint"])
        o.checkpoint_every = int(kw.get("checkpoint_every", 0))
    if kw.get("resume"):
        o.resume_path = str(kw["resume"])
    return o


def _x0(problem, x0):
    """x0 by variable name: one array for one variable, a flat vector of all
    of them (ProxImaL's), or a dict by Variable or name. User units."""
    variables = problem._variables
    out = {}
    if isinstance(x0, dict):
        for k, a in x0.items():
            name = problem._native.name_of(k._expr) if isinstance(k, Variable) else str(k)
            out[name] = np.ascontiguousarray(a, dtype=np.float32)
        return out
    a = np.asarray(x0, dtype=np.float32)
    if len(variables) == 1 and a.shape == variables[0].shape:
        return {problem._native.name_of(variables[0]._expr): np.ascontiguousarray(a)}
    total = sum(v.size for v in variables)
    if a.size != total:
        raise ValueError(f"x0: {a.size} values for variables of {total} entries in all")
    flat, at = a.ravel(), 0
    for v in variables:
        out[problem._native.name_of(v._expr)] = np.ascontiguousarray(flat[at:at + v.size].reshape(v.shape))
        at += v.size
    return out


def _callback(problem, callback, verbose, proximal, metric=None):
    """The function proxc calls at each check, and whether it wants the iterate.
    With verbose, a metric's message at the iterate ends each line (ProxImaL's
    admm, ladmm and hqs print it so)."""
    if callback is None and not verbose:
        return None, False
    want_x, two = bool(verbose) and metric is not None, False
    if callback is not None:
        try:
            # callback(iteration, x) when it requires two positional
            # arguments; ProxImaL's callback(x) otherwise (a default on a
            # second parameter keeps the one-argument form).
            params = [p for p in inspect.signature(callback).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
            two = len(params) >= 2
        except (TypeError, ValueError):
            two = False
        want_x = True

    names = [problem._native.name_of(v._expr) for v in problem._variables]

    def flat(x):
        return np.concatenate([x[n].ravel() for n in names])

    def at_check(info, x=None):
        if verbose:
            # ProxImaL's line; its iteration index counts from 0 under its stopping rule.
            i = info.iteration - 1 if proximal else info.iteration
            line = (f"iter {i}: ||r||_2 = {info.r:.3f}, eps_pri = {info.eps_pri:.3f}, "
                    f"||s||_2 = {info.s:.3f}, eps_dual = {info.eps_dual:.3f}")
            if verbose >= 2 and not math.isnan(info.objective):
                line += f", obj_val = {info.objective:02.03e}"
            if metric is not None:
                line += ", " + metric.message(flat(x))
            print(line)
        if callback is None:
            return True
        if two:
            value = x[names[0]] if len(names) == 1 else dict(x)
            r = callback(info.iteration, value)
        else:
            r = callback(flat(x))
        return r is None or bool(r)

    return at_check, want_x


class Module:
    """One compiled program of a solver: run compiled, emulate (the reference
    interpreter), print its source, compile ahead of time into a library."""

    def __init__(self, native):
        self._m = native

    @property
    def name(self):
        return self._m.name

    def inputs(self):
        return self._m.inputs()

    def params(self):
        return self._m.params()

    def outputs(self):
        return self._m.outputs()

    def compile(self):
        return self._m.compile()

    def run(self, arrays, params=None):
        """Runs the compiled pipeline: (arrays by output name, scalars by name)."""
        return self._m.run(_f32(arrays), dict(params or {}))

    def emulate(self, arrays, params=None):
        return self._m.emulate(_f32(arrays), dict(params or {}))

    def source(self):
        return self._m.source()

    def emit(self, format):  # noqa: A002
        return self._m.emit(format)

    def compile_aot(self, dir, name="proxc_step"):  # noqa: A002
        return self._m.compile_aot(str(dir), name)


def _f32(arrays):
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in arrays.items()}


def load(path):
    """A problem from a .prox file or a JSON dump; its variables are
    problem.variables() (named as in the file)."""
    native = _proxc.load_problem(str(path))
    return _wrap_native(native)


def parse(text, base_dir="."):
    """A problem from .prox text (data paths resolve against base_dir)."""
    return _wrap_native(_proxc.parse_problem(text, "<string>", base_dir))


def _wrap_native(native):
    variables = []
    for e in native.variables():
        v = Variable.__new__(Variable)
        v._expr, v._name = e, native.name_of(e)
        v._variables, v._constants = [v], []
        v._value, v.initval = None, None
        variables.append(v)
    return Problem(_native=native, _variables=variables)

"""ProxImaL's proximal functions over proxc's function terms.

Each function term is ``alpha * f(beta * e - b) + <c, e> + gamma * ||e||^2 + d``
(docs/semantics.md), with ProxImaL's keyword parameters and defaults. A term
is a description until a Problem builds it, so ``2 * f`` and ``f + g`` work as
in ProxImaL (a copy with alpha scaled, a list).
"""
import itertools
import numbers

import numpy as np

from . import _proxc
from ._lin_ops import _const_expr, _lin

__all__ = [
    "ProxFn", "sum_squares", "norm1", "group_norm1", "nonneg", "poisson_norm", "sum_entries", "weighted_norm1",
    "weighted_sum_squares", "weighted_group_norm1", "weighted_nonneg", "masked_nonneg", "weighted_poisson_norm",
    "zero_prox", "patch_NLM", "box", "prox_fn", "least_squares", "diff_fn", "cg_options", "lsqr_options",
    "register_prox_fn",
]


class ProxFn:
    """One function term of an objective."""

    _builder = None  # _proxc function (expr, *extra) -> Term

    def __init__(self, lin_op, *extra, alpha=1.0, beta=1.0, b=0.0, c=0.0, gamma=0.0, d=0.0, implem=None):
        self.lin_op = _lin(lin_op, type(self).__name__)
        self._extra = extra
        for name, v in (("alpha", alpha), ("beta", beta), ("gamma", gamma), ("d", d)):
            if not isinstance(v, numbers.Real):
                raise ValueError(f"{type(self).__name__}: {name} must be a number, got {type(v).__name__}")
        if alpha < 0:
            raise ValueError(f"{type(self).__name__}: alpha must be nonnegative, got {alpha}")
        if gamma < 0:
            raise ValueError(f"{type(self).__name__}: gamma must be nonnegative, got {gamma}")
        self.alpha, self.beta, self.gamma, self.d = float(alpha), float(beta), float(gamma), float(d)
        self.b, self.c = b, c
        self.implem = implem

    def variables(self):
        return self.lin_op.variables()

    @property
    def value(self):
        """The function at its variables' values (after a solve), as ProxImaL's ProxFn.value."""
        from ._lin_ops import _values
        term, _ = self._term()
        return _proxc.evaluate_terms(term, _values(self.variables(), "value"))[0]

    def prox(self, rho, v, *args, **kwargs):
        """ProxImaL's ProxFn.prox: argmin_u F(u) + (rho/2)||u - v||^2 for this
        function with its alpha, beta, b, c, gamma and d, u and v of the shape
        of its operand (v may be flat, or a number for one entry: returned so,
        a float). In double precision by proxc's reference interpreter (float32
        digits), returned in v's floating type as ProxImaL's (float64 for ints)."""
        scalar = np.isscalar(v)
        a = np.asarray(v)
        u = _proxc.prox(self._on_fresh_operand(), self._rho(rho), self._operand(a, "prox"))
        if scalar or a.size == 1:
            return float(u.reshape(-1)[0])
        return u.reshape(a.shape).astype(a.dtype if np.issubdtype(a.dtype, np.floating) else np.float64, copy=False)

    def eval(self, v):
        """ProxImaL's ProxFn.eval: the function (alpha, beta, b, c, gamma, d
        included) at v, of its operand's shape; indicators as in .value."""
        return _proxc.evaluate_at(self._on_fresh_operand(), self._operand(np.asarray(v), "eval"))

    def _rho(self, rho):
        if not isinstance(rho, numbers.Real) or isinstance(rho, bool) or not np.isfinite(rho) or rho <= 0:
            raise ValueError(f"{type(self).__name__}.prox: rho must be a number > 0, got {rho!r}")
        return float(rho)

    def _operand(self, a, what):
        from ._lin_ops import _as_float32
        shape = self.lin_op.shape
        if a.size != int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"{type(self).__name__}.{what}: v has {a.size} entries, the operand {shape}")
        return np.reshape(_as_float32(a, f"{type(self).__name__}.{what}'s v"), shape)

    def _on_fresh_operand(self):
        """This function's term over a new variable of its operand's shape."""
        from ._lin_ops import Variable
        term, _ = self.copy(lin_op=Variable(self.lin_op.shape, "v"))._term()
        return term

    def copy(self, lin_op=None, **kw):
        params = dict(alpha=self.alpha, beta=self.beta, b=self.b, c=self.c, gamma=self.gamma, d=self.d,
                      implem=self.implem)
        params.update(kw)
        out = type(self).__new__(type(self))
        out.__dict__.update(self.__dict__)
        ProxFn.__init__(out, self.lin_op if lin_op is None else lin_op, *self._extra, **params)
        return out

    def __repr__(self):
        return f"{type(self).__name__}(shape={self.lin_op.shape}, alpha={self.alpha})"

    # ProxImaL's operators: f + g is a list of terms, k * f scales alpha (k > 0).
    def __add__(self, other):
        if isinstance(other, ProxFn):
            return [self, other]
        if isinstance(other, list):
            return [self] + other
        return NotImplemented

    def __radd__(self, other):
        if isinstance(other, list):
            return other + [self]
        if isinstance(other, numbers.Real) and other == 0:  # builtins.sum of terms
            return [self]
        return NotImplemented

    def __mul__(self, k):
        if isinstance(k, numbers.Real) and not isinstance(k, bool) and k > 0:
            return self.copy(alpha=self.alpha * float(k))
        raise TypeError(f"{type(self).__name__}: can only multiply by a positive number")

    __rmul__ = __mul__

    def __truediv__(self, k):
        if isinstance(k, numbers.Real) and k > 0:
            return self * (1.0 / float(k))
        raise TypeError(f"{type(self).__name__}: can only divide by a positive number")

    # Building the term of proxc's problem.
    def _term(self):
        term = self._make()
        constants = list(self.lin_op._constants)
        term = term.alpha(self.alpha).beta(self.beta).gamma(self.gamma).d(self.d)
        for name in ("b", "c"):
            v = getattr(self, name)
            if isinstance(v, numbers.Real) and not isinstance(v, bool):
                if v != 0:
                    term = getattr(term, name)(float(v))
            else:
                e, ec = _const_expr(v, f"{type(self).__name__}'s {name}")
                constants += ec
                term = getattr(term, name)(e)
        return term, constants

    def _make(self):
        raise NotImplementedError


def _simple(name, builder, doc):
    def make(self):
        return builder(self.lin_op._expr)

    return type(name, (ProxFn,), {"_make": make, "__doc__": doc})


sum_squares = _simple("sum_squares", _proxc.sum_squares, "sum of squares, sum v^2 (no 1/2)")
norm1 = _simple("norm1", _proxc.norm1, "sum |v|")
nonneg = _simple("nonneg", _proxc.nonneg, "the indicator of v >= 0")
zero_prox = _simple("zero_prox", _proxc.zero_prox, "f = 0: its prox is the identity")


def _axes(group_dims):
    """The group axes as a list of ints; one int is one axis ([2] for 2)."""
    return [int(group_dims)] if isinstance(group_dims, numbers.Integral) else [int(a) for a in group_dims]


class group_norm1(ProxFn):  # noqa: N801 (ProxImaL's name)
    """sum over groups of sqrt(sum over group_dims of v^2): isotropic TV of grad(x) with [2]."""

    def __init__(self, lin_op, group_dims, **kw):
        self.group_dims = group_dims = _axes(group_dims)
        super().__init__(lin_op, group_dims, **kw)

    def _make(self):
        return _proxc.group_norm1(self.lin_op._expr, self.group_dims)


class _WithConstant(ProxFn):
    """A function with one constant argument besides its operand."""

    def __init__(self, lin_op, data, **kw):
        super().__init__(lin_op, data, **kw)

    def _data(self):
        e, ec = _const_expr(self._extra[0], f"{type(self).__name__}'s data")
        self._data_constants = ec
        return e

    def _term(self):
        term, constants = super()._term()
        return term, constants + self._data_constants


class poisson_norm(_WithConstant):  # noqa: N801
    """sum (v - bp log v) on v >= 0; bp the counts."""

    def _make(self):
        return _proxc.poisson_norm(self.lin_op._expr, self._data())


class weighted_norm1(_WithConstant):  # noqa: N801
    def _make(self):
        return _proxc.weighted_norm1(self.lin_op._expr, self._data())


class weighted_sum_squares(_WithConstant):  # noqa: N801
    def _make(self):
        return _proxc.weighted_sum_squares(self.lin_op._expr, self._data())


class weighted_nonneg(_WithConstant):  # noqa: N801
    def _make(self):
        return _proxc.weighted_nonneg(self.lin_op._expr, self._data())


class masked_nonneg(_WithConstant):  # noqa: N801
    def _make(self):
        return _proxc.masked_nonneg(self.lin_op._expr, self._data())


class weighted_group_norm1(ProxFn):  # noqa: N801
    def __init__(self, lin_op, group_dims, weight, **kw):
        self.group_dims = group_dims = _axes(group_dims)
        super().__init__(lin_op, group_dims, weight, **kw)

    def _make(self):
        w, self._data_constants = _const_expr(self._extra[1], "weighted_group_norm1's weight")
        return _proxc.weighted_group_norm1(self.lin_op._expr, self.group_dims, w)

    def _term(self):
        term, constants = super()._term()
        return term, constants + self._data_constants


class weighted_poisson_norm(ProxFn):  # noqa: N801
    def __init__(self, lin_op, bp, weight, **kw):
        super().__init__(lin_op, bp, weight, **kw)

    def _make(self):
        bp, bc = _const_expr(self._extra[0], "weighted_poisson_norm's counts")
        w, wc = _const_expr(self._extra[1], "weighted_poisson_norm's weight")
        self._data_constants = bc + wc
        return _proxc.weighted_poisson_norm(self.lin_op._expr, bp, w)

    def _term(self):
        term, constants = super()._term()
        return term, constants + self._data_constants


def sum_entries(lin_op, **kwargs):
    """sum v (as the linear term c = 1). proxc honours alpha, which ProxImaL ignores."""
    if "c" in kwargs:
        raise TypeError("sum_entries: got multiple values for keyword argument 'c'")
    return _SumEntries(lin_op, **kwargs)


class _SumEntries(ProxFn):
    def _make(self):
        return _proxc.sum_entries(self.lin_op._expr)


class patch_NLM(ProxFn):  # noqa: N801
    """ProxImaL's plug-and-play prior: OpenCV's non-local means as the prox."""

    def __init__(self, lin_op, sigma_fixed=0.6, sigma_scale=6.0, templateWindowSizeNLM=3, searchWindowSizeNLM=11,
                 gamma_trans=1.0, prior=1, **kw):
        self.params = dict(sigma_fixed=sigma_fixed, sigma_scale=sigma_scale,
                           templateWindowSizeNLM=templateWindowSizeNLM, searchWindowSizeNLM=searchWindowSizeNLM,
                           gamma_trans=gamma_trans, prior=prior)
        super().__init__(lin_op, **kw)

    def _make(self):
        return _proxc.prox_fn("patch_NLM", self.lin_op._expr, {k: float(v) for k, v in self.params.items()})


class prox_fn(ProxFn):  # noqa: N801
    """A prox function of your own, registered in C (include/proxc/prox_fn.h)
    and loaded with proxc.load_plugin: ``prox_fn("my_denoiser", x, strength=2)``."""

    def __init__(self, name, lin_op, alpha=1.0, beta=1.0, b=0.0, c=0.0, gamma=0.0, d=0.0, **params):
        self.name = name
        for k, v in params.items():
            real = isinstance(v, numbers.Real) or (isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype.kind in "iuf")
            if not real or isinstance(v, (bool, np.bool_)):
                raise ValueError(f"prox_fn '{name}': the parameter {k} must be a number, got {v!r}")
        self.params = {k: float(v) for k, v in params.items()}
        super().__init__(lin_op, alpha=alpha, beta=beta, b=b, c=c, gamma=gamma, d=d)

    def _make(self):
        return _proxc.prox_fn(self.name, self.lin_op._expr, self.params)


class box(ProxFn):  # noqa: N801
    """The indicator of lower <= v <= upper (numbers or arrays)."""

    def __init__(self, lin_op, lower=-np.inf, upper=np.inf, **kw):
        self.bounds = (lower, upper)
        super().__init__(lin_op, **kw)

    def _make(self):
        lo, hi = self.bounds
        self._data_constants = []

        def bound(v, what):
            if isinstance(v, numbers.Real):
                return float(v)
            e, ec = _const_expr(v, what)
            self._data_constants += ec
            return e

        return _proxc.box(self.lin_op._expr, bound(lo, "box's lower"), bound(hi, "box's upper"))

    def _term(self):
        term, constants = super()._term()
        return term, constants + self._data_constants


def least_squares(*args, **kwargs):
    raise NotImplementedError("least_squares is ProxImaL's internal x-update; write sum_squares(K(x) - b) instead")


def register_prox_fn(name, prox, value=None, **params):
    """A prox function written in Python, for prox_fn(name, x, ...) in this
    process: ``prox(v, rho, **params)`` returns argmin_x f(x) + (rho/2)||x - v||^2
    (an array of v's shape: a plug-and-play denoiser of noise level
    sqrt(1/rho), a projection), ``value(x, **params)`` returns f(x) (without
    it the objective leaves the term out). v and x are float32 arrays of the
    operand's shape; params are the parameters' names with their defaults.
    Solves call the functions with the GIL taken, between compiled regions
    (include/proxc/prox_fn.h); an exception they raise stops the solve with
    an error that quotes it."""
    if not callable(prox) or (value is not None and not callable(value)):
        raise TypeError(f"register_prox_fn '{name}': prox and value must be callables")
    names = list(params)
    defaults = []
    for k in names:
        v = params[k]
        if not isinstance(v, numbers.Real) or isinstance(v, bool):
            raise ValueError(f"register_prox_fn '{name}': the default of {k} must be a number, got {v!r}")
        defaults.append(float(v))

    def call_prox(v, rho, p):
        out = prox(v, rho, **dict(zip(names, p)))
        if out is None:
            raise ValueError("prox returned None, not its result (an array of the operand's shape)")
        if np.iscomplexobj(out):
            raise ValueError("prox returned complex values; it must return real ones")
        a = np.asarray(out, dtype=np.float32)
        if a.shape != v.shape:
            raise ValueError(f"prox returned an array of shape {a.shape} for an operand of shape {v.shape}")
        if not np.isfinite(a).all():
            bad = tuple(int(i) for i in np.argwhere(~np.isfinite(a))[0])
            raise ValueError(f"prox returned {a[bad]} at {bad} (rho {rho:g})")
        return np.ascontiguousarray(a)

    def call_value(x, p):
        f = value(x, **dict(zip(names, p)))
        try:
            real = None if np.iscomplexobj(f) else float(f)
        except (TypeError, ValueError, OverflowError):
            real = None
        if real is None or np.isnan(real):
            raise ValueError(f"value returned {repr(f)[:60]}; it must return a real number (inf for outside a "
                             "constraint)")
        return real

    _proxc.register_python_prox_fn(str(name), call_prox, None if value is None else call_value, names, defaults)
    return name


class diff_fn(ProxFn):  # noqa: N801 (ProxImaL's name)
    """ProxImaL's diff_fn: a smooth function f given by ``func`` and its
    gradient ``fprime``, its prox computed by L-BFGS-B (SciPy's, as
    ProxImaL's: ``bounds`` a list of (lower, upper) per entry, ``factr`` its
    tolerance) from v. As in ProxImaL, func and fprime get the flat vector
    in the prox (L-BFGS-B's x) and func the operand's shape for the value."""

    _names = itertools.count()

    def __init__(self, lin_op, func, fprime, bounds=None, factr=1e7, **kwargs):
        if not callable(func) or not callable(fprime):
            raise TypeError("diff_fn: func and fprime must be callables")
        try:
            import scipy.optimize  # noqa: F401
        except ImportError:
            raise ImportError("diff_fn needs SciPy for its L-BFGS-B prox: pip install scipy") from None
        self.func, self.fprime, self.bounds, self.factr = func, fprime, bounds, float(factr)
        super().__init__(lin_op, **kwargs)
        # One registration per diff_fn, shared by its copies (fn.prox and
        # fn.eval build one): the prox depends on func, fprime, bounds and
        # factr alone, and the registry keeps what it holds for good.
        self._registered = register_prox_fn(f"_proxc_diff_fn_{next(diff_fn._names)}",
                                            _lbfgs_prox(func, fprime, bounds, self.factr), lambda x: func(x))

    def _make(self):
        return _proxc.prox_fn(self._registered, self.lin_op._expr, {})


def _lbfgs_prox(func, fprime, bounds, factr):
    """argmin_x func(x) + (rho/2)||x - v||^2 by SciPy's L-BFGS-B from v, with
    ProxImaL's settings (fmin_l_bfgs_b's factr, pgtol 1e-5, 15000 iterations)."""
    def prox(v, rho):
        from scipy.optimize import minimize
        v0 = np.asarray(v, dtype=np.float64).ravel()

        def objective(x):
            r = x - v0
            grad = np.asarray(fprime(x), dtype=np.float64).ravel() + rho * r
            return float(func(x)) + 0.5 * rho * float(r @ r), grad

        res = minimize(objective, v0.copy(), jac=True, method="L-BFGS-B", bounds=bounds,
                       options={"ftol": factr * np.finfo(float).eps, "gtol": 1e-5, "maxiter": 15000})
        return res.x.reshape(v.shape)

    return prox


def cg_options(tol=1e-6, num_iters=50, verbose=False):
    """ProxImaL's lin_solver_options for the conjugate-gradient x-update."""
    return {"tol": tol, "num_iters": num_iters, "verbose": verbose}


def lsqr_options(atol=1e-6, btol=1e-6, num_iters=50, verbose=False):
    """Accepted for ProxImaL's scripts; proxc's x-update is conjugate gradients (num_iters, atol as its tolerance)."""
    return {"tol": atol, "num_iters": num_iters, "verbose": verbose}


"""ProxImaL's proximal.algorithms.absorb: a function's outermost linear
operator moved into the function's parameters, on the Python objects.

A solve does this itself (proxc's absorb pass, docs/passes.md); these
functions are for scripts that transform their functions by hand, as
ProxImaL's tests and examples do. Each rule keeps the function's value
(docs/python.md, "ProxImaL's passes as functions"):

- a scalar factor s (``s * e``, ``e / s``, ``-e``, ``scale(s, e)``):
  f(beta*s*e - b) is beta*s, b, c*s and gamma*s^2 over e;
- an elementwise weight w (``mul_elemwise(w, e)``) into nonneg, norm1,
  sum_squares, poisson_norm and group_norm1 (their weighted forms, which are
  f(w*u)), or into a weighted form's own weight, where gamma is 0: b/w (where
  w is not 0) and c*w; where w is 0 the term's constant f(-b) goes into d
  (and where it is not finite the weight stays in the operand);
- a linear function (``zero_prox``, ``sum_entries``) with gamma 0 through any
  operator: <c, K e> = <K^T c, e> for each operand, the operands' constant
  parts and the operator's offset moved into d.

The functions returned hold the values their arrays have now: a Constant
used as a weight, b or c is read here, and its later values do not reach
them. absorb_offset is ProxImaL's, which keeps the value only where beta is
1 (it moves b - e0, not b - beta*e0).
"""
import numpy as np

from .. import _proxc
from .. import _prox_fns as _fns
from .._lin_ops import LinOp
from ._split import absorb_offset

__all__ = ["absorb_lin_op", "absorb_all_lin_ops", "absorb_offset"]

# The weighted form of each function: weighted_f(u, w) = f(w * u).
_WEIGHTED = {
    _fns.nonneg: _fns.weighted_nonneg,
    _fns.norm1: _fns.weighted_norm1,
    _fns.sum_squares: _fns.weighted_sum_squares,
    _fns.poisson_norm: _fns.weighted_poisson_norm,
    _fns.group_norm1: _fns.weighted_group_norm1,
}


def _array(v, shape, what="a parameter"):
    """v (a number, an array of `shape` or a constant expression) as a
    float64 array of `shape`: the value it has now (a Constant's later values
    do not reach the functions returned)."""
    if isinstance(v, LinOp):
        if not v.is_constant():
            raise ValueError(f"{what}: expected a constant, got an expression of the variables")
        v = v.value
    a = np.asarray(v, dtype=np.float64)
    if a.ndim and a.shape != tuple(shape):
        raise ValueError(f"{what}: shape {a.shape}, the operand {tuple(shape)}")
    return np.array(np.broadcast_to(a, shape))


def _is_linear(fn):
    """Whether fn is <c, v> (+ gamma||v||^2 + d): zero_prox and sum_entries."""
    return type(fn) is _fns.zero_prox or isinstance(fn, _fns._SumEntries)


def _linear_parts(fn):
    """(c, d) of a linear function: sum_entries is alpha * sum(beta v - b)
    (proxc honours its alpha), so c + alpha*beta and d - alpha*sum(b)."""
    shape = fn.lin_op.shape
    c = _array(fn.c, shape, f"{type(fn).__name__}'s c")
    d = fn.d
    if isinstance(fn, _fns._SumEntries):
        c += fn.alpha * fn.beta
        d -= fn.alpha * float(_array(fn.b, shape, "sum_entries' b").sum())
    return c, d


def _check(prox_fn, what):
    if not isinstance(prox_fn, _fns.ProxFn):
        raise TypeError(f"{what}: expected a proximal function, got {type(prox_fn).__name__}")


def absorb_lin_op(prox_fn):
    """ProxImaL's absorb_lin_op: a list of functions whose sum is prox_fn with
    its outermost linear operator moved into their parameters, or [prox_fn]
    when no rule applies (a variable, or an operator no rule takes)."""
    _check(prox_fn, "absorb_lin_op")
    op = prox_fn.lin_op
    if not op.input_nodes or op.is_constant():
        return [prox_fn]
    if _is_linear(prox_fn) and prox_fn.gamma == 0:
        return _through_linear(prox_fn)
    if op._expr.kind == "mul_elemwise" and prox_fn.gamma == 0:
        weighted = _into_weight(prox_fn)
        if weighted is not None:
            return [weighted]
    s = getattr(op, "scalar", None)
    if s is not None and s != 0:
        c = prox_fn.c if np.isscalar(prox_fn.c) else _array(prox_fn.c, op.shape, f"{type(prox_fn).__name__}'s c")
        return [prox_fn.copy(op.input_nodes[0], beta=prox_fn.beta * s, c=c * s, gamma=prox_fn.gamma * s * s)]
    return [prox_fn]


def absorb_all_lin_ops(prox_funcs):
    """ProxImaL's absorb_all_lin_ops: absorb_lin_op applied until no function changes."""
    done, pending = [], list(prox_funcs)
    while pending:
        fn = pending.pop(0)
        _check(fn, "absorb_all_lin_ops")
        out = absorb_lin_op(fn)
        if len(out) == 1 and out[0] is fn:
            done.append(fn)
        else:
            pending += out
    return done


def _into_weight(prox_fn):
    """The weighted function of mul_elemwise(w, e)'s operand e, or None where
    the function has no weighted form or the weight does not fit it. Where
    w is 0 the term is the constant alpha*f(-b), moved into d; the rule is
    not applied where that constant is not finite (nonneg, poisson_norm)."""
    op = prox_fn.lin_op
    w = op.weight.value if isinstance(op.weight, LinOp) else op.weight
    w = np.array(np.broadcast_to(np.asarray(w, dtype=np.float64), op.shape))
    kind = type(prox_fn)
    if kind in _WEIGHTED:
        kind, old_weight, extra = _WEIGHTED[kind], np.ones(op.shape), tuple(prox_fn._extra) + (w,)
    elif kind in _WEIGHTED.values():
        old_weight = _array(prox_fn._extra[-1], op.shape, f"{kind.__name__}'s weight")
        extra = tuple(prox_fn._extra[:-1]) + (old_weight * w,)
    else:
        return None
    weight = extra[-1]
    if kind is _fns.weighted_group_norm1:  # one weight per group
        axes = [a % len(op.shape) for a in extra[0] if -len(op.shape) <= a < len(op.shape)]
        if len(axes) != len(extra[0]):
            return None
        for axis in axes:
            if not np.array_equal(weight, np.broadcast_to(np.take(weight, [0], axis=axis), weight.shape)):
                return None
    b = _array(prox_fn.b, op.shape, f"{type(prox_fn).__name__}'s b")
    zero = w == 0
    lost = old_weight * b * zero  # w' b where the new weight is 0: f(-w' b) is lost there
    if kind is _fns.weighted_poisson_norm and ((weight < 0).any() or zero.any()):
        return None
    if kind is _fns.weighted_nonneg and lost.any():
        return None
    d = prox_fn.d
    if kind is _fns.weighted_norm1:
        d += prox_fn.alpha * float(np.abs(lost).sum())
    elif kind is _fns.weighted_sum_squares:
        d += prox_fn.alpha * float(np.square(lost).sum())
    elif kind is _fns.weighted_group_norm1:
        d += prox_fn.alpha * float(np.sqrt(np.square(lost).sum(axis=tuple(axes))).sum())
    b[~zero] /= w[~zero]
    return kind(op.input_nodes[0], *extra, alpha=prox_fn.alpha, beta=prox_fn.beta, b=b,
                c=_array(prox_fn.c, op.shape, f"{type(prox_fn).__name__}'s c") * w, gamma=0.0, d=d,
                implem=prox_fn.implem)


def _through_linear(prox_fn):
    """<c, K(e_1, ..., e_k)> + d as one zero_prox per operand that reads a
    variable, c_i the i-th part of K^T c; the rest (K's offset, and the
    constant operands' part) is a number, added to d."""
    op = prox_fn.lin_op
    nodes = op.input_nodes
    c, d = _linear_parts(prox_fn)
    parts = [np.zeros(n.shape) for n in nodes]
    op.adjoint([c], parts)
    # The node's own offset (x + 1), which forward, being linear, leaves out.
    node, fresh = op._over(nodes, "absorb_lin_op")
    offset = _proxc.evaluate(node._expr, [(v._expr, np.zeros(v.shape, np.float32)) for v in fresh])
    d += float(np.vdot(c, np.asarray(offset, dtype=np.float64)))
    out = []
    for node, part in zip(nodes, parts):
        if node.is_constant():
            d += float(np.vdot(part, _array(node.value, node.shape)))
        else:
            out.append((node, part))
    return [_fns.zero_prox(node, c=part, d=d if i == 0 else 0.0, implem=prox_fn.implem)
            for i, (node, part) in enumerate(out)]

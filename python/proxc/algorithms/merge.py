"""ProxImaL's proximal.algorithms.merge: two functions of the same operand
merged into one, on the Python objects (proxc's merge pass, docs/passes.md,
does this inside a solve when asked).

A linear function (zero_prox, sum_entries) merges into any function of the
same operand as its c; a sum of squares alpha*||beta*v - b||^2 merges as
gamma += alpha*beta^2, c -= 2*alpha*beta*b and d += alpha*||b||^2 (ProxImaL
adds ||b||^2 to d, without alpha: the prox is the same, the value is
proxc's)."""
import numpy as np

from .. import _prox_fns as _fns
from .absorb import _array, _check, _is_linear, _linear_parts

__all__ = ["can_merge", "merge_fns", "merge_all"]


def can_merge(lh_prox, rh_prox):
    """Whether the two functions apply to the same operand (the same
    expression object, as ProxImaL compares them) and one of them is linear
    or a sum of squares."""
    _check(lh_prox, "can_merge")
    _check(rh_prox, "can_merge")
    if lh_prox.lin_op is not rh_prox.lin_op:
        return False
    return any(_is_linear(f) or type(f) is _fns.sum_squares for f in (lh_prox, rh_prox))


def merge_fns(lh_prox, rh_prox):
    """ProxImaL's merge_fns: one function equal to the sum of the two
    (can_merge must hold; a ValueError says why not)."""
    if not can_merge(lh_prox, rh_prox):
        raise ValueError(f"merge_fns: {lh_prox!r} and {rh_prox!r} cannot be merged: they must apply to the same "
                         "expression and one of them be zero_prox, sum_entries or sum_squares")
    shape = lh_prox.lin_op.shape

    def c_and_d(f):
        return _linear_parts(f) if _is_linear(f) else (_array(f.c, shape, f"{type(f).__name__}'s c"), f.d)

    (c1, d1), (c2, d2) = c_and_d(lh_prox), c_and_d(rh_prox)
    c, d = c1 + c2, d1 + d2
    gamma = lh_prox.gamma + rh_prox.gamma
    if _is_linear(lh_prox) or _is_linear(rh_prox):
        keep = rh_prox if _is_linear(lh_prox) else lh_prox
    else:
        square = lh_prox if type(lh_prox) is _fns.sum_squares else rh_prox
        keep = rh_prox if square is lh_prox else lh_prox
        a, beta, b = square.alpha, square.beta, _array(square.b, shape, "sum_squares' b")
        c = c - 2 * a * beta * b
        gamma += a * beta * beta
        d += a * float(np.vdot(b, b))
    if _is_linear(keep):  # both linear: sum_entries' alpha, beta and b are in c and d now
        return _fns.zero_prox(keep.lin_op, c=c, gamma=gamma, d=d, implem=keep.implem)
    return keep.copy(c=c, gamma=gamma, d=d)


def merge_all(prox_fns):
    """ProxImaL's merge_all: pairs merged, in order, until none can be."""
    fns = list(prox_fns)
    while True:
        merged, used = [], set()
        for i, f in enumerate(fns):
            for j in range(i + 1, len(fns)):
                if i not in used and j not in used and can_merge(f, fns[j]):
                    merged.append(merge_fns(f, fns[j]))
                    used.update((i, j))
        if not merged:
            return fns
        fns = merged + [f for k, f in enumerate(fns) if k not in used]

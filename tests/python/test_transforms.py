"""ProxImaL's passes as functions on the Python objects: absorb_lin_op,
absorb_all_lin_ops, can_merge, merge_fns, merge_all, get_offset, equil and
newton_equil. Every rule must keep the function's value (the sum of the
functions returned equals the function given at any x), and the proxes are
checked against their closed forms or a brute-force minimisation."""
import math

import numpy as np
import pytest

import proxc
from proxc import *  # noqa: F403  (ProxImaL's names)
from proxc.algorithms import absorb
from proxc.algorithms.equil import newton_equil
from proxc.algorithms.merge import merge_all

RNG = np.random.default_rng(7)


def _value(fns):
    return float(np.sum([f.value for f in fns]))


def _same_value(fn, fns, rel=1e-5):
    a, b = fn.value, _value(fns)
    assert abs(a - b) <= rel * max(1.0, abs(a)), f"{fn!r}: {a} before, {b} after"


def _scalar_prox(objective, v, lo=-50.0, hi=50.0):
    """argmin over each entry of a convex objective(x, i), by a golden-section search."""
    out = np.empty_like(v)
    g = (math.sqrt(5) - 1) / 2
    for i in range(v.size):
        a, b = lo, hi
        for _ in range(200):
            c, d = b - g * (b - a), a + g * (b - a)
            if objective(c, i) < objective(d, i):
                b = d
            else:
                a = c
        out.flat[i] = (a + b) / 2
    return out


def test_the_scale_rule_keeps_the_function_and_its_prox():
    x = Variable(10)
    v = np.arange(10) * 1.0 - 5.0
    val = np.arange(10) * 1.0
    fn = norm1(10 * x, c=val, b=val, gamma=0.01)
    new = absorb_lin_op(fn)
    assert len(new) == 1 and new[0].lin_op is x
    assert (new[0].beta, new[0].gamma) == (10.0, pytest.approx(1.0))
    # f(beta*s*x - b): b stays (ProxImaL 0.1.7 divides it by s, another function).
    np.testing.assert_array_equal(np.asarray(new[0].b), val)
    x.value = RNG.standard_normal(10)
    _same_value(fn, new)
    rho = 2.0
    got = new[0].prox(rho, v.copy())
    want = _scalar_prox(lambda t, i: abs(10 * t - val[i]) + 10 * val[i] * t + t * t + rho / 2 * (t - v[i]) ** 2, v)
    np.testing.assert_allclose(got, want, atol=1e-4)
    for e, s in ((-x, -1.0), (x / 4, 0.25), (scale(3, x), 3.0)):
        new = absorb_lin_op(sum_squares(e, b=1.0))
        assert new[0].lin_op is x and new[0].beta == s
        _same_value(sum_squares(e, b=1.0), new)


def test_a_weight_moves_into_the_weighted_function():
    x = Variable(10)
    v = np.arange(10) * 1.0 - 5.0
    rho = 2.0
    fn = norm1(mul_elemwise(-v, x), alpha=5.0)
    new = absorb_lin_op(fn)
    assert type(new[0]) is weighted_norm1 and new[0].lin_op is x
    np.testing.assert_allclose(new[0].prox(rho, v.copy()), np.sign(v) * np.maximum(np.abs(v) - 5 * np.abs(v) / rho, 0),
                               atol=1e-6)
    # A weighted function's weight multiplies: weighted_norm1(-v * 2v).
    fn = norm1(mul_elemwise(-v, mul_elemwise(2 * v, x)), alpha=5.0)
    twice = absorb_lin_op(absorb_lin_op(fn)[0])
    assert type(twice[0]) is weighted_norm1 and twice[0].lin_op is x
    new_v = 2 * v * v
    np.testing.assert_allclose(twice[0].prox(rho, v.copy()),
                               np.sign(new_v) * np.maximum(np.abs(new_v) - 5 * np.abs(new_v) / rho, 0), atol=1e-5)
    # sum_squares with c: argmin (rho/2)||x - v||^2 + 5||w x||^2 + <c w, x>.
    val = np.arange(10) * 1.0
    fn = sum_squares(mul_elemwise(-v, x), alpha=5.0, c=val)
    new = absorb_lin_op(fn)
    assert type(new[0]) is weighted_sum_squares
    np.testing.assert_allclose(new[0].prox(rho, v.copy()), (rho * v - val * -v) / (rho + 10 * v * v), rtol=1e-5)


def test_every_rule_keeps_the_value():
    x = Variable((6, 5))
    x.value = np.abs(RNG.standard_normal((6, 5))) + 0.5
    w = RNG.uniform(0.5, 2.0, (6, 5))
    w_groups = np.repeat(RNG.uniform(0.5, 2.0, (6, 5, 1)), 2, axis=2)  # one weight per gradient pair
    b = RNG.standard_normal((6, 5))
    counts = RNG.uniform(0.5, 3.0, (6, 5))
    fns = [
        norm1(mul_elemwise(w, x), b=b, alpha=2.0, c=b),
        sum_squares(mul_elemwise(-w, x - b), beta=0.5, d=3.0),
        nonneg(mul_elemwise(w, x)),
        poisson_norm(mul_elemwise(w, x), counts),
        group_norm1(mul_elemwise(w_groups, grad(x)), [2], alpha=0.3),
        weighted_norm1(mul_elemwise(w, x), w, b=b),
        sum_squares(-3 * mul_elemwise(w, x), gamma=0.2, c=b),
        sum_entries(sum([10 * x, mul_elemwise(w, x), x - b]) + 1.5, alpha=2.0),
        zero_prox(grad(x) - 1.0, c=RNG.standard_normal((6, 5, 2)), d=0.5),
    ]
    for fn in fns:
        out = absorb.absorb_all_lin_ops([fn])
        assert out != [fn], f"no rule applied to {fn!r}"
        _same_value(fn, out)
    # The linear function: one zero_prox of x per operand, with c the adjoint
    # (ProxImaL's test: sum_entries(sum([10 x, v x])) gives c's summing to v + 10).
    y = Variable(10)
    v = np.arange(10) * 1.0 - 5.0
    out = absorb.absorb_all_lin_ops([sum_entries(sum([10 * y, mul_elemwise(v, y)]))])
    assert [type(f) for f in out] == [zero_prox, zero_prox] and all(f.lin_op is y for f in out)
    np.testing.assert_allclose(np.sum([f.c for f in out], axis=0), v + 10, rtol=1e-6)


def test_sum_entries_beta_and_b_and_zero_weights_keep_the_value():
    x = Variable((6, 5))
    x.value = RNG.standard_normal((6, 5))
    y = RNG.standard_normal((6, 5))
    w = RNG.uniform(0.5, 2.0, (6, 5))
    # sum_entries is alpha * sum(beta v - b): its c is alpha*beta, its d -alpha*sum(b).
    fns = [sum_entries(mul_elemwise(w, x), beta=3.0, b=y, alpha=2.0),
           absorb_offset(sum_entries(x - y)),
           sum_entries(grad(x), beta=-0.5, b=1.0, d=2.0)]
    for fn in fns:
        _same_value(fn, absorb.absorb_all_lin_ops([fn]))
    g = grad(x)
    b = RNG.standard_normal((6, 5, 2))
    lin, l1 = sum_entries(g, beta=3.0, b=b, gamma=0.1), norm1(g)
    merged = merge_fns(lin, l1)
    assert merged.value == pytest.approx(lin.value + l1.value, rel=1e-6)
    v = RNG.standard_normal((6, 5, 2))
    np.testing.assert_allclose(merged.prox(1.0, v.copy()), norm1(g, c=3.0, gamma=0.1).prox(1.0, v.copy()), rtol=1e-6)
    # A weight of 0 leaves the constant f(-b) of its entries: moved into d.
    mask = (RNG.uniform(size=(6, 5)) < 0.5).astype(np.float64)
    pairs = np.repeat(mask[..., None], 2, axis=2)
    for fn in (norm1(mul_elemwise(mask, x), b=y, alpha=1.5), sum_squares(mul_elemwise(mask, x), b=y),
               weighted_sum_squares(mul_elemwise(mask, x), w, b=y),
               group_norm1(mul_elemwise(pairs, grad(x)), [2], b=b, alpha=0.7)):
        out = absorb_lin_op(fn)
        assert out != [fn] and out[0].lin_op is not fn.lin_op
        _same_value(fn, out)
    # Where that constant is not finite, or not a function's (nonneg with b > 0
    # at a zero weight is infeasible; poisson_norm skips its zero weights), the
    # weight stays.
    for fn in (nonneg(mul_elemwise(mask, x), b=np.abs(y) + 1), poisson_norm(mul_elemwise(mask, x), np.ones((6, 5)))):
        assert absorb_lin_op(fn) == [fn]
    # nonneg's feasibility is kept, with weights of both signs.
    signs = np.where(RNG.uniform(size=(6, 5)) < 0.5, -1.0, 2.0)
    fn = nonneg(mul_elemwise(signs, x))
    out = absorb_lin_op(fn)
    assert type(out[0]) is weighted_nonneg
    for point in (np.sign(signs), -np.sign(signs)):
        x.value = point
        assert fn.value == out[0].value


def test_bad_parameters_are_named():
    x = Variable((6, 5))
    with pytest.raises(ValueError, match=r"norm1's b: shape \(5,\), the operand \(6, 5\)"):
        absorb_lin_op(norm1(mul_elemwise(np.ones((6, 5)), x), b=np.ones(5)))
    with pytest.raises(ValueError, match="expected a constant, got an expression of the variables"):
        merge_fns(sum_squares(x, b=x), norm1(x))


def test_what_no_rule_takes_is_returned_as_it_is():
    x = Variable((4, 4))
    varying = np.arange(32.0).reshape(4, 4, 2) + 1  # differs within a gradient pair
    for fn in (norm1(x), norm1(grad(x)), norm1(mul_elemwise(np.ones((4, 4)), x), gamma=1.0),
               group_norm1(mul_elemwise(varying, grad(x)), [2]),
               poisson_norm(mul_elemwise(-np.ones((4, 4)), x), np.ones((4, 4))),
               masked_nonneg(mul_elemwise(np.ones((4, 4)), x), np.ones((4, 4)))):
        out = absorb_lin_op(fn)
        assert len(out) == 1 and out[0] is fn
    with pytest.raises(TypeError, match="absorb_lin_op: expected a proximal function"):
        absorb_lin_op(x)


def test_merge_as_proximal_computes_it():
    x = Variable(10)
    v = np.arange(10) * 1.0 - 5.0
    fn1, fn2 = sum_entries(x, gamma=1.0), norm1(x)
    assert can_merge(fn1, fn2)
    merged = merge_fns(fn1, fn2)
    np.testing.assert_allclose(merged.prox(1.0, v.copy()), norm1(x, c=np.ones(10), gamma=1.0).prox(1.0, v.copy()))
    val = np.arange(10) * 1.0
    fn1 = sum_squares(x, gamma=1.0, beta=2.0, alpha=3.0, b=val)
    merged = merge_fns(fn1, fn2)
    assert type(merged) is norm1
    np.testing.assert_allclose(merged.prox(1.0, v.copy()),
                               norm1(x, c=-12 * val, gamma=1.0 + 12).prox(1.0, v.copy()), rtol=1e-6)
    x.value = RNG.standard_normal(10)
    assert merged.value == pytest.approx(fn1.value + fn2.value, rel=1e-5)
    # merge_all: sum_squares + sum_entries + nonneg of one operand is one function.
    y = Variable(10)
    g = grad(y)
    fns = [sum_squares(g), sum_entries(g), nonneg(g)]
    out = merge_all(fns)
    assert len(out) == 1 and type(out[0]) is nonneg
    w = np.reshape(np.arange(10) * 1.0 - 5.0, (10, 1))
    np.testing.assert_allclose(out[0].prox(1.0, w.copy()), nonneg(g, c=np.ones((10, 1)), gamma=1.0).prox(1.0, w.copy()))
    y.value = np.cumsum(np.abs(RNG.standard_normal(10)))  # increasing: grad >= 0 but at the edge
    assert out[0].value == pytest.approx(_value(fns), rel=1e-5)


def test_what_cannot_merge():
    x, y = Variable(5), Variable(5)
    assert not can_merge(norm1(x), nonneg(x))
    assert not can_merge(sum_squares(x), norm1(y))
    assert not can_merge(sum_squares(grad(x)), sum_squares(grad(x)))  # two expression objects
    with pytest.raises(ValueError, match="merge_fns: .* cannot be merged"):
        merge_fns(norm1(x), nonneg(x))
    assert len(merge_all([norm1(x), nonneg(x)])) == 2


def test_get_offset():
    x = Variable(10)
    b = np.arange(10) * 1.0
    np.testing.assert_array_equal((x - b).get_offset(), -b)
    np.testing.assert_array_equal((2 * x + 1).get_offset(), np.ones(10))
    assert absorb_offset(sum_squares(x - b)).b == pytest.approx(b)


def _equil_problem():
    kernel = np.array([1, 1, 1]) / np.sqrt(3)
    x = Variable(3)
    wr, wl = np.array([10, 5, 7]), np.array([100, 50, 3])
    K = CompGraph(mul_elemwise(wl, conv(kernel, mul_elemwise(wr, x))))
    return K, wl[:, None] * (np.ones((3, 3)) / np.sqrt(3)) * wr[None, :]


def _equil_objective(A, d, e, gamma):
    u, v = np.log(d), np.log(e)
    return np.square(d[:, None] * A * e[None, :]).sum() / 2 - u.sum() - v.sum() + gamma / 2 * (u @ u + v @ v)


def test_equil_reproduces_proximals_numbers():
    # ProxImaL 0.1.7's equil and newton_equil on its own test problem (its
    # tests/test_algs.py, test_equil) with np.random.seed(1), run with ProxImaL
    # on 2026-12-06: the same draws give the same scalings.
    K, A = _equil_problem()
    np.random.seed(1)
    d, e = equil(K, 1000, gamma=1e-1, M=5)
    np.testing.assert_allclose(d, [0.0265742, 0.05186545, 0.77124113], rtol=1e-5)
    np.testing.assert_allclose(e, [0.04453422, 0.08669663, 0.06275895], rtol=1e-5)
    dn, en = newton_equil(A, 1e-1, 100)
    np.testing.assert_allclose(dn, [0.02112963, 0.04122742, 0.61279711], rtol=1e-6)
    np.testing.assert_allclose(en, [0.05648011, 0.109997, 0.07960322], rtol=1e-6)
    # Newton's is the minimum; the stochastic method comes within 1e-3 of it.
    best = _equil_objective(A, dn, en, 1e-1)
    assert best <= _equil_objective(A, d, e, 1e-1) <= best * (1 + 1e-3) + 1e-12
    # An expression is taken as its CompGraph.
    np.random.seed(1)
    d2, e2 = proxc.algorithms.equil(K.end, 1000, gamma=1e-1, M=5)
    np.testing.assert_array_equal(d2, d)


def test_equil_refuses_bad_arguments():
    K, _ = _equil_problem()
    with pytest.raises(ValueError, match="equil: iters"):
        equil(K, -1)
    with pytest.raises(ValueError, match="equil: gamma and M"):
        equil(K, 10, gamma=0)
    with pytest.raises(TypeError, match="equil: expected a CompGraph"):
        equil(np.eye(3))

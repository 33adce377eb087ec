"""A split of the user's own: ProxImaL's solver modules (proxc.algorithms:
admm, pc, ladmm, hqs, each with partition and solve(psi_fns, omega_fns, ...)),
Problem(psi_fns=, omega_fns=) and absorb_offset (docs/python.md, "A split of
your own"). The references are ProxImaL 0.1.7's own returns on the same calls
(the calls of its tests/test_algs.py), run with its numpy backend in a scratch
venv:
  admm, omega sum_squares(X, b=B, alpha=0.1, beta=2, gamma=1, c=B) after absorb_offset: 1697.5285714285712
  pc (0.5, 1, 1, conv_check=1), everything psi:          1212.750000130514
  pc after pc.partition:                                  1212.75
  ladmm (0.1, max_iters=3000) after ladmm.partition:      1212.7500000009436
  hqs (max_iters=100, max_inner_iters=300) after hqs.partition: 1212.750000018286
  admm, omega sum_squares(conv([1, 2, 3], x), b):        76305.15663113727, x = [82.7859, -1e-4, -1e-4]
Each is solved to eps_abs = eps_rel = 1e-5 by both, and their objectives agree
to 1e-6 relative (proxc's figures: 3.5e-8, 1e-10, 0, 4e-13, 2.1e-9 and
2.3e-8). 1212.75 and x = max(B - 0.5, 0) are the exact optimum of
norm1(X) + sum_squares(X - B); x is within 1e-3 of it (hqs, in float32 at
rho = 256, within 2.7e-4: each step moves x by about 2/rho of its error,
and below float32's resolution of |x| <= 49 it stops moving)."""
import numpy as np
import pytest

from proxc import *  # noqa: F403
from proxc.algorithms import absorb_offset, admm, hqs, ladmm, pc

B = np.reshape(np.arange(50), (10, 5)) * 1.
EXACT = np.maximum(B - 0.5, 0)


def _l1_ls():
    X = Variable((10, 5))
    return X, [norm1(X), sum_squares(X, b=B)]


def test_admm_with_c_and_gamma_in_omega_after_absorb_offset():
    X = Variable((10, 5))
    quad = [sum_squares(X - B, alpha=0.1, beta=2., gamma=1, c=B)]
    quad[0] = absorb_offset(quad[0])
    # ProxImaL's absorb_offset moves the offset -B into b as b - (-B), beta left out.
    np.testing.assert_array_equal(np.asarray(quad[0].b), B)
    value = admm.solve([norm1(X)], quad, 1.0, eps_rel=1e-5, eps_abs=1e-5)
    assert value == pytest.approx(1697.5285714285712, rel=1e-6)
    # The optimum per entry of 0.1(2x - b)^2 + x^2 + |x| + bx: 2.8x + 0.6b + sign(x) = 0.
    want = np.where(0.6 * B > 1, (-0.6 * B + 1) / 2.8, np.where(0.6 * B < -1, (-0.6 * B - 1) / 2.8, 0))
    np.testing.assert_allclose(X.value, want, rtol=0, atol=1e-3)


@pytest.mark.parametrize("module, args, kwargs, want", [
    (pc, (0.5, 1.0, 1.0), {"conv_check": 1}, 1212.750000130514),
])
def test_everything_psi(module, args, kwargs, want):
    X, fns = _l1_ls()
    value = module.solve(fns, [], *args, eps_rel=1e-5, eps_abs=1e-5, **kwargs)
    assert value == pytest.approx(want, rel=1e-6)
    np.testing.assert_allclose(X.value, EXACT, rtol=0, atol=1e-3)


@pytest.mark.parametrize("module, args, kwargs, want, rel", [
    (pc, (0.5, 1.0, 1.0), {}, 1212.75, 1e-6),
    (ladmm, (0.1,), {"max_iters": 3000}, 1212.7500000009436, 1e-6),
    (hqs, (), {"max_iters": 100, "max_inner_iters": 300}, 1212.750000018286, 1e-6),
    (admm, (1.0,), {}, 1212.75, 1e-6),
])
def test_after_partition(module, args, kwargs, want, rel):
    X, fns = _l1_ls()
    psi, omega = module.partition(fns)
    # The user's own functions: the least squares is the x-update.
    assert [f is fns[0] for f in psi] == [True] and [f is fns[1] for f in omega] == [True]
    value = module.solve(psi, omega, *args, eps_rel=1e-5, eps_abs=1e-5, **kwargs)
    assert value == pytest.approx(want, rel=rel)
    np.testing.assert_allclose(X.value, EXACT, rtol=0, atol=1e-3)


def test_a_function_in_both_lists_counts_twice():
    # ProxImaL's test_algs passes pc.solve(prox_fns, [prox_fns[-1]], ...): the
    # last function is psi and omega, and so counts twice, as in ProxImaL.
    x = Variable(4)
    b = np.array([1., -2., 3., 4.])
    fns = [norm1(x), sum_squares(x, b=b)]
    with pytest.warns(UserWarning, match="counts twice"):
        value = pc.solve(fns, [fns[-1]], 0.5, 1.0, 1.0, max_iters=3000, eps_abs=1e-6, eps_rel=1e-6)
    # |x| + 2(x - b)^2: x = b - sign(b)/4.
    np.testing.assert_allclose(x.value, b - np.sign(b) / 4, rtol=0, atol=1e-3)
    assert value == pytest.approx(np.sum(np.abs(b - np.sign(b) / 4)) + 2 * 4 * (1 / 16), rel=1e-5)


def test_admm_with_a_conv_least_squares_in_omega():
    x = Variable(3)
    fns, quad = [nonneg(x)], [sum_squares(conv(np.array([1., 2., 3.]), x), b=np.array([-41., 413., 2.]))]
    value = admm.solve(fns, quad, 1.0, eps_abs=1e-5, eps_rel=1e-5)
    assert value == pytest.approx(76305.15663113727, rel=1e-6)
    np.testing.assert_allclose(x.value, [82.785927, 0, 0], rtol=0, atol=4e-3)


def test_partition_follows_the_split_pass():
    x = Variable((8, 8))
    data, tv, positive = sum_squares(conv(np.ones((3, 3)) / 9, x) - 1), norm1(grad(x)), nonneg(x)
    # grad is Gram-diagonal in neither domain: admm keeps every term psi.
    assert admm.partition([data, tv, positive]) == ([data, tv, positive], [])
    assert pc.partition([data, tv, positive]) == ([tv, positive], [data])
    assert hqs.partition([data, tv, positive]) == ([tv, positive], [data])
    # Without a least squares, pc takes a function of x itself.
    assert pc.partition([tv, positive]) == ([tv], [positive])


def test_problem_with_a_split_of_ones_own():
    rng = np.random.default_rng(3)
    b = rng.random((16, 16)).astype(np.float32)
    x = Variable((16, 16))
    data, tv, positive = sum_squares(conv(np.ones((3, 3)) / 9, x) - b), 0.01 * norm1(grad(x)), nonneg(x)
    auto = Problem([data, tv, positive])
    want = auto.solve(max_iters=3000, eps_abs=1e-7, eps_rel=1e-7, proximal_stopping=False)
    # nonneg's prox as pc's x-update: every iterate is feasible, the optimum the same.
    mine = Problem([data, tv, positive], omega_fns=[positive])
    assert mine.psi_fns == [data, tv] and mine.omega_fns == [positive]
    got = mine.solve(max_iters=3000, eps_abs=1e-7, eps_rel=1e-7, proximal_stopping=False)
    assert got == pytest.approx(want, rel=1e-4)
    assert np.isfinite(got) and x.value.min() >= 0
    # The other list is the rest; a Module compiles the split's iteration.
    same = Problem([data, tv, positive], psi_fns=[data, tv])
    assert same.omega_fns == [positive]
    assert same.compile().name


def test_an_omega_function_of_several_variables_as_proximals_test_algs_solves_it():
    # The last part of ProxImaL's test_pock_chambolle_numpy (marked TODO there):
    # omega sum_squares(vstack([x, y]), b) is solved per variable (x's part
    # and y's), the problem nonneg(x) + 2·‖[x; y] − [0, 1]‖²: x = 0, y = 1.
    for solver in (pc, ladmm, admm, hqs):
        for diagonalize in (False, True):
            x, y = Variable(1), Variable(1)
            fns = [nonneg(x), sum_squares(vstack([x, y]), b=np.arange(2))]
            kw = {"try_diagonalize": diagonalize, "max_iters": 3000, "eps_abs": 1e-5, "eps_rel": 1e-5}
            if solver is pc:
                solver.solve(fns, [fns[-1]], 0.1, 0.1, 1.0, **kw)
            else:
                solver.solve(fns, [fns[-1]], **kw)
            np.testing.assert_allclose([x.value[0], y.value[0]], [0, 1], atol=1e-3, err_msg=solver.__name__)
    # Parts of other shapes and operators, and c and d: the same optimum as the problem with all psi.
    rng = np.random.default_rng(2)
    w, b = rng.random((4, 3)) + 0.5, rng.random(4 * 3 + 5)
    objectives = []
    for omega in (True, False):
        x, y = Variable((4, 3)), Variable(5)
        data = sum_squares(vstack([mul_elemwise(w, x), 2 * y]), b=b, c=np.arange(17.0) / 17, d=3.0)
        prior = [norm1(grad(x)), norm1(y)]
        if omega:
            objectives.append(pc.solve(prior, [data], max_iters=4000, eps_abs=1e-6, eps_rel=1e-6))
        else:
            objectives.append(Problem([data] + prior).solve(max_iters=4000, eps_abs=1e-6, eps_rel=1e-6))
    assert objectives[0] == pytest.approx(objectives[1], rel=1e-4)
    # One variable twice: two least squares of x, solved together (2‖x − 1‖²).
    x = Variable(3)
    pc.solve([norm1(x)], [sum_squares(vstack([x, x]), b=1.0)], max_iters=2000, eps_abs=1e-6, eps_rel=1e-6)
    np.testing.assert_allclose(x.value, 0.75, atol=1e-4)  # argmin |x| + 2(x - 1)^2


@pytest.mark.parametrize("make, message", [
    (lambda x: pc.solve([norm1(x)], [sum_squares(grad(x))], max_iters=5),
     "in omega_fns is not solved in the x-update"),
    (lambda x: admm.solve([sum_squares(x, b=1.0)], [norm1(x)], max_iters=5),
     "norm1(shape=(8, 8), alpha=1.0) is omega, which for admm only a least_squares term can be"),
    (lambda x: Problem([norm1(x)], omega_fns=[sum_squares(x)]), "is in psi_fns or omega_fns but not in prox_fns"),
    (lambda x: (lambda f, g: Problem([f], psi_fns=[f], omega_fns=[g]))(norm1(x), sum_squares(x)),
     "is in psi_fns or omega_fns but not in prox_fns"),
    (lambda x: (lambda f, g: Problem([f, g], psi_fns=[g]))(norm1(x), sum_squares(x)).solve("admm", max_iters=5),
     "norm1(shape=(8, 8), alpha=1.0) is omega, which for admm only a least_squares term can be"),
    (lambda x: (lambda y: pc.solve([nonneg(x)], [sum_squares(x - y)], max_iters=5))(Variable((8, 8))),
     "in omega_fns is not solved in the x-update"),
    (lambda x: (lambda y: pc.solve([nonneg(y)], [sum_squares(vstack([x, y]), b=1.0), nonneg(y)], max_iters=5))(
        Variable((8, 8))), "2 omega terms of one variable that one direct solve cannot take together"),
    (lambda x: pc.solve([nonneg(x)], [sum_squares(vstack([x, grad(x)]), b=1.0)], max_iters=5),
     "in omega_fns is not solved in the x-update"),
    # After a stacked omega is split in parts, an error names the user's function, not another.
    (lambda x: (lambda y: pc.solve([norm1(x)], [sum_squares(vstack([x, y])), sum_squares(grad(x))], max_iters=5))(
        Variable(3)), "sum_squares(shape=(8, 8, 2), alpha=1.0) in omega_fns is not solved"),
    (lambda x: pc.solve([norm1(grad(x))], [sum_squares(conv(np.ones((3, 3)), x), b=1.0),
                                           sum_squares(conv(np.ones((2, 2)), x), b=1.0)], max_iters=5),
     "2 omega terms of one variable that one direct solve cannot take together"),
    (lambda x: ladmm.solve([], [sum_squares(x, b=1.0)]), "psi_fns is empty"),
    (lambda x: Problem([sum_squares(x)], omega_fns=[]).solve(max_iters=5, tau=2.0, sigma=1.0, theta=1.0),
     "steps.pc_sigma must be <= 1"),
])
def test_splits_no_solver_takes_are_value_errors(make, message):
    with pytest.raises(ValueError) as e:
        make(Variable((8, 8)))
    assert message in str(e.value)
    assert "record of passes" not in str(e.value) and "internal" not in str(e.value)
    # Said once, and in the split's words only where the message is about the split.
    assert str(e.value).count("docs/python.md") <= 1
    about_split = "must be <= 1" not in message and "is empty" not in message and "prox_fns" not in message
    assert ("psi_fns and omega_fns:" in str(e.value)) == about_split


def test_compile_of_a_split_no_solver_takes_names_the_function_once():
    x = Variable((8, 8))
    data, l1 = sum_squares(x, b=1.0), norm1(x)
    with pytest.raises(ValueError) as e:
        Problem([data, l1], psi_fns=[data]).compile("admm")
    assert str(e.value).count("psi_fns and omega_fns:") == 1
    assert "norm1(shape=(8, 8), alpha=1.0) is omega" in str(e.value)


def test_steps_the_bound_makes_too_long_are_shortened_with_a_warning():
    # ||vstack(x, x/2)|| is sqrt(1.25) = 1.118; proxc's bound N is 1 + 1/2 = 1.5. ProxImaL's rule
    # with ||K|| allows tau*sigma = 0.8; proxc's with N allows 0.444: sigma is shortened.
    x = Variable(4)
    b = np.array([1., -2., 3., 4.])
    with pytest.warns(UserWarning, match="is above 1/N"):
        pc.solve([sum_squares(x - b), norm1(0.5 * x)], [], 0.8, 1.0, 1.0, max_iters=2000, eps_abs=1e-6, eps_rel=1e-6)
    # (x - b)^2 + |x|/2: x = b - sign(b)/4.
    np.testing.assert_allclose(x.value, b - np.sign(b) / 4, rtol=0, atol=1e-3)
    with pytest.warns(UserWarning, match="quad_funcs is ignored"):
        ladmm.solve([sum_squares(x - b), norm1(0.5 * x)], [], quad_funcs=[sum_squares(x)], max_iters=2000)
    np.testing.assert_allclose(x.value, b - np.sign(b) / 4, rtol=0, atol=1e-2)


def test_pc_with_scaled_false_takes_proximals_estimate():
    # ProxImaL's pc.solve(scaled=False): sigma = 1, tau = 1/||K||^2 in K's units.
    x = Variable(4)
    b = np.array([1., -2., 3., 4.])
    value = pc.solve([sum_squares(conv(np.array([1., 2., 3.]), x) - b), norm1(x)], [], scaled=False, max_iters=3000,
                     eps_abs=1e-7, eps_rel=1e-7)
    auto = Problem([sum_squares(conv(np.array([1., 2., 3.]), x) - b), norm1(x)]).solve(
        max_iters=3000, eps_abs=1e-7, eps_rel=1e-7, proximal_stopping=False)
    assert value == pytest.approx(auto, rel=1e-4)


def test_a_split_of_ones_own_honours_absorb_false():
    # absorb=False leaves scalings in K (ProxImaL's absorb=False) with a split of one's own
    # too; offsets still move into b. The optimum is the same: per entry (x - v)² + 3|x| is
    # least at x = max(v - 1.5, 0), where it is v² for v <= 1.5 and 3v - 2.25 above.
    b = np.arange(12.0).reshape(3, 4)
    want = float(np.sum([v * v if v <= 1.5 else 3 * v - 2.25 for v in b.flat]))
    for absorb, operand in ((True, "psi(norm1(x, beta=3))"), (False, "psi(norm1(3 * x))")):
        x = Variable((3, 4))
        data, prior = sum_squares(x - b), norm1(3 * x)
        prob = Problem([data, prior], omega_fns=[data], absorb=absorb)
        text = prob._split_native("ladmm").print("text", "", False)
        assert "omega(least_squares(x, b=" in text and operand in text, text
        assert prob.solve(solver="ladmm", eps_abs=1e-6, eps_rel=1e-6, max_iters=3000) == pytest.approx(want, rel=1e-5)

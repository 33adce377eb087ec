"""Prox functions written in Python: proxc.register_prox_fn (a plug-and-play
prior or a projection of the user's) and ProxImaL's diff_fn (a smooth
function and its gradient, its prox by L-BFGS-B). Solved with them, on the
compiled pipelines and the emulator, a problem reaches the optimum of the
same problem written with proxc's own functions; a failing callback stops
the solve with an error that quotes it, and a Ctrl-C inside one with
KeyboardInterrupt."""
import numpy as np
import pytest

import proxc
from proxc import *  # noqa: F403  (ProxImaL's names)

scipy = pytest.importorskip("scipy")  # diff_fn's L-BFGS-B (the test venv has it: scripts/test.sh)

RNG = np.random.default_rng(3)
B = RNG.standard_normal((24, 20)).astype(np.float32)
KERNEL = np.ones((3, 3), np.float32) / 9


def _soft(v, rho, t=1.0):
    return np.sign(v) * np.maximum(np.abs(v) - t / rho, 0)


proxc.register_prox_fn("py_soft_threshold", _soft, lambda x, t=1.0: t * float(np.abs(x).sum()), t=1.0)


def _solve(fns, backend, solver="pc"):
    x = fns[0].variables()[0]
    objective = Problem(fns).solve(solver=solver, backend=backend, max_iters=400, eps_abs=1e-7, eps_rel=1e-7)
    return objective, x.value.copy()


@pytest.mark.parametrize("backend", ["halide", "emulate"])
@pytest.mark.parametrize("solver", ["pc", "ladmm"])
def test_a_python_prox_reaches_the_builtin_optimum(backend, solver):
    x = Variable(B.shape)
    mine = [sum_squares(conv(KERNEL, x) - B), prox_fn("py_soft_threshold", x, t=0.3)]
    theirs = [sum_squares(conv(KERNEL, x) - B), 0.3 * norm1(x)]
    got, x_got = _solve(mine, backend, solver)
    want, x_want = _solve(theirs, backend, solver)
    # The same iterates up to float32 rounding of the two proxes: the
    # objective (the value callback included) and x agree.
    assert got == pytest.approx(want, rel=1e-5)
    np.testing.assert_allclose(x_got, x_want, atol=1e-4)


def test_parameters_and_function_parameters_apply():
    x = Variable(10)
    v = np.arange(10) * 1.0 - 5.0
    # alpha * f(beta * x - b) with f = t |.|: the prox of 2 * 0.5|3x - 1|.
    fn = prox_fn("py_soft_threshold", x, alpha=2.0, beta=3.0, b=1.0, t=0.5)
    want = norm1(x, alpha=1.0, beta=3.0, b=1.0).prox(1.0, v.copy())
    np.testing.assert_allclose(fn.prox(1.0, v.copy()), want, atol=1e-6)
    x.value = v
    assert fn.value == pytest.approx(2 * 0.5 * np.abs(3 * v - 1).sum(), rel=1e-6)


def test_a_name_registered_again_takes_the_new_callables():
    x = Variable(6)
    v = np.arange(6) * 1.0 - 3.0
    proxc.register_prox_fn("py_rerun", lambda v, rho: v, lambda x: 0.0)
    np.testing.assert_allclose(prox_fn("py_rerun", x).prox(1.0, v.copy()), v)
    # The notebook cell run again, with a fix: the same declaration takes it.
    proxc.register_prox_fn("py_rerun", lambda v, rho: np.maximum(v, 0), lambda x: 0.0)
    np.testing.assert_allclose(prox_fn("py_rerun", x).prox(1.0, v.copy()), np.maximum(v, 0))
    with pytest.raises(ValueError, match="again with other parameters"):
        proxc.register_prox_fn("py_rerun", lambda v, rho, t=1.0: v, t=1.0)
    with pytest.raises(ValueError, match="again with other parameters"):
        proxc.register_prox_fn("py_rerun", lambda v, rho: v)  # no value callback now


def test_diff_fn_as_proximal():
    # ProxImaL's tests/test_prox_fn.py, test_diff_fn: the prox of ||x||^2.
    x = Variable(10)
    fn = diff_fn(x, lambda u: np.square(u).sum(), lambda u: 2 * u)
    v = np.arange(10) * 1.0 - 5.0
    np.testing.assert_allclose(fn.prox(1, v.copy()), v / 3, atol=1e-5)
    # One registration per diff_fn: its copies (fn.prox makes one) share it.
    assert fn._registered and fn.copy(alpha=2.0)._registered == fn._registered
    # With bounds: the prox of ||x||^2 on [0, 1] is the clipped one.
    fn = diff_fn(x, lambda u: np.square(u).sum(), lambda u: 2 * u, bounds=[(0, 1)] * 10)
    np.testing.assert_allclose(fn.prox(1, v.copy()), np.clip(v / 3, 0, 1), atol=1e-5)


@pytest.mark.parametrize("backend", ["halide", "emulate"])
def test_a_diff_fn_solve_reaches_the_optimum(backend):
    # minimize sum log cosh(x - 1) + ||x - b||^2: per entry tanh(x - 1) + 2 (x - b) = 0.
    x = Variable((12, 10))
    b = RNG.standard_normal((12, 10)).astype(np.float32)
    smooth = diff_fn(x, lambda u: float(np.log(np.cosh(u - 1)).sum()), lambda u: np.tanh(u - 1))
    objective = Problem([smooth, sum_squares(x - b)]).solve(solver="pc", backend=backend, max_iters=500,
                                                            eps_abs=1e-7, eps_rel=1e-7)
    want = b.astype(np.float64)
    for _ in range(50):  # Newton per entry
        want -= (np.tanh(want - 1) + 2 * (want - b)) / (1 - np.tanh(want - 1) ** 2 + 2)
    np.testing.assert_allclose(x.value, want, atol=1e-3)
    assert objective == pytest.approx(np.log(np.cosh(want - 1)).sum() + np.square(want - b).sum(), rel=1e-5)


@pytest.mark.parametrize("backend", ["halide", "emulate"])
def test_a_failing_callback_stops_the_solve_and_says_why(backend):
    def broken(v, rho):
        raise RuntimeError("the denoiser's model file is missing")

    def wrong_shape(v, rho):
        return v.ravel()[:-1]

    def not_finite(v, rho):
        return np.full_like(v, np.inf)

    proxc.register_prox_fn(f"py_broken_{backend}", broken)
    proxc.register_prox_fn(f"py_wrong_shape_{backend}", wrong_shape)
    proxc.register_prox_fn(f"py_not_finite_{backend}", not_finite)
    x = Variable((8, 8))
    for name, said in ((f"py_broken_{backend}", "RuntimeError: the denoiser's model file is missing"),
                       (f"py_wrong_shape_{backend}", "shape (63,) for an operand of shape (8, 8)"),
                       (f"py_not_finite_{backend}", "prox returned")):
        with pytest.raises(ValueError) as e:
            Problem([sum_squares(x - B[:8, :8]), prox_fn(name, x)]).solve(backend=backend, max_iters=5)
        assert name in str(e.value) and said in str(e.value), str(e.value)


def test_registration_is_checked():
    with pytest.raises(ValueError, match="again with other parameters"):
        proxc.register_prox_fn("py_soft_threshold", _soft)  # no value callback, no parameter t
    with pytest.raises(ValueError, match="not a name"):
        proxc.register_prox_fn("2fast", _soft)
    with pytest.raises(ValueError, match="a name the language reserves"):
        proxc.register_prox_fn("norm1", _soft)
    with pytest.raises(ValueError, match="bad parameters"):
        proxc.register_prox_fn("py_reserved", _soft, alpha=1.0)
    with pytest.raises(ValueError, match="the default of t must be a number"):
        proxc.register_prox_fn("py_bad_default", _soft, t="x")
    with pytest.raises(TypeError, match="must be callables"):
        proxc.register_prox_fn("py_not_callable", 3)
    with pytest.raises(TypeError, match="diff_fn: func and fprime must be callables"):
        diff_fn(Variable(3), None, None)


def test_ctrl_c_inside_a_python_prox_raises_keyboard_interrupt(interrupted_child):
    # The emulator calls the prox on the solving thread, where Python raises the
    # KeyboardInterrupt inside the callback (in its sleep); the solve ends with it.
    code = (
        "import sys, time\n"
        "import numpy as np\n"
        "import proxc\n"
        "from proxc import *\n"
        "inside = []\n"
        "def slow(v, rho):\n"
        "    try:\n"
        "        time.sleep(0.2)\n"
        "    except KeyboardInterrupt:\n"
        "        inside.append(True)\n"
        "        raise\n"
        "    return np.maximum(v, 0)\n"
        "proxc.register_prox_fn('py_slow_nonneg', slow, lambda x: 0.0)\n"
        "b = np.random.default_rng(0).random((16, 16)).astype(np.float32)\n"
        "x = Variable(b.shape)\n"
        "p = Problem([sum_squares(x - b), proxc.prox_fn('py_slow_nonneg', x)])\n"
        "print('solving', flush=True)\n"
        "try:\n"
        "    p.solve(backend='emulate', max_iters=10**6, eps_abs=0, eps_rel=0, conv_check=10**6)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted inside the prox:', bool(inside), flush=True)\n"
        "    sys.exit(7)\n"
    )
    returncode, output = interrupted_child(code, 1.0)
    assert returncode == 7, output
    assert "interrupted inside the prox: True" in output, output


@pytest.mark.parametrize("backend", ["emulate", "halide"])
def test_a_keyboard_interrupt_in_a_callback_ends_the_solve_as_keyboard_interrupt(backend):
    # What a Ctrl-C inside the callback raises; any other exception stays a ValueError that quotes it.
    def interrupted(*args):
        raise KeyboardInterrupt()

    proxc.register_prox_fn("py_interrupted", interrupted, lambda x: 0.0)
    x = Variable(B.shape)
    with pytest.raises(KeyboardInterrupt):
        Problem([sum_squares(x - B), proxc.prox_fn("py_interrupted", x)]).solve(backend=backend, max_iters=5)
    op = proxc.LinOpFactory(B.shape, B.shape, interrupted, interrupted, norm_bound=1.0)
    with pytest.raises(KeyboardInterrupt):
        Problem(sum_squares(op(x) - B) + 0.1 * norm1(grad(x))).solve(backend=backend, max_iters=5)
    # The next solve is not affected.
    Problem(sum_squares(x - B) + 0.1 * norm1(grad(x))).solve(backend=backend, max_iters=5)

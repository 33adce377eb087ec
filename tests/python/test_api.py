"""What the Python package adds to ProxImaL's API, and its promises: NumPy in
and out (results without a copy), the GIL released while solving, no
recompilation for new data, callbacks that stop, the convergence history,
Module, load and the printed forms, errors as ValueError."""
import math
import os
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import proxc
from proxc import (Constant, Problem, Variable, conv, grad, group_norm1, mul_elemwise, nonneg, norm1,
                   sum_squares, vstack, warp)


def _data(shape=(40, 48), seed=0):
    rng = np.random.default_rng(seed)
    clean = np.zeros(shape, np.float32)
    clean[10:30, 12:36] = 0.8
    return (clean + 0.1 * rng.standard_normal(shape)).astype(np.float32)


def _tv(b):
    x = Variable(b.shape)
    return x, Problem(sum_squares(x - b) + 0.1 * group_norm1(grad(x), [2]) + nonneg(x))


def test_numpy_constants_on_either_side():
    b = _data()
    x = Variable(b.shape)
    w = np.linspace(0.5, 1.5, b.size, dtype=np.float32).reshape(b.shape)
    exprs = [x - b, b - x, 1 + x, x + 1.0, -(x - b), 0.5 * (x - b), (x - b) / 2, x * w, w * x, mul_elemwise(w, x)]
    for e in exprs:
        assert e.shape == b.shape
        assert e.variables() == [x]
    # float64 and integer data are taken (as float32).
    Problem(sum_squares(x - b.astype(np.float64)) + norm1(grad(x))).solve(max_iters=5)
    assert x.value.dtype == np.float32 and x.value.shape == b.shape


def test_user_errors_are_value_errors_with_shapes():
    x = Variable((16, 24))
    with pytest.raises(ValueError, match=r"\(16, 24\).*\(5, 5\)|\(5, 5\).*\(16, 24\)"):
        x - np.zeros((5, 5))
    with pytest.raises(ValueError, match="mul_elemwise"):
        mul_elemwise(np.ones((3, 3)), x)
    with pytest.raises(ValueError, match="alpha"):
        sum_squares(x, alpha=-1)
    with pytest.raises(ValueError, match="NaN"):
        sum_squares(x - np.full((16, 24), np.nan))
    with pytest.raises(ValueError, match="unknown solver 'fista'"):
        Problem(sum_squares(x)).solve(solver="fista")
    with pytest.raises(TypeError, match="rho.*another solver's"):
        Problem(sum_squares(x) + norm1(grad(x))).solve(solver="pc", rho=2)
    with pytest.raises(ValueError, match="max_iters|--iters"):
        Problem(sum_squares(x) + norm1(grad(x))).solve(max_iters=0)
    with pytest.raises(ValueError, match="no such file|cannot|not found|No such"):
        proxc.load("no/such/problem.prox")


def test_bad_step_sizes_and_starts_are_value_errors():
    # Each was taken before: clamped (lmb), taken as left out (sigma=0, a
    # NaN tau), or, for hqs's continuation, an endless loop counting levels.
    b = np.random.default_rng(0).random((32, 32)).astype(np.float32)
    x = Variable((32, 32))
    prob = lambda: Problem(sum_squares(x - b) + 0.1 * norm1(grad(x)))
    for kw, msg in [(dict(solver="hqs", rho_0=-1.0), "rho_0 must be a finite number > 0"),
                    (dict(solver="hqs", rho_0=0.0), "rho_0"),
                    (dict(solver="hqs", rho_scale=0.5), "rho_scale must be a finite number > 1"),
                    (dict(solver="hqs", rho_scale=1.0), "rho_scale"),
                    (dict(solver="ladmm", lmb=-1), "lmb"), (dict(solver="ladmm", lmb=0), "lmb"),
                    (dict(sigma=0), "sigma"), (dict(tau=float("nan")), "tau"), (dict(tau=-1), "tau"),
                    (dict(solver="hqs", max_inner_iters=-1), "max_inner_iters must be >= 1, got -1"),
                    (dict(solver="hqs", max_iters=-5), "max_iters must be >= 1, or -1 for every level"),
                    (dict(x0=np.full((32, 32), np.nan, np.float32)), "x0: the start of .* non-finite")]:
        with pytest.raises(ValueError, match=msg):
            prob().solve(**kw)
    # A Problem of something that is no function, and group axes as one int.
    with pytest.raises(TypeError, match="Problem: expected proximal functions .* got Variable"):
        Problem(x)
    assert group_norm1(grad(x), 2).group_dims == [2]
    # Counts are integers (10.5 was truncated, "10" parsed, 2**40 a raw binding error), and
    # shapes too (Variable("abc") was a shape of three letters' error, (3.5, 4) truncated).
    for kw, msg in [(dict(max_iters=10.5), "max_iters must be an integer, got 10.5"),
                    (dict(max_iters="10"), "max_iters must be an integer, got '10'"),
                    (dict(conv_check=True), "conv_check must be an integer"),
                    (dict(solver="hqs", max_inner_iters=2.5), "max_inner_iters must be an integer"),
                    (dict(solver="admm", lin_solver_options={"maxiter": 5.5}), "maxiter must be an integer")]:
        with pytest.raises(TypeError, match=msg):
            prob().solve(**kw)
    with pytest.raises(ValueError, match=r"max_iters must be below 2\*\*31, got 1099511627776"):
        prob().solve(max_iters=2**40)
    for shape in ["abc", (3.5, 4), None, (True, 2)]:
        with pytest.raises(TypeError, match="Variable: the shape must be an int or a tuple of ints"):
            Variable(shape)
    assert Variable(np.int64(5)).shape == (5,) and Variable([np.int32(3), 4]).shape == (3, 4)
    # The edges that are valid still run.
    prob().solve(max_iters=np.int64(5))
    prob().solve(max_iters=5, conv_check=100.0)
    prob().solve(solver="hqs", max_iters=-1, max_inner_iters=5)
    prob().solve(tau=1.0, sigma=1.0, theta=0.0, max_iters=5)
    prob().solve(solver="ladmm", lmb=0.5, max_iters=5)


def test_value_of_a_constant_expression():
    # ProxImaL's .value of an expression without a variable (an internal
    # error before: the emulator met the folded constant in a linear order).
    e = np.arange(64, dtype=np.float32).reshape(8, 8)
    np.testing.assert_array_equal((proxc.Constant(e) - e).value, np.zeros((8, 8), np.float32))
    g = grad(proxc.Constant(e)).value
    assert g.shape == (8, 8, 2)
    np.testing.assert_allclose(g[:7, :, 0], np.diff(e, axis=0))  # forward differences, zero at the far border
    np.testing.assert_array_equal(g[7, :, 0], 0)
    c = conv(np.ones((3, 3), np.float32), proxc.Constant(e)).value  # circular: every entry counted 9 times
    assert c.shape == (8, 8) and abs(float(c.sum()) - 9 * float(e.sum())) < 1e-3 * float(e.sum())


def test_zero_copy_results_and_inputs():
    b = _data()
    x, prob = _tv(b)
    prob.solve(max_iters=20)
    v = x.value
    # The result is proxc's array handed over, not a copy NumPy made.
    assert not v.flags.owndata and v.base is not None and v.flags.c_contiguous and v.flags.writeable
    # A float32, C-ordered input is taken as it is on the Python side: one
    # copy in all, into the problem's own storage (proxc's constants are values).
    c = Constant(b)
    assert c.value is b or np.shares_memory(c.value, b)


def test_new_data_does_not_recompile():
    b = _data(seed=1)
    c = Constant(b)
    x = Variable(b.shape)
    prob = Problem(sum_squares(x - c) + 0.1 * group_norm1(grad(x), [2]) + nonneg(x))
    prob.solve(max_iters=50, eps_abs=0, eps_rel=0)
    first_at_max0 = prob.summary.objective_at_projection
    for seed in (2, 3):
        frame = _data(seed=seed)
        c.value = frame  # the next frame of a video
        prob.solve(max_iters=50, eps_abs=0, eps_rel=0)
        assert prob.summary.pipelines_compiled == 0 and prob.summary.pipelines_loaded == 0
        # ... and solves the new data: the same as a problem built on it.
        y, alone = _tv(frame)
        alone.solve(max_iters=50, eps_abs=0, eps_rel=0)
        assert alone.summary.pipelines_compiled == 0
        # (After 50 iterations x dips below -1e-3, where nonneg's value is
        # +inf, as in ProxImaL; compare at max(x, 0).)
        at_max0 = prob.summary.objective_at_projection
        assert alone.summary.objective_at_projection == pytest.approx(at_max0, rel=1e-6)
        np.testing.assert_allclose(x.value, y.value, atol=1e-6)
    assert prob.summary.objective_at_projection != first_at_max0
    with pytest.raises(ValueError, match="shape"):
        c.value = np.zeros((3, 3), np.float32)


def test_solve_batch_solves_each_data_set_as_alone():
    frames = [_data(seed=s) for s in (4, 5, 6)]
    c = Constant(frames[0], name="frame")
    x = Variable(frames[0].shape)
    prob = Problem(sum_squares(x - c) + 0.1 * group_norm1(grad(x), [2]) + nonneg(x))
    results = prob.solve_batch([{c: frames[0]}, {c: frames[1]}, {"frame": frames[2]}],
                               max_iters=40, eps_abs=0, eps_rel=0)
    assert len(results) == 3 and len(prob.summaries) == 3
    assert all(s.pipelines_compiled == 0 for s in prob.summaries[1:])
    for frame, result in zip(frames, results):
        y, alone = _tv(frame)
        alone.solve(max_iters=40, eps_abs=0, eps_rel=0)
        np.testing.assert_allclose(result[x], y.value, atol=1e-6)
    assert results[0][x] is not results[1][x] and not np.shares_memory(results[2][x], x.value)
    with pytest.raises(ValueError, match="data set 1: no constant named 'nope'"):
        prob.solve_batch([{c: frames[0]}, {"nope": frames[1]}], max_iters=5)
    with pytest.raises(ValueError, match="data set 0: .*shape"):
        prob.solve_batch([{c: np.zeros((3, 3), np.float32)}], max_iters=5)


def test_adaptive_steps_reach_the_fixed_steps_optimum():
    """adaptive=True (pc, ladmm, admm) goes with proxc's own rule and its
    defaults, reports the steps it ended with, and reaches the optimum a long
    fixed-step solve reaches; hqs refuses it."""
    b = _data()
    x, prob = _tv(b)
    optimum = prob.solve(max_iters=4000, eps_abs=0, eps_rel=0)
    steps = {"pc": {"pc_tau", "pc_sigma"}, "admm": {"admm_rho"}, "ladmm": {"ladmm_lambda"}}
    for solver in ("pc", "admm", "ladmm"):
        value = prob.solve(solver=solver, adaptive=True, max_iters=3000, eps_abs=1e-7, eps_rel=1e-7)
        assert value == pytest.approx(optimum, rel=1e-4), solver
        assert prob.summary.step_changes > 0
        assert set(prob.summary.adapted_steps) == steps[solver]
    with pytest.raises(ValueError, match="pc, ladmm and admm adapt their step sizes, not hqs"):
        prob.solve(solver="hqs", adaptive=True)
    # Left out: pc and ladmm adapt under proxc's rule, keep ProxImaL's steps under ProxImaL's.
    prob.solve(solver="ladmm", proximal_stopping=False)
    assert set(prob.summary.adapted_steps) == {"ladmm_lambda"}
    prob.solve(solver="ladmm")
    assert not prob.summary.adapted_steps
    prob.solve(proximal_stopping=False)
    assert set(prob.summary.adapted_steps) == {"pc_tau", "pc_sigma"}
    adaptive_iterations = prob.summary.iterations
    prob.solve(proximal_stopping=False, adaptive=False)
    assert not prob.summary.adapted_steps and prob.summary.iterations > adaptive_iterations
    prob.solve()
    assert not prob.summary.adapted_steps


def test_a_stop_by_the_absolute_tolerance_alone_is_warned():
    """The TV problem in units of 1e-3 (data and weight scaled) passes the
    absolute tolerance while its iterates still move: the solve says so with
    a RuntimeWarning (and summary.warnings), under ProxImaL's rule and
    proxc's, and stops further from the optimum than the same problem in its
    own units. With eps_abs as the warning advises there is none."""
    b = _data()
    x = Variable(b.shape)
    milli = Problem(sum_squares(x - 1e-3 * b) + 1e-4 * group_norm1(grad(x), [2]) + nonneg(x))
    _, unscaled = _tv(b)
    optimum = unscaled.solve(max_iters=4000, eps_abs=0, eps_rel=0)
    for proximal in (True, False):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            short_of = unscaled.solve(proximal_stopping=proximal) / optimum - 1
        assert unscaled.summary.termination == "converged" and not unscaled.summary.warnings
        with pytest.warns(RuntimeWarning, match="converged by the absolute tolerance alone") as caught:
            milli_short_of = milli.solve(proximal_stopping=proximal) * 1e6 / optimum - 1
        assert milli.summary.termination == "converged"
        assert milli.summary.iterations < unscaled.summary.iterations
        assert milli_short_of > 2 * short_of > 0, proximal
        (w,) = milli.summary.warnings
        assert w in str(caught[0].message)
    advised = float(w.split("set eps_abs to ")[1].split()[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = milli.solve(proximal_stopping=False, eps_abs=advised)
    assert milli.summary.termination == "converged" and not milli.summary.warnings
    assert value * 1e6 / optimum - 1 < 2 * short_of


def test_an_opencl_target_runs_the_gpu_schedule():
    """target="host-opencl" runs proxc's GPU schedule: on this machine on the
    CPU, through PoCL (scripts/install-deps.sh installs it; without an OpenCL
    platform the solve falls back to the CPU and this test fails). The iterate
    is the CPU schedule's within 1e-4 of its range."""
    b = _data()
    x, prob = _tv(b)
    prob.solve(max_iters=50, eps_abs=0, eps_rel=0, adaptive=False)
    cpu = np.array(x.value, copy=True)
    prob.solve(max_iters=50, eps_abs=0, eps_rel=0, adaptive=False, target="host-opencl")
    assert prob.summary.target_requested == "host-opencl"
    assert "opencl" in prob.summary.target_used
    assert prob.summary.target_fft == "none"  # TV has no FFT stages
    assert np.max(np.abs(x.value - cpu)) <= 1e-4 * (cpu.max() - cpu.min())
    assert cpu.max() - cpu.min() > 0.5


def test_the_package_finds_halides_files_at_run_time():
    """The autoscheduler plugins and the headers and library a printed
    generator builds with are found beside the libHalide the package loads
    (the `halide` package), and proxc's own headers in the package: the
    paths of pip's build environment and of the source tree a wheel was
    built from, which the build saw, are gone."""
    b = _data()
    x, prob = _tv(b)
    prob.solve(max_iters=5, schedule="mullapudi2016")
    assert prob.summary.schedule_used == "mullapudi2016"
    src = prob.compile().source()
    build = [line.split() for line in src.splitlines()[:8] if "-Wl,-rpath," in line or " -I " in line]
    paths = [w.split(",")[-1] for words in build for w in words if w.startswith("/") or w.startswith("-Wl,-rpath,/")]
    assert len(paths) >= 5, build  # proxc's two include folders, Halide's, its library and its folder
    for path in paths:
        assert os.path.exists(path), path
    includes = [words[i + 1] for words in build for i, w in enumerate(words) if w == "-I"]
    assert any(os.path.exists(os.path.join(d, "proxc", "halide_ops.h")) for d in includes), includes
    assert any(os.path.exists(os.path.join(d, "proxc", "black_box.h")) for d in includes), includes
    if os.path.exists(os.path.join(os.path.dirname(proxc.__file__), "include")):
        # An installed package (a wheel) names its own copies, not the tree it was built from.
        assert all(d.startswith(os.path.dirname(proxc.__file__)) for d in includes[:2]), includes


def test_callback_sees_the_iterate_and_stops_the_solve():
    b = _data()
    x, prob = _tv(b)
    seen = []

    def callback(iteration, xv):
        seen.append((iteration, xv.copy()))
        return iteration < 30

    prob.solve(callback=callback, conv_check=10, eps_abs=0, eps_rel=0, max_iters=1000)
    # (pc checks where ProxImaL's does: after iterations 11, 21, ...)
    assert [i for i, _ in seen] == [11, 21, 31]
    assert prob.summary.termination == "user_stop" and prob.summary.iterations == 31
    np.testing.assert_array_equal(seen[-1][1], x.value)  # the iterate in the user's units
    # ProxImaL's form: callback(x) with the variables flattened.
    flat = []
    prob.solve(callback=lambda v: flat.append(v.shape), max_iters=20, conv_check=10, eps_abs=0, eps_rel=0)
    assert flat == [(b.size,), (b.size,)]
    # An exception in the callback ends the solve and reaches the caller.
    with pytest.raises(ZeroDivisionError):
        prob.solve(callback=lambda i, v: 1 / 0, max_iters=100, conv_check=10)


def test_history_and_plot(tmp_path):
    b = _data()
    x, prob = _tv(b)
    prob.solve(max_iters=60, conv_check=10, eps_abs=0, eps_rel=0, history=True)
    h = prob.history
    assert [r["iteration"] for r in h] == [11, 21, 31, 41, 51, 60]
    assert all(set(r) >= {"r", "s", "eps_pri", "eps_dual", "objective"} for r in h)
    assert all(math.isfinite(r["objective"]) for r in h)
    # (nonneg: at max(x, 0), as the summary's objective_at_projection)
    assert h[-1]["objective"] == pytest.approx(prob.summary.objective_at_projection, rel=1e-9)
    assert h[0]["objective"] > h[-1]["objective"]
    pytest.importorskip("matplotlib")
    out = tmp_path / "convergence.png"
    fig = proxc.plot_convergence(h, out)
    assert out.stat().st_size > 1000 and len(fig.axes) == 2
    # Without history=True the residuals are there, the objective is not.
    prob.solve(max_iters=20, conv_check=10)
    assert math.isnan(prob.history[0]["objective"]) and prob.history[0]["r"] > 0


def test_the_gil_is_released_while_solving():
    b = _data((256, 256))
    x, prob = _tv(b)
    prob.solve(max_iters=2)  # compile first
    ticks, done = [0], threading.Event()

    def solve():
        prob.solve(max_iters=600, eps_abs=0, eps_rel=0, conv_check=600)
        done.set()

    t = threading.Thread(target=solve)
    start = time.perf_counter()
    t.start()
    while not done.is_set():
        ticks[0] += 1
        time.sleep(0.001)
    t.join()
    elapsed = time.perf_counter() - start
    # Python ran beside the solve: with the GIL held there would be no tick
    # until it ended.
    assert elapsed > 0.02 and ticks[0] >= 5, (elapsed, ticks[0])


# hqs's eps_rel=1e-5 beside ProxImaL's eps_abs=1e-3: a stop eps_rel did not
# decide, which is warned (test_a_stop_by_the_absolute_tolerance_alone_is_warned).
@pytest.mark.filterwarnings("ignore:Problem.solve. converged by the absolute tolerance alone")
def test_solvers_and_their_keywords():
    b = _data()
    results = {}
    for solver, kw in (("pc", dict(tau=0.5, sigma=2.0, theta=1.0)), ("ladmm", dict(lmb=1.0, mu=0.5)),
                       ("admm", dict(rho=2.0)), ("hqs", dict(rho_0=1.0, rho_scale=4.0, rho_max=256,
                                                            max_inner_iters=200, eps_rel=1e-5)),
                       ("half_quadratic_splitting", {}), ("linearized_admm", {}), ("pock_chambolle", {})):
        x, prob = _tv(b)
        prob.solve(solver=solver, **kw)
        results[solver] = prob.summary.objective_at_projection  # (the value itself is +inf below -1e-3)
        assert x.value.shape == b.shape
    ref = results["pc"]
    for solver, v in results.items():
        assert v == pytest.approx(ref, rel=2e-2), (solver, v, ref)
    # Problem(solver=...) and set_solver, as in ProxImaL.
    x = Variable(b.shape)
    prob = Problem(sum_squares(x - b) + norm1(grad(x)), solver="ladmm")
    prob.solve(max_iters=40)
    assert prob.summary.solver == "ladmm"
    prob.set_solver("admm")
    prob.solve(max_iters=40)
    assert prob.summary.solver == "admm"


def test_absorb_false_still_absorbs_offsets():
    # ProxImaL's Problem.solve absorbs every offset whatever absorb says (absorb_offset),
    # so sum_squares(x - b) and sum_squares(-2 * x - b) solve with absorb=False too.
    b = _data((16, 12))
    for absorb in (True, False):
        x = Variable(b.shape)
        prob = Problem([sum_squares(x - b), 0.1 * norm1(grad(x))], absorb=absorb)
        prob.solve(solver="pc", max_iters=2000, eps_abs=1e-7, eps_rel=1e-7)
        assert prob.summary.objective == pytest.approx(_tv_objective_reference(b), rel=1e-4), absorb
        y = Variable(b.shape)
        prob = Problem(sum_squares(-2 * y - b))
        prob.set_absorb(absorb)
        prob.solve(solver="ladmm", max_iters=2000, eps_abs=1e-7, eps_rel=1e-7)
        np.testing.assert_allclose(y.value, -b / 2, atol=1e-4)


def test_a_lone_function_is_minimised_by_every_solver():
    # One function: its operand is K (ProxImaL solves a lone function as psi_fns), so
    # ladmm's residuals see its iterates; before, ladmm stopped after one iteration at
    # a prox step, "converged". ProxImaL's test_lin_admm_single_prox_fn, through Problem.
    B = np.reshape(np.arange(50), (10, 5)).astype(np.float32)
    for solver in ("pc", "ladmm", "admm", "hqs"):
        x = Variable(5)
        prob = Problem(sum_squares(mul_elemwise(np.full(5, 2.0), x) - np.arange(5.0)))
        assert prob.solve(solver=solver) == pytest.approx(0, abs=1e-6), solver
        np.testing.assert_allclose(x.value, np.arange(5.0) / 2, atol=1e-3, err_msg=solver)
        X = Variable((10, 5))
        kw = dict(lmb=0.1) if solver == "ladmm" else {}
        Problem(sum_squares(X, b=B)).solve(solver=solver, max_iters=500, eps_rel=1e-5, eps_abs=1e-5, **kw)
        np.testing.assert_allclose(X.value, B, atol=2e-2, err_msg=solver)
        Problem(norm1(X, b=B, beta=2)).solve(solver=solver, max_iters=500, eps_rel=1e-5, eps_abs=1e-5, **kw)
        np.testing.assert_allclose(X.value, B / 2, atol=2e-2, err_msg=solver)


_TV_REFERENCE = {}


def _tv_objective_reference(b):
    # The optimum of sum_squares(x - b) + 0.1 * norm1(grad(x)), by a long admm solve.
    key = b.tobytes()
    if key not in _TV_REFERENCE:
        x = Variable(b.shape)
        prob = Problem(sum_squares(x - b) + 0.1 * norm1(grad(x)))
        prob.solve(solver="admm", max_iters=5000, eps_abs=1e-9, eps_rel=1e-9)
        _TV_REFERENCE[key] = prob.summary.objective
    return _TV_REFERENCE[key]


def test_x0_and_initval():
    b = _data()
    x, prob = _tv(b)
    prob.solve(max_iters=300)
    good = x.value.copy()
    prob.solve(max_iters=10, eps_abs=0, eps_rel=0)
    cold = x.value.copy()
    starts = []
    x.initval = good
    prob.solve(max_iters=10, eps_abs=0, eps_rel=0)
    starts.append(x.value.copy())
    x.initval = None
    for x0 in (good, {x: good}, {"x": good}, good.ravel()):  # ProxImaL's flat vector too
        prob.solve(x0=x0, max_iters=10, eps_abs=0, eps_rel=0)
        starts.append(x.value.copy())
    for s in starts[1:]:
        np.testing.assert_array_equal(s, starts[0])
    assert np.abs(starts[0] - cold).max() > 1e-3  # the start was honoured
    with pytest.raises(ValueError, match="x0"):
        prob.solve(x0=np.zeros(7), max_iters=10)
    with pytest.raises(ValueError, match="no variable named 'y'"):
        prob.solve(x0={"y": good}, max_iters=10)


def test_two_variables():
    b = _data((24, 24))
    x, y = Variable(b.shape), Variable(b.shape)
    prob = Problem(sum_squares(x + y - b) + norm1(grad(x)) + 0.5 * sum_squares(y))
    prob.solve(max_iters=300)
    assert x.value.shape == y.value.shape == b.shape
    assert np.abs(x.value + y.value).max() > 0
    assert vstack([x, y]).shape == (2 * b.size,)


def test_verbose_prints_checks(capfd):
    b = _data()
    x, prob = _tv(b)
    prob.solve(verbose=1, max_iters=300, eps_abs=0, eps_rel=0)
    out = capfd.readouterr().out
    # ProxImaL's lines: its iteration index, from 0 (the check after 101 iterations is "iter 100").
    assert "iter 100: ||r||_2 = " in out and "iter 200:" in out


def test_printed_forms_load_back_from_another_folder(tmp_path):
    b = _data()
    x, prob = _tv(b)
    expected = prob.solve(max_iters=50, eps_abs=0, eps_rel=0)
    assert prob.print("text").startswith("x = variable(40, 48)")
    assert "\\min" in prob._repr_latex_()
    assert "digraph" in prob.print("dot")
    (tmp_path / "a").mkdir()
    prob.save(tmp_path / "a" / "p.json")
    prob.save(tmp_path / "a" / "p.prox")
    os.chdir(tmp_path)
    for path in (tmp_path / "a" / "p.json", tmp_path / "a" / "p.prox"):
        loaded = proxc.load(path)
        (v,) = loaded.variables()
        assert v.name == "x" and v.shape == b.shape
        assert loaded.solve(max_iters=50, eps_abs=0, eps_rel=0) == pytest.approx(expected, rel=1e-9)
        np.testing.assert_array_equal(v.value, x.value)


def test_save_names_the_users_path_and_leaves_nothing_behind(tmp_path):
    b = _data()
    _, prob = _tv(b)
    missing = tmp_path / "no" / "p.json"
    with pytest.raises(FileNotFoundError, match=f"cannot save the problem to {missing}: the folder .* does not exist"):
        prob.save(missing)
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(IsADirectoryError, match="dir.json: it is a folder"):
        prob.save(tmp_path / "dir.json")
    # A file replaced keeps its permissions; no temporary is left.
    target = tmp_path / "p.prox"
    target.write_text("old")
    target.chmod(0o640)
    prob.save(target)
    assert (target.stat().st_mode & 0o777) == 0o640 and target.read_text().startswith("x = variable(")
    # A write that fails (a read-only folder, unless root, which may write anyway) names the path.
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.geteuid() != 0:
            with pytest.raises(PermissionError, match=str(ro / "p.prox")):
                prob.save(ro / "p.prox")
    finally:
        ro.chmod(0o700)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.json", "p.prox", "ro"]
    assert not list(ro.iterdir())


def test_load_a_prox_file_and_module():
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    prob = proxc.load(os.path.join(repo, "examples", "denoise_tv_aniso.prox"))
    m = prob.compile(solver="pc")
    inputs = m.inputs()
    assert m.name and inputs and m.outputs()
    rng = np.random.default_rng(3)
    arrays = {k: rng.standard_normal(shape).astype(np.float32) for k, shape in inputs.items()}
    params = {p: 1.0 for p in m.params()}
    got, got_s = m.run(arrays, params)
    want, want_s = m.emulate(arrays, params)
    assert set(got) == set(want) and got
    for k in got:  # compiled = emulated (float32 against double; docs/checks.md)
        np.testing.assert_allclose(got[k], want[k], atol=1e-4 * max(1.0, np.abs(want[k]).max()))
    assert "Halide" in m.source()
    report = prob.check()
    assert report.passed


def test_problem_forms_proxc_adds():
    b = _data()
    x = Variable(b.shape)
    k = proxc.gaussian((5, 5), 1.0)
    prob = Problem(sum_squares(conv(k, x) - b) + 1e-3 * norm1(grad(x)) + proxc.box(x, 0, 1))
    prob.solve(max_iters=500, eps_abs=1e-5, eps_rel=1e-5)
    assert x.value.min() >= -1e-3 and x.value.max() <= 1 + 1e-3
    # A term's keyword parameters, ProxImaL's way.
    x2 = Variable(b.shape)
    p2 = Problem(sum_squares(x2, b=b, alpha=2.0) + norm1(grad(x2), alpha=0.1))
    p2.solve(max_iters=100)
    assert x2.value.shape == b.shape


def test_interpreter_survives_bad_input():
    # A crash would end this child process with a signal, not exit code 0.
    code = (
        "import numpy as np, proxc\n"
        "from proxc import *\n"
        "x = Variable((8, 8))\n"
        "for bad in (lambda: conv(np.ones((9, 9, 9, 9, 9)), x), lambda: grad(x, dims=7),\n"
        "            lambda: Problem(sum_squares(x)).solve(max_iters=-3), lambda: proxc.load_array('/nonexistent.npy'),\n"
        "            lambda: proxc.save_array('/nonexistent/dir/a.png', np.zeros((4, 4))),\n"
        "            lambda: Problem([]), lambda: reshape(x, (7, 7))):\n"
        "    try:\n"
        "        bad()\n"
        "    except (ValueError, TypeError) as e:\n"
        "        print('ok', type(e).__name__)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("ok") == 7, r.stdout + r.stderr


def test_a_solve_beyond_the_memory_budget_is_a_memory_error_saying_what():
    # In a child: the budget is the process's. pc's state for TV denoising of
    # 2000² (15 MiB an array) does not fit in 80 MiB, on either backend; the
    # MemoryError says how much was asked and the budget, and the
    # interpreter goes on (a smaller solve then succeeds under it).
    code = (
        "import numpy as np, proxc\n"
        "from proxc import *\n"
        "proxc.set_max_memory('80M')\n"
        "assert proxc.max_memory() == 80 << 20\n"
        "for backend in ('halide', 'emulate'):\n"
        "    b = np.full((2000, 2000), 0.5, np.float32)\n"
        "    x = Variable(b.shape)\n"
        "    p = Problem(sum_squares(x - b) + 0.1 * group_norm1(grad(x), [2]))\n"
        "    try:\n"
        "        p.solve(solver='pc', max_iters=5, backend=backend)\n"
        "    except MemoryError as e:\n"
        "        print('refused', backend, e)\n"
        "x = Variable((64, 64))\n"
        "Problem(sum_squares(x - np.ones((64, 64)))).solve(max_iters=5)\n"
        "print('then solved')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [l.split()[:2] for l in lines[:2]] == [["refused", "halide"], ["refused", "emulate"]], r.stdout + r.stderr
    for line in lines[:2]:
        assert "the memory budget of 80.0 MiB (the machine's available memory, --max-memory or Python's " \
               "set_max_memory) cannot hold" in line and "MiB are in use" in line, line
    assert lines[-1] == "then solved"


def test_callbacks_see_the_converging_check_too(capfd):
    b = _data()
    x, prob = _tv(b)
    seen = []
    prob.solve(callback=lambda i, v: seen.append(i), verbose=1)
    assert prob.summary.termination == "converged"
    assert seen and seen[-1] == prob.summary.iterations
    assert f"iter {prob.summary.iterations - 1}:" in capfd.readouterr().out
    # A second parameter with a default keeps ProxImaL's callback(x).
    got = []
    prob.solve(callback=lambda v, extra=None: got.append(v.shape), max_iters=20, conv_check=10, eps_abs=0,
               eps_rel=0)
    assert got and all(s == (b.size,) for s in got)


def test_value_of_expressions_and_functions():
    b = _data((12, 10))
    x = Variable(b.shape)
    with pytest.raises(ValueError, match="no value yet"):
        (x - b).value
    prob = Problem(sum_squares(x - b) + 0.1 * norm1(grad(x)))
    prob.solve(max_iters=50)
    xv = x.value.astype(np.float64)
    np.testing.assert_allclose((2 * x - b).value, 2 * xv - b, atol=1e-6)
    g = grad(x).value
    assert g.shape == (12, 10, 2)
    np.testing.assert_allclose(g[:-1, :, 0], xv[1:] - xv[:-1], atol=1e-6)
    assert sum_squares(x - b).value == pytest.approx(((xv - b) ** 2).sum(), rel=1e-6)
    assert (0.1 * norm1(grad(x))).value == pytest.approx(0.1 * np.abs(g).sum(), rel=1e-5)
    assert nonneg(x - 10).value == np.inf
    with pytest.raises(TypeError):
        0 * norm1(x)
    with pytest.raises(TypeError):
        -1 * norm1(x)


def test_a_kernel_of_fewer_axes_filters_each_slice():
    # A 1-D kernel on an image: each column convolved circularly along axis 0, origin k[1].
    x0 = _data((12, 9))
    k = np.array([0.2, 0.5, 0.3], np.float32)
    x = Variable(x0.shape)
    x.value = x0
    want = sum(k[i] * np.roll(x0.astype(np.float64), i - 1, axis=0) for i in range(3))
    np.testing.assert_allclose(conv(k, x).value, want, atol=1e-6)
    # A 2-D kernel on (H, W, C): each channel alone.
    c0 = _data((8, 7, 3))
    k2 = _data((3, 3))
    c = Variable(c0.shape)
    c.value = c0
    got = conv(k2, c).value
    for ch in range(3):
        v = Variable((8, 7))
        v.value = c0[..., ch]
        np.testing.assert_allclose(got[..., ch], conv(k2, v).value, atol=1e-6)
    with pytest.raises(ValueError, match="kernel shape"):
        conv(_data((3, 3, 3, 3)), x)


def _warp_reference(img, H):
    # ProxImaL's warp: cv2.warpPerspective(img.T, H, ..., WARP_INVERSE_MAP).T, i.e. output
    # pixel (i, j) samples img bilinearly at the row and column H @ (i, j, 1), 0 outside.
    rows, cols = img.shape
    out = np.zeros(img.shape)
    for i in range(rows):
        for j in range(cols):
            u, v, w = H @ np.array([i, j, 1.0])
            r, c = u / w, v / w
            r0, c0 = int(np.floor(r)), int(np.floor(c))
            fr, fc = r - r0, c - c0
            for dr, dc, wt in ((0, 0, (1 - fr) * (1 - fc)), (0, 1, (1 - fr) * fc), (1, 0, fr * (1 - fc)),
                               (1, 1, fr * fc)):
                if 0 <= r0 + dr < rows and 0 <= c0 + dc < cols:
                    out[i, j] += wt * img[r0 + dr, c0 + dc]
    return out


def test_warp_samples_at_h_times_row_column_as_proximal():
    img = _data((14, 11), seed=3)
    x = Variable(img.shape)
    x.value = img
    # A shift by two rows: out[i, j] = img[i + 2, j] (the columns stay).
    shift = np.array([[1, 0, 2], [0, 1, 0], [0, 0, 1]], np.float32)
    out = warp(x, shift).value
    np.testing.assert_allclose(out[:-2], img[2:], atol=1e-6)
    np.testing.assert_allclose(out[-2:], 0, atol=1e-6)
    # A rotation by 5 degrees about the centre and a sub-pixel shift, on both backends.
    a = np.deg2rad(5.0)
    rot = np.array([[np.cos(a), -np.sin(a), 0.3], [np.sin(a), np.cos(a), -0.6], [0, 0, 1]])
    centre = np.array([[1, 0, 6.5], [0, 1, 5], [0, 0, 1]])
    H = (centre @ rot @ np.linalg.inv(centre)).astype(np.float32)
    want = _warp_reference(img.astype(np.float64), H.astype(np.float64))
    np.testing.assert_allclose(warp(x, H).value, want, atol=1e-5)
    # Solved on Halide: the least-squares fit of a warped observation recovers the
    # pixels the warp sees (compiled = the reference above).
    y = Variable(img.shape)
    Problem(sum_squares(warp(y, H) - want)).solve(solver="pc", max_iters=3000, eps_abs=1e-7, eps_rel=1e-7)
    np.testing.assert_allclose(_warp_reference(y.value.astype(np.float64), H.astype(np.float64)), want, atol=2e-3)


def test_result_memory_is_proxcs_and_aot_and_parse_errors(tmp_path):
    b = _data()
    x, prob = _tv(b)
    prob.solve(max_iters=10)
    # The array NumPy shows is the one proxc filled: the same address.
    arr, address = proxc._proxc._value_and_address(prob._native, x._expr)
    assert arr.ctypes.data == address
    m = prob.compile(solver="ladmm")
    a = m.compile_aot(tmp_path, "tv_step")
    for path in (a.library, a.header, a.wrapper, a.manifest):
        assert os.path.getsize(path) > 0
    with pytest.raises(ValueError, match=r"<string>:2:\d+"):
        proxc.parse("x = variable(4, 4)\nminimize no_such_function(x)")


def test_ctrl_c_stops_a_solve_at_the_next_check(interrupted_child):
    code = (
        "import numpy as np, sys\n"
        "from proxc import *\n"
        "b = np.random.default_rng(0).random((256, 256)).astype(np.float32)\n"
        "x = Variable(b.shape)\n"
        "p = Problem(sum_squares(x - b) + 0.1 * group_norm1(grad(x), [2]))\n"
        "p.solve(max_iters=2)\n"
        "print('solving', flush=True)\n"
        "try:\n"
        "    p.solve(max_iters=10**8, eps_abs=0, eps_rel=0, conv_check=10)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted after', p.summary, flush=True)\n"
        "    sys.exit(7)\n"
    )
    returncode, output = interrupted_child(code, 0.5)
    assert returncode == 7, output


def test_linop_factory_runs_python_operators_as_black_boxes():
    b = _data((24, 20))
    w = np.linspace(0.5, 1.5, b.size).reshape(b.shape).astype(np.float32)
    calls = [0, 0]

    def forward(x, out):  # ProxImaL's convention: write K x into out
        calls[0] += 1
        out[:] = w * x

    def adjoint(y, out):
        calls[1] += 1
        out[:] = w * y

    op = proxc.LinOpFactory(b.shape, b.shape, forward, adjoint, norm_bound=float(w.max()))
    x = Variable(b.shape)
    prob = Problem(sum_squares(op(x) - b) + 0.1 * norm1(grad(x)))
    assert prob.check().passed  # dot tests through the Python callbacks
    prob.solve(max_iters=3000, eps_abs=1e-7, eps_rel=1e-7, conv_check=50)
    assert calls[0] > 0 and calls[1] > 0
    y = Variable(b.shape)
    builtin = Problem(sum_squares(mul_elemwise(w, y) - b) + 0.1 * norm1(grad(y)))
    builtin.solve(max_iters=3000, eps_abs=1e-7, eps_rel=1e-7, conv_check=50)
    # The same optimum as the built-in operator (by another path: absorb folds mul_elemwise).
    assert prob.summary.objective == pytest.approx(builtin.summary.objective, rel=1e-3)
    with pytest.raises(ValueError, match="takes"):
        op(Variable((3, 3)))

    def failing(x, out):
        raise RuntimeError("no forward today")

    bad = proxc.LinOpFactory(b.shape, b.shape, failing, adjoint)
    z = Variable(b.shape)
    with pytest.raises(ValueError, match="no forward today"):
        Problem(sum_squares(bad(z) - b)).solve(max_iters=5)


def test_linop_factory_leaves_nothing_alive_at_exit():
    # The registry keeps a LinOpFactory's callbacks for the process's life; they are
    # dropped at the interpreter's exit, so nanobind finds no objects leaked.
    script = ("import numpy as np\nfrom proxc import *\n"
              "def op(i, o): o[:] = 2 * i\n"
              "f = LinOpFactory((4,), (4,), op, op, 2)\nx = Variable(4)\n"
              "print(Problem(sum_squares(f(x) - np.ones(4))).solve(max_iters=10))\n")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "leaked" not in r.stderr, r.stderr


def test_pxwise_matrixmult_applies_a_matrix_per_pixel_as_proximal():
    rng = np.random.default_rng(7)
    A = rng.standard_normal((9, 8, 2, 3)).astype(np.float32)
    img = rng.standard_normal((9, 8, 3)).astype(np.float32)
    x = Variable(img.shape)
    x.value = img
    # ProxImaL's call: pxwise_matrixmult(A, arg[, normbound]); out[..., i] = sum_j A[..., i, j] x[..., j].
    op = proxc.pxwise_matrixmult(A, x)
    assert op.shape == (9, 8, 2)
    np.testing.assert_allclose(op.value, np.einsum("...ij,...j->...i", A, img), atol=1e-5)
    y = rng.standard_normal(op.shape)
    back = np.zeros(img.shape)
    op.adjoint([y], [back])
    np.testing.assert_allclose(back, np.einsum("...ij,...i->...j", A, y), atol=1e-5)
    with pytest.raises(ValueError, match="must be the operand's shape"):
        proxc.pxwise_matrixmult(A[:, :, :, :2], x)
    for bad in (-1, 0, True, "2", float("nan")):
        with pytest.raises(ValueError, match="normbound must be a positive number"):
            proxc.pxwise_matrixmult(A, x, normbound=bad)
    assert proxc.pxwise_matrixmult(A, x, normbound=np.float32(2)).shape == (9, 8, 2)
    # A least-squares fit with a small ridge has the closed form per pixel
    # (A^T A + 0.01 I) x = A^T b; pc and admm reach it on both backends. The
    # 3 x 3 matrices are well conditioned (identity plus a quarter of noise).
    A3 = (np.eye(3) + 0.25 * rng.standard_normal((9, 8, 3, 3))).astype(np.float32)
    b = rng.standard_normal((9, 8, 3)).astype(np.float32)
    a64 = A3.astype(np.float64)
    lhs = np.einsum("...ki,...kj->...ij", a64, a64) + 0.01 * np.eye(3)
    want = np.linalg.solve(lhs, np.einsum("...ki,...k->...i", a64, b.astype(np.float64))[..., None])[..., 0]
    for backend in ("halide", "emulate"):
        for solver in ("pc", "admm"):
            z = Variable(b.shape)
            prob = Problem([sum_squares(proxc.pxwise_matrixmult(A3, z, normbound=2.0) - b),
                            0.01 * sum_squares(z)])
            prob.solve(solver=solver, backend=backend, max_iters=5000, eps_abs=1e-8, eps_rel=1e-8)
            np.testing.assert_allclose(z.value, want, atol=2e-4, err_msg=f"{solver} on {backend}")
    # New matrices through Constant.value: the compiled solve reads them.
    m = Constant(A3)
    z = Variable(b.shape)
    prob = Problem([sum_squares(proxc.pxwise_matrixmult(m, z) - b), 0.01 * sum_squares(z)])
    prob.solve(solver="pc", max_iters=5000, eps_abs=1e-8, eps_rel=1e-8)
    np.testing.assert_allclose(z.value, want, atol=2e-4)
    A4 = np.ascontiguousarray(A3.transpose(0, 1, 3, 2))
    a64 = A4.astype(np.float64)
    lhs = np.einsum("...ki,...kj->...ij", a64, a64) + 0.01 * np.eye(3)
    want4 = np.linalg.solve(lhs, np.einsum("...ki,...k->...i", a64, b.astype(np.float64))[..., None])[..., 0]
    assert np.abs(want4 - want).max() > 0.1
    m.value = A4
    prob.solve(solver="pc", max_iters=5000, eps_abs=1e-8, eps_rel=1e-8)
    np.testing.assert_allclose(z.value, want4, atol=2e-4)

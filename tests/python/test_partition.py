"""admm splits a problem as ProxImaL's admm.partition does: when every term's
operator is Gram-diagonal, the diagonal sum_squares terms are solved in the
x-update (omega), not split off; pc and ladmm, without a least-squares term,
take a function of x itself as omega (ProxImaL's pock_chambolle.partition). The references are ProxImaL 0.1.7's
Problem.solve(solver="admm", eps_abs=1e-5, eps_rel=1e-5) on the same scripts,
run with its numpy backend in a scratch venv:
  ex1 x = [82.785926893, -1.3616e-4, -1.3616e-4], returned 76305.15663113727
  ex2 x = [0.95, 0, 1.4875, 0], returned 5.246875000000001 (the exact optimum)
Before, proxc made every admm term psi: ex1 ran out of its 1000 iterations
with nonneg violated (objective inf)."""
import numpy as np
import pytest

from proxc import *  # noqa: F403


def _ex1():
    x = Variable(3)
    return x, [nonneg(x), sum_squares(conv(np.array([1., 2., 3.]), x), b=np.array([-41., 413., 2.]))]


def _ex2():
    x = Variable(4)
    m = np.array([1., 0., 2., .5])
    b = np.array([1., -2., 3., -1.])
    return x, [sum_squares(mul_elemwise(m, x) - b), nonneg(x), 0.1 * norm1(x)]


# The stopping tolerances bound ||Kx - z|| by about 1e-5 ||Kx|| (4e-3 on ex1):
# both solvers stop within them, at different checks (ProxImaL every 100
# iterations, proxc every 10), so x agrees to that, the objective to 1e-5.
@pytest.mark.parametrize("build, want_x, want_value, x_tol", [
    (_ex1, [82.785926893, -1.3616e-4, -1.3616e-4], 76305.15663113727, 4e-3),
    (_ex2, [0.95, 0., 1.4875, 0.], 5.246875000000001, 1e-4),
])
def test_admm_reaches_proximals_solution(build, want_x, want_value, x_tol):
    x, fns = build()
    value = Problem(fns).solve(solver="admm", eps_abs=1e-5, eps_rel=1e-5)
    np.testing.assert_allclose(np.asarray(x.value, dtype=np.float64).ravel(), want_x, rtol=0, atol=x_tol)
    assert value == pytest.approx(want_value, rel=1e-5)


def test_hqs_solves_the_omega_term_in_its_x_update():
    # ProxImaL 0.1.7's hqs through Problem.solve fails (it passes implem=, which
    # hqs.solve does not take); the optimum of ex2 is known exactly. HQS's
    # fixed point at its last rho (256) is within about 1/rho of it.
    x, fns = _ex2()
    Problem(fns).solve(solver="hqs", eps_abs=1e-6, eps_rel=1e-6, max_iters=3000)
    np.testing.assert_allclose(np.asarray(x.value, dtype=np.float64), [0.95, 0., 1.4875, 0.], rtol=0, atol=2e-2)


def test_pc_keeps_nonneg_exact_when_there_is_no_least_squares():
    # A Poisson deconvolution: nonneg(x) is omega, so every iterate is its
    # projection and the returned objective is finite after any number of
    # iterations. Before, with nonneg in psi, x ended below 0 (by 0.01 after 7
    # iterations, 0.12 after 50 here) and the objective was inf.
    rng = np.random.default_rng(0)
    truth = rng.uniform(0.0, 1.0, (16, 16))
    truth[4:8, 4:8] = 0
    counts = rng.poisson(30 * truth).astype(np.float64)
    for iters in (7, 50):
        x = Variable((16, 16))
        fns = [poisson_norm(30 * conv(np.ones((3, 3)) / 9, x), counts), 0.1 * norm1(grad(x)), nonneg(x)]
        value = Problem(fns).solve(solver="pc", max_iters=iters)
        assert np.isfinite(value), iters
        assert float(np.min(x.value)) >= 0.0, iters

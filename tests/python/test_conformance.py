"""ProxImaL's scripts, with `from proximal import *` changed to
`from proxc import *`, against the numbers ProxImaL computed
(../shared/conformance, solve cases: x after exactly 50 iterations within
1e-4 per entry, the objective within 1e-5 relative) and ProxImaL's default
solve() (at least as accurate as those 50 iterations, to 1e-3)."""
import numpy as np
import pytest

from proxc import *  # noqa: F403  (the point: ProxImaL's names)

SCRIPTS = {
    # name: (inputs, the objective as a ProxImaL script writes it)
    "tv_aniso": lambda x, d: sum_squares(x - d["b"]) + 0.1 * norm1(grad(x)) + nonneg(x),
    "tv_iso": lambda x, d: sum_squares(x - d["b"]) + 0.1 * group_norm1(grad(x), [2]) + nonneg(x),
    "deconv": lambda x, d: (sum_squares(conv(d["k"], x) - d["b"]) + 0.001 * group_norm1(grad(x), [2])
                            + nonneg(x)),
    "inpaint": lambda x, d: sum_squares(mul_elemwise(d["m"], x) - d["b"]) + 0.05 * group_norm1(grad(x), [2]),
}
CASES = [f"solve_{p}_{s}" for p, solvers in (("tv_aniso", "pc ladmm admm"), ("tv_iso", "pc ladmm admm"),
                                            ("deconv", "pc ladmm"), ("inpaint", "pc ladmm"))
         for s in solvers.split()]
# ProxImaL's spellings of the solver names, one per case.
SPELLING = {"pc": ["pc", "pock_chambolle"], "ladmm": ["ladmm", "linearized_admm"], "admm": ["admm"]}


def _problem(case, load):
    name = case["id"][len("solve_"):].rsplit("_", 1)[0]
    data = {k: load(v) for k, v in case["inputs"].items()}
    x = Variable(data["b"].shape)
    return x, SCRIPTS[name](x, data)


@pytest.mark.parametrize("case_id", CASES)
def test_fifty_iterations_match_proximal(conformance, case_id):
    cases, load = conformance
    case = cases[case_id]
    x, fns = _problem(case, load)
    spellings = SPELLING[case["solver"]]
    solver = spellings[CASES.index(case_id) % len(spellings)]
    prob = Problem(fns)
    value = prob.solve(solver=solver, max_iters=case["max_iters"], eps_abs=case["eps_abs"], eps_rel=case["eps_rel"])
    expected = load(case["output"])
    assert x.value.shape == expected.shape and x.value.dtype == np.float32
    err = np.abs(x.value.astype(np.float64) - expected).max()
    assert err <= case["tolerance"]["abs"], f"max |x - ProxImaL's x| = {err}"
    assert prob.summary.iterations == case["max_iters"]
    # ProxImaL's objective_f64 leaves nonneg out; solve() returns it with
    # nonneg's value as ProxImaL computes it (0, or +inf where an entry is
    # below -1e-3), and the summary has it at max(x, 0) too.
    if "xmin" in case:
        assert (value == np.inf) == (x.value.min() < -1e-3)
        got, want = prob.summary.objective_at_projection, case["objective_f64_at_max0"]
    else:
        got, want = value, case["objective_f64"]
    rel = abs(got - want) / abs(want)
    assert rel <= case["tolerance"]["objective_rel"], f"objective {got} against {want}"


@pytest.mark.parametrize("case_id", [c for c in CASES if c.endswith("_pc")])
def test_default_solve_is_at_least_proximals_fifty_iterations(conformance, case_id):
    cases, load = conformance
    case = cases[case_id]
    x, fns = _problem(case, load)
    prob = Problem(fns)
    value = prob.solve()  # ProxImaL's defaults: pc, 1000 iterations, eps 1e-3, checked every 100
    assert prob.summary.solver == "pc"
    # Checked where ProxImaL checks: after iterations 101, 201, ... (its i = 100, 200, ... from 0).
    assert prob.summary.iterations % 100 == 1 or prob.summary.iterations == 1000
    assert [h["iteration"] for h in prob.history][:2] == [101, 201][:len(prob.history[:2])]
    assert value <= case["objective_f64"] * (1 + 1e-3)

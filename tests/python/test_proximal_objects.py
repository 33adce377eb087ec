"""ProxImaL's object API beyond Problem: LinOp.forward/adjoint (node by node,
as ProxImaL's input_nodes), CompGraph and est_CompGraph_norm, ProxFn.prox and
ProxFn.eval, and proxc.utils.utils. The conformance cases computed by ProxImaL
(../shared/conformance: 42 operator, 35 prox and 27 value cases) run through
these names, each within its stated tolerance |got - want| <= abs + rel |want|."""
import numpy as np
import pytest

import proxc
from proxc import *  # noqa: F403  (the point: ProxImaL's names)
from proxc.utils.utils import circshift, estimate_std, fftd, ifftd, im2nparray, psf2otf, tic, toc


def _cases(conformance, kinds):
    cases, _ = conformance
    return [c for c in cases.values() if c["kind"] in kinds]


def _build(case, load):
    """The case's expression or function, built by ProxImaL's names from its
    text (the .prox forms of these cases are also Python)."""
    env = {"conv": conv, "grad": grad, "mul_elemwise": mul_elemwise, "subsample": subsample,
           "group_norm1": group_norm1, "nonneg": nonneg, "norm1": norm1, "poisson_norm": poisson_norm,
           "sum_entries": sum_entries, "sum_squares": sum_squares}
    for name, rel in case["constants"].items():
        env[name] = load(rel)
    x = Variable(tuple(case["variable"]["shape"]))
    env[case["variable"]["name"]] = x
    return x, eval(case["expr"], env)  # noqa: S307 (the conformance folder's own expressions)


def _close(got, want, tol):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    excess = np.abs(got - want) - (tol["abs"] + tol["rel"] * np.abs(want))
    assert excess.max() <= 0, f"worst entry off by {excess.max()} beyond the tolerance"


def _ids(kinds):
    # The ids are read at collection time from the same folder the fixture reads.
    import json

    from conftest import conformance_dir
    path = conformance_dir() / "cases.json"
    if not path.exists():
        return ["missing"]
    return [c["id"] for c in json.loads(path.read_text()) if c["kind"] in kinds]


@pytest.mark.parametrize("case_id", _ids({"linop_forward", "linop_adjoint"}))
def test_linop_forward_and_adjoint_reproduce_proximal(conformance, case_id):
    cases, load = conformance
    case = cases[case_id]
    x, fn = _build(case, load)
    want = load(case["output"])
    if case["kind"] == "linop_forward":
        xin = load(case["inputs"]["x"])
        K = CompGraph(fn)
        out = np.zeros(K.output_size)
        K.forward(xin.ravel(), out)
        _close(out.reshape(fn.shape), want, case["tolerance"])
        if fn.input_nodes == [x]:  # one node over the variable: the node's own forward is K
            node_out = np.zeros(fn.shape)
            fn.forward([xin], [node_out])
            _close(node_out, want, case["tolerance"])
    else:
        y = load(case["inputs"]["y"])
        K = CompGraph(fn)
        out = np.zeros(K.input_size)
        K.adjoint(y.ravel(), out)
        _close(out.reshape(x.shape), want, case["tolerance"])
        if fn.input_nodes == [x]:
            node_out = np.zeros(x.shape)
            fn.adjoint([y], [node_out])
            _close(node_out, want, case["tolerance"])


@pytest.mark.parametrize("case_id", _ids({"prox", "eval"}))
def test_prox_and_eval_reproduce_proximal(conformance, case_id):
    cases, load = conformance
    case = cases[case_id]
    _, fn = _build(case, load)
    v = load(case["inputs"]["v"])
    # ProxImaL ignores sum_entries' alpha, beta and b; proxc honours them
    # (docs/python.md), and the difference is pinned exactly: alpha 0.7, beta 1.3.
    honoured = "sum_entries_params" in case_id
    if case["kind"] == "prox":
        rho = case["params"]["rho"]
        got = fn.prox(rho, v)
        assert got.shape == v.shape
        want = load(case["output"]).astype(np.float64)
        if honoured:
            want -= (0.7 * 1.3 - 1) / (rho + 2 * 0.2)
        _close(got, want, case["tolerance"])
    else:
        got, want, tol = fn.eval(v), float(case["expected"]), case["tolerance"]  # ("inf": an indicator off its set)
        if honoured:
            v64 = v.astype(np.float64)
            want += np.sum(0.7 * (1.3 * v64 - load(case["constants"]["b"])) - v64)
        ok = got == want if np.isinf(want) else abs(got - want) <= tol["abs"] + tol["rel"] * abs(want)
        assert ok, f"{got} against {want}"



def test_node_forward_and_adjoint_apply_that_node_alone():
    x = Variable((6, 5))
    g = grad(x)
    w = np.linspace(-1, 1, 60).reshape(6, 5, 2)
    node = mul_elemwise(w, g)
    assert node.input_nodes == [g] and g.input_nodes == [x] and x.input_nodes == []
    p = np.random.default_rng(1).normal(size=g.shape)
    out = np.zeros(node.shape)
    node.forward([p], [out])  # w * p: the gradient is not applied again
    np.testing.assert_allclose(out, w * p, rtol=1e-6)
    back = np.zeros(g.shape)
    node.adjoint([p], [back])
    np.testing.assert_allclose(back, w * p, rtol=1e-6)
    # Each operand gets its own input, also when two operands are one node.
    a, b = np.arange(30.0).reshape(6, 5), -np.ones((6, 5))
    stacked = vstack([x, x])  # flattened and concatenated, as ProxImaL's
    for fn in (stacked, x + x, sum([x, x, x])):
        ins = [a, b, 2 * a][:len(fn.input_nodes)]
        out = np.zeros(fn.shape)
        fn.forward(ins, [out])
        want = np.concatenate([a.ravel(), b.ravel()]) if fn is stacked else np.sum(ins, axis=0)
        np.testing.assert_allclose(out.ravel(), want.ravel())
        parts = [np.zeros(x.shape) for _ in fn.input_nodes]
        y = np.arange(fn.size, dtype=np.float64).reshape(fn.shape)
        fn.adjoint([y], parts)
        for i, part in enumerate(parts):
            want = y.ravel()[30 * i:30 * (i + 1)] if fn is stacked else y.ravel()
            np.testing.assert_allclose(part.ravel(), want)
    # A chain of + is one sum node over its operands, as in ProxImaL.
    chain = node + g + g
    assert chain.input_nodes == [node, g, g]
    out = np.zeros(g.shape)
    chain.forward([p, p, 2 * p], [out])
    np.testing.assert_allclose(out, 4 * p)
    # A constant offset is left out of the node's forward; a Constant writes its value.
    c = Constant(np.full((6, 5), 2.0))
    shifted = x - c
    out = np.zeros(x.shape)
    shifted.forward([a, np.zeros((6, 5))], [out])
    np.testing.assert_allclose(out, a)
    c.forward([], [out])
    np.testing.assert_allclose(out, 2.0)
    with pytest.raises(ValueError, match="expected 1 arrays"):
        g.forward([a, a], [np.zeros(g.shape)])
    with pytest.raises(ValueError, match="input 0 has 7 entries"):
        g.forward([np.zeros(7)], [np.zeros(g.shape)])


def test_compgraph_passes_the_dot_test_and_maps_the_variables():
    rng = np.random.default_rng(2)
    x, z = Variable((12, 10)), Variable((12, 10))
    k = rng.normal(size=(3, 3))
    K = CompGraph(vstack([conv(k, x) + mul_elemwise(rng.normal(size=(12, 10)), z), grad(x)]))
    assert K.input_size == 240 and K.output_size == 120 + 240
    u, v = rng.normal(size=K.input_size), rng.normal(size=K.output_size)
    ku, ktv = K.forward(u, np.zeros(K.output_size)), K.adjoint(v, np.zeros(K.input_size))
    assert abs(ku @ v - u @ ktv) <= 1e-5 * (abs(ku @ v) + 1)
    K.update_vars(u)
    np.testing.assert_allclose(x.value.ravel(), u[:120].astype(np.float32))
    np.testing.assert_allclose(z.value.ravel(), u[120:].astype(np.float32))
    z.initval = np.ones((12, 10))
    np.testing.assert_array_equal(K.x0(), np.r_[np.zeros(120), np.ones(120)])
    # ||K||: the bound is an upper bound; the estimate lies below it and below
    # ||K||'s value from the dense matrix, close to it.
    dense = np.stack([K.forward(e, np.zeros(K.output_size)) for e in np.eye(K.input_size)], axis=1)
    exact = np.linalg.norm(dense, 2)
    est, bound = est_CompGraph_norm(K, tol=1e-6, try_fast_norm=False), est_CompGraph_norm(K)
    assert exact * (1 - 1e-3) <= est <= exact * (1 + 1e-5) <= bound
    mags = [None]
    K.norm_bound(mags)
    assert mags[0] == bound
    assert est_CompGraph_norm(CompGraph(-2.5 * x), try_fast_norm=False) == pytest.approx(2.5, rel=1e-6)
    with pytest.raises(ValueError, match="the input has 7 entries"):
        K.forward(np.zeros(7), np.zeros(K.output_size))


def test_prox_fn_prox_and_eval_take_proximals_forms():
    x = Variable(4)
    v = np.array([-2.0, -0.25, 0.5, 3.0])
    f = 0.5 * norm1(x)  # soft thresholding at alpha / rho
    np.testing.assert_allclose(f.prox(2.0, v), [-1.75, 0, 0.25, 2.75], atol=1e-7)
    assert f.eval(v) == pytest.approx(0.5 * 5.75)
    # A number in, a number out; the operand's expression is not applied.
    assert nonneg(Variable(1)).prox(1.0, -3.0) == 0.0 and isinstance(nonneg(Variable(1)).prox(1.0, 2), float)
    assert f.prox(2.0, v).dtype == np.float64 and f.prox(2.0, v.astype(np.float32)).dtype == np.float32
    g = sum_squares(grad(Variable((3, 3))), b=1.0)
    p = np.ones((3, 3, 2))
    np.testing.assert_allclose(g.prox(1.0, p), p)  # at b the prox is the identity
    assert g.eval(p) == 0
    assert nonneg(x).eval(v) == np.inf
    with pytest.raises(ValueError, match="rho must be a number > 0"):
        f.prox(0, v)
    with pytest.raises(ValueError, match="v has 3 entries, the operand"):
        f.prox(1.0, np.zeros(3))


def test_utils_utils_as_proximal_imports_them():
    rng = np.random.default_rng(3)
    for kshape in ((3, 3), (4, 5)):
        k, img = rng.normal(size=kshape), rng.normal(size=(16, 20))
        otf = psf2otf(k, img.shape)
        via_fft = np.real(ifftd(fftd(img) * otf))
        out = np.zeros(img.shape)
        conv(k, Variable(img.shape)).forward([img], [out])  # the operator the OTF diagonalises
        np.testing.assert_allclose(via_fft, out, atol=1e-5)
    sym = np.outer([1, 2, 1], [1, 2, 1]) / 16.0
    assert not np.any(psf2otf(sym, (8, 8)).imag)  # a symmetric kernel's OTF is real
    np.testing.assert_array_equal(circshift(np.arange(5), [2]), [3, 4, 0, 1, 2])
    assert im2nparray(np.array([0, 255], np.uint8)).tolist() == [0.0, 1.0]
    assert im2nparray(np.array([65535], np.uint16))[0] == 1.0
    t = tic()
    assert toc(t) >= 0 and toc() >= 0
    assert proxc.utils.psf2otf is psf2otf
    with pytest.raises(ValueError, match="larger than outsize"):
        psf2otf(np.ones((5, 5)), (4, 4))


def test_estimate_std_reproduces_proximals_wavelet_estimate():
    # ProxImaL's estimate_std runs OpenCV's sepFilter2D; these values are what
    # it gives (opencv-python-headless 4.12, float64 images; the filter's
    # taps are float32 there, hence the 1e-6 relative tolerance).
    z = np.random.default_rng(5).random((33, 47, 3))
    np.testing.assert_allclose(estimate_std(z), [0.2914891878178153] * 3, rtol=1e-6)
    np.testing.assert_allclose(estimate_std(z, "daub_replicate"), [0.2704548093538728] * 3, rtol=1e-6)
    np.testing.assert_allclose(estimate_std(np.random.default_rng(6).random((9, 6))), [0.29113164961574495],
                               rtol=1e-6)
    # White Gaussian noise of sigma 0.1 on a smooth image: the estimate is its sigma.
    rows, cols = np.mgrid[0:256, 0:256] / 256.0
    noisy = np.sin(3 * rows) * np.cos(2 * cols) + 0.1 * np.random.default_rng(7).standard_normal((256, 256))
    assert abs(estimate_std(noisy)[0] - 0.1) < 0.005
    assert proxc.utils.estimate_std is estimate_std
    with pytest.raises(ValueError, match="method must be one of"):
        estimate_std(z, "daub_mirror")
    with pytest.raises(ValueError, match="an image of 2 or 3 axes"):
        estimate_std(np.zeros((2, 3, 4, 5)))


def test_a_metric_ends_each_verbose_line(capsys):
    from proxc.utils.metrics import psnr_metric
    from proxc.utils.utils import psnr
    rng = np.random.default_rng(4)
    ref = np.zeros((24, 32))
    ref[6:18, 8:24] = 1
    x = Variable(ref.shape)
    prob = Problem(sum_squares(x - (ref + 0.1 * rng.normal(size=ref.shape))) + 0.1 * norm1(grad(x)))
    metric = psnr_metric(ref, pad=(2, 3))
    prob.solve(solver="ladmm", max_iters=41, verbose=1, metric=metric)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("iter ")]
    assert len(lines) >= 2 and all(", PSNR: " in ln and ln.endswith(" dB") for ln in lines)
    # The last check is at the solution: its message is x.value's PSNR, borders cropped per axis.
    assert lines[-1].endswith(f", PSNR: {np.round(psnr(x.value, ref, pad=(2, 3)), 2)} dB")
    assert psnr(x.value, ref, pad=(2, 3)) == psnr(x.value[2:-2, 3:-3], ref[2:-2, 3:-3])
    with pytest.raises(TypeError, match="metric must have a message"):
        prob.solve(metric=3)


# ProxImaL 0.1.7's module paths (proximal/lin_ops/*.py, prox_fns/*.py,
# algorithms/problem.py, utils/convergence_log.py) and the names each defines
# that proxc has: a script's `from proximal.lin_ops.black_box import
# LinOpFactory` runs with `proximal` changed to `proxc`.
_PROXIMAL_MODULES = {
    "lin_ops.black_box": ["LinOpFactory"], "lin_ops.comp_graph": ["CompGraph", "est_CompGraph_norm"],
    "lin_ops.constant": ["Constant"], "lin_ops.conv": ["conv"], "lin_ops.conv_nofft": ["conv_nofft"],
    "lin_ops.grad": ["grad"], "lin_ops.hstack": ["hstack"], "lin_ops.lin_op": ["LinOp", "cast_to_const"],
    "lin_ops.mul_color": ["mul_color"], "lin_ops.mul_elemwise": ["mul_elemwise"],
    "lin_ops.pxwise_matrixmult": ["pxwise_matrixmult"], "lin_ops.reshape": ["reshape"], "lin_ops.scale": ["scale"],
    "lin_ops.subsample": ["subsample", "uneven_subsample"], "lin_ops.sum": ["sum", "copy"],
    "lin_ops.transpose": ["transpose"], "lin_ops.variable": ["Variable"], "lin_ops.vstack": ["vstack"],
    "lin_ops.warp": ["warp"],
    "prox_fns.prox_fn": ["ProxFn"], "prox_fns.diff_fn": ["diff_fn"],
    "prox_fns.group_norm1": ["group_norm1", "weighted_group_norm1"],
    "prox_fns.nonneg": ["nonneg", "weighted_nonneg", "masked_nonneg"], "prox_fns.norm1": ["norm1", "weighted_norm1"],
    "prox_fns.patch_NLM": ["patch_NLM"], "prox_fns.poisson_norm": ["poisson_norm", "weighted_poisson_norm"],
    "prox_fns.sum_entries": ["sum_entries", "zero_prox"],
    "prox_fns.sum_squares": ["sum_squares", "weighted_sum_squares", "least_squares", "lsqr_options", "cg_options"],
    "algorithms.problem": ["Problem"], "utils.convergence_log": ["ConvergenceLog"],
}


def test_proximals_module_paths_hold_the_same_objects():
    import importlib
    for path, names in _PROXIMAL_MODULES.items():
        module = importlib.import_module("proxc." + path)
        for name in names:
            got = getattr(module, name)
            assert got is getattr(proxc.lin_ops if "cast_to_const" == name else
                                  proxc.utils if name == "ConvergenceLog" else proxc, name), f"{path}.{name}"
    # Loading a submodule binds its name in the package; the package binds the
    # operator or function back, so these names are never the modules.
    namespace = {}
    exec("from proxc.lin_ops import *\nfrom proxc.prox_fns import *", namespace)  # noqa: S102
    for name in ("conv", "sum", "grad", "vstack", "transpose", "scale", "warp", "diff_fn", "patch_NLM", "nonneg",
                 "sum_squares", "norm1"):
        assert namespace[name] is getattr(proxc, name) and callable(namespace[name]), name
        assert getattr(importlib.import_module("proxc.lin_ops" if hasattr(proxc.lin_ops, name) else "proxc.prox_fns"),
                       name) is getattr(proxc, name)
    from proxc.lin_ops.lin_op import cast_to_const
    x = Variable(3)
    assert cast_to_const(x) is x
    c = cast_to_const(np.arange(3.0))
    assert isinstance(c, Constant) and c.value.tolist() == [0.0, 1.0, 2.0]


def test_convlog_gets_each_checks_objective_and_time():
    from proxc.algorithms import pc
    from proxc.utils.convergence_log import ConvergenceLog
    rng = np.random.default_rng(8)
    b = rng.random((24, 20))
    x = Variable(b.shape)
    fns = [sum_squares(x - b), 0.1 * norm1(grad(x))]
    prob = Problem(fns)
    log = ConvergenceLog()
    prob.solve(convlog=log, conv_check=5, max_iters=20, eps_abs=0, eps_rel=0)
    assert len(prob.history) >= 4 and log.objective_val == [h["objective"] for h in prob.history]
    np.testing.assert_allclose(log.iter_time, [1000 * h["seconds"] for h in prob.history], rtol=1e-9)
    assert log.total_time == log.iter_time[-1] and all(np.diff(log.iter_time) >= 0)
    assert log.objective_val[-1] == pytest.approx(prob.objective, rel=1e-6)

    class Mine:  # any object with ProxImaL's two methods
        def __init__(self):
            self.rows = []

        def record_objective(self, value):
            self.rows.append(value)

        def record_timing(self, ms):
            assert ms >= 0

    mine = Mine()
    pc.solve(*pc.partition(fns), convlog=mine, conv_check=1, max_iters=12)
    # ProxImaL's rule, pc's schedule: checks after iterations C + 1, 2C + 1, ...: 2 to 12.
    assert len(mine.rows) == 11 and all(np.isfinite(mine.rows)) and mine.rows == sorted(mine.rows, reverse=True)
    with pytest.raises(TypeError, match="convlog must have record_objective"):
        prob.solve(convlog=[])
    log.tic()
    assert log.toc() >= 0 and log.total_time == log.iter_time[-1]
    with pytest.raises(RuntimeError, match="tic"):
        log.toc()


def test_proximals_baseline_and_pulses_example_as_a_script_writes_it():
    # The shape of ProxImaL's NIRS example (examples/near-infrared-spectroscopic-imaging.py):
    # a smooth baseline of DCT modes, a black box in Python imported by ProxImaL's
    # module path, minus nonnegative pulses, two variables; synthetic data here.
    from scipy.fft import dct, idct

    from proxc.lin_ops.black_box import LinOpFactory
    n, modes = 400, 24
    t = np.arange(n)
    baseline = 0.4 + 0.2 * np.sin(2 * np.pi * t / 300) + 0.1 * np.cos(2 * np.pi * t / 170)
    pulses = np.zeros(n)
    for start in (60, 150, 230, 320):
        pulses[start:start + 12] = 0.3
    raw = (baseline - pulses + 0.01 * np.random.default_rng(0).standard_normal(n)).astype(np.float32)

    def forward(coeff, out):
        out[:] = idct(coeff, n=2 * n, norm="ortho")[:n]

    def adjoint(y, coeff):
        coeff[:] = dct(np.concatenate([y, y[::-1]]), norm="ortho")[:coeff.size]

    op = LinOpFactory((modes,), (n,), forward, adjoint, norm_bound=None)
    found = {}
    for solver, eps in (("pc", 1e-6), ("ladmm", 1e-5), ("pc", 1e-5)):
        u, v = Variable(n), Variable(modes)
        prob = Problem([sum_squares(-u + op(v) - raw), 0.16 * norm1(grad(u)), 0.04 * norm1(u), nonneg(u)])
        objective = prob.solve(solver=solver, max_iters=3000, eps_abs=eps, eps_rel=eps, proximal_stopping=False)
        curve = np.zeros(n, np.float32)
        forward(v.value, curve)
        assert np.abs(curve - baseline).max() < 0.05 and np.abs(u.value - pulses).max() < 0.08, solver
        found[solver, eps] = objective
    best = found["pc", 1e-6]  # 0.93771 when written
    assert abs(found["ladmm", 1e-5] - best) < 1e-3 * best and abs(found["pc", 1e-5] - best) < 1e-3 * best


def test_bad_input_to_the_utilities_and_python_functions_is_refused_by_name():
    # estimate_std: no pixels, NaN, and a method that is neither a name nor ProxImaL's index.
    for image, message in ((np.zeros((0, 0)), r"the image of shape \(0, 0\) has no pixels"),
                           (np.zeros((5, 5, 0)), "has no pixels"),
                           (np.array([[1.0, np.nan], [1.0, 1.0]]), r"pixel at \(0, 1\) is nan")):
        with pytest.raises(ValueError, match="estimate_std: .*" + message):
            estimate_std(image)
    for method in ([], 1.0, "x", True):
        with pytest.raises(ValueError, match="method must be one of"):
            estimate_std(np.ones((5, 5)), method)
    assert estimate_std(np.ones((5, 5)), 1) == estimate_std(np.ones((5, 5)), "daub_replicate")
    # Complex constants are refused (NumPy would drop the imaginary part with a warning).
    x = Variable((4, 4, 2))
    for make in (lambda: Constant(np.ones(3) * 1j), lambda: pxwise_matrixmult(np.ones((4, 4, 2, 2), np.complex64), x),
                 lambda: sum_squares(x - np.ones((4, 4, 2)) * (1 + 1j))):
        with pytest.raises(ValueError, match="complex values"):
            make()
    # A prox function's parameter that is no number, and a value or prox that is NaN or complex.
    proxc.register_prox_fn("_nan_value", lambda v, rho, t=0.1: v, value=lambda x, t=0.1: float("nan"), t=0.1)
    proxc.register_prox_fn("_complex_prox", lambda v, rho: v + 0j)
    with pytest.raises(ValueError, match="prox_fn '_nan_value': the parameter t must be a number, got 'a'"):
        prox_fn("_nan_value", x, t="a")
    b = np.random.default_rng(9).random((4, 4, 2))
    with pytest.raises(ValueError, match="value returned nan"):
        Problem([sum_squares(x - b), prox_fn("_nan_value", x)]).solve(max_iters=5)
    with pytest.raises(ValueError, match="prox returned complex values"):
        Problem([sum_squares(x - b), prox_fn("_complex_prox", x)]).solve(max_iters=5)

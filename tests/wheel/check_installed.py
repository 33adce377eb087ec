"""Checks of an installed proxc wheel, run by scripts/test-wheel.sh inside a
bare Debian root where nothing else was installed (no compiler, no -dev
package): each check prints 'ok: NAME ...' or 'FAILED: NAME ...', and the
last line is 'N passed, N failed'.

    python check_installed.py WORK OUT

WORK holds a copy of the repository's examples/ and tests/, the conformance
cases (conformance/) and the source build's results (source/, written by
`compare_runs.py run` with the source build's proxc); OUT gets what the
checks write.
"""
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare_runs  # noqa: E402

WORK, OUT = Path(sys.argv[1]), Path(sys.argv[2])
OUT.mkdir(parents=True, exist_ok=True)
results = []


def check(name):
    def wrap(fn):
        start = time.perf_counter()
        try:
            detail = fn() or ""
            results.append(True)
            print(f"ok: {name} ({time.perf_counter() - start:.1f} s) {detail}", flush=True)
        except Exception as e:  # noqa: BLE001 (every failure is reported, and the next check runs)
            results.append(False)
            print(f"FAILED: {name}: {type(e).__name__}: {e}", flush=True)
        return fn
    return wrap


def run(cmd, **kw):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} exited {p.returncode}:\n{p.stdout[-3000:]}{p.stderr[-3000:]}")
    return p


def python(code, *args):
    """Runs `code` in a Python of its own (so that h5py and proxc never share one)."""
    return run([sys.executable, "-c", code, *args])


SITE = Path(sysconfig.get_paths()["platlib"])


@check("nothing else installed: no compiler, no -dev package")
def _():
    found = [t for t in ("cc", "c++", "gcc", "g++", "clang", "ld", "as") if shutil.which(t)]
    assert not found, f"a toolchain is here: {found}"
    dev = [line.split()[1] for line in run(["dpkg", "-l"]).stdout.splitlines()
           if line.startswith("ii") and line.split()[1].split(":")[0].endswith("-dev")]
    assert not dev, f"-dev packages are installed: {dev}"


@check("ldd finds every library of every shared object and program in the package")
def _():
    files = [f for d in ("proxc", "proxc.libs", "halide/lib64") for f in (SITE / d).rglob("*")
             if f.is_file() and (".so" in f.name or f.parent.name == "bin")]
    names = {f.name for f in files}
    for want in ("libproxc.so", "libproxc_hdf5.so", "libproxc_nlm.so", "proxc", "libHalide.so"):
        assert want in names, f"{want} is not in the installed package"
    missing = []
    for f in files:
        out = run(["ldd", f]).stdout
        missing += [f"{f.relative_to(SITE)}: {line.strip()}" for line in out.splitlines() if "not found" in line]
    assert not missing, "\n".join(missing)
    return f"({len(files)} files)"


@check("a ProxImaL script (examples/python/deconv_tv.py, its import changed) on the compiled backend")
def _():
    out = run([sys.executable, WORK / "examples/python/deconv_tv.py", "--out", OUT / "python"]).stdout
    import re
    before, after = map(float, re.search(r"PSNR ([\d.]+) dB -> ([\d.]+) dB", out).groups())
    # The blurred image is NumPy's alone (25.57 dB); 400 pc iterations gain 3.1 dB (the source build's figure).
    assert abs(before - 25.57) < 0.01 and after - before > 3.0, out
    assert (OUT / "python/deconv_tv.png").stat().st_size > 10000
    return f"PSNR {before} -> {after} dB"


@check("proxc solve examples/deconv_tv.prox --report (the console script)")
def _():
    report = OUT / "report"
    p = run(["proxc", "solve", WORK / "examples/deconv_tv.prox", "-o", OUT / "deconv_tv.npy", "--report", report,
             "--reference", WORK / "examples/data/clean.npy"])
    summary = p.stdout + p.stderr
    assert "converged" in summary, summary
    html = (report / "index.html").read_text()
    assert "<svg" in html and "image0.png" in html, "the report has no convergence plot or image"
    x = np.load(OUT / "deconv_tv.npy")
    clean = np.load(WORK / "examples/data/clean.npy")
    psnr = 10 * np.log10(1 / np.mean((x - clean) ** 2))
    assert psnr > 30, f"PSNR {psnr:.2f} dB against the clean image"
    return f"PSNR {psnr:.2f} dB, {summary.strip().splitlines()[0]}"


STACK_PROBLEM = """b = load("{src}")
x = variable(shape(b))
minimize sum_squares(x - b) + 0.05 * group_norm1(grad(x), [3]) + nonneg(x)
"""


@check("HDF5 (h5py's layouts) and a TIFF z-stack (tifffile's) load, in the command and in Python")
def _():
    d = OUT / "stack"
    d.mkdir(exist_ok=True)
    rng = np.random.default_rng(3)
    b = rng.random((6, 20, 24)).astype(np.float32)
    np.save(d / "stack.npy", b)
    # Written by h5py and tifffile (from the package index), in processes of their own.
    python("import sys, numpy as np, h5py\n"
           "b = np.load(sys.argv[1] + '/stack.npy')\n"
           "with h5py.File(sys.argv[1] + '/scan.h5', 'w') as f:\n"
           "    f.create_dataset('/entry/data', data=b.astype(np.float64), compression='gzip', chunks=(1, 20, 24))\n"
           "    f.create_dataset('/entry/plain', data=b)\n", d)
    python("import sys, numpy as np, tifffile\n"
           "tifffile.imwrite(sys.argv[1] + '/stack.tif', np.load(sys.argv[1] + '/stack.npy'))\n", d)
    python("import sys, numpy as np, proxc\n"
           "b = np.load(sys.argv[1] + '/stack.npy')\n"
           "for src in ('scan.h5:/entry/data', 'scan.h5:/entry/plain', 'stack.tif'):\n"
           "    assert (proxc.load_array(sys.argv[1] + '/' + src) == b).all(), src\n", d)
    xs = {}
    for src in ("stack.npy", "scan.h5:/entry/data", "stack.tif"):
        name = src.split(".")[0] + ("_h5" if "h5" in src else "")
        (d / f"{name}.prox").write_text(STACK_PROBLEM.format(src=src))
        run(["proxc", "solve", d / f"{name}.prox", "--iters", 30, "--eps-abs", 0, "--eps-rel", 0,
             "-o", d / f"x_{name}.npy"])
        xs[src] = np.load(d / f"x_{name}.npy")
    for src, x in xs.items():
        np.testing.assert_array_equal(x, xs["stack.npy"], err_msg=src)
    run(["proxc", "solve", d / "stack.prox", "--iters", 5, "-o", f"{d / 'scan.h5'}:/recon/x"])
    python("import sys, numpy as np, h5py\n"
           "with h5py.File(sys.argv[1] + '/scan.h5', 'r') as f:\n"
           "    assert f['/recon/x'].shape == (6, 20, 24) and f['/recon/x'].dtype == np.float32\n", d)


@check("a prox function written in Python (register_prox_fn) solves as norm1 does")
def _():
    python("import numpy as np, proxc\n"
           "from proxc import *\n"
           "rng = np.random.default_rng(3)\n"
           "b = rng.standard_normal((24, 20)).astype(np.float32)\n"
           "k = np.ones((3, 3), np.float32) / 9\n"
           "proxc.register_prox_fn('py_soft', lambda v, rho, t=1.0: np.sign(v) * np.maximum(np.abs(v) - t / rho, 0),\n"
           "                       lambda x, t=1.0: t * float(np.abs(x).sum()), t=1.0)\n"
           "x = Variable(b.shape)\n"
           "got = Problem([sum_squares(conv(k, x) - b), prox_fn('py_soft', x, t=0.3)]).solve(\n"
           "    max_iters=400, eps_abs=1e-7, eps_rel=1e-7)\n"
           "x_got = x.value.copy()\n"
           "want = Problem([sum_squares(conv(k, x) - b), 0.3 * norm1(x)]).solve(max_iters=400, eps_abs=1e-7, eps_rel=1e-7)\n"
           "assert abs(got - want) <= 1e-5 * abs(want), (got, want)\n"
           "assert np.abs(x_got - x.value).max() <= 1e-4\n")


@check("ProxImaL's conformance cases (tests/python/test_conformance.py)")
def _():
    p = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", WORK / "tests/python/test_conformance.py"],
            env={**__import__("os").environ, "PROXC_CONFORMANCE": str(WORK / "conformance")})
    return p.stdout.strip().splitlines()[-1]


@check("the wheel's results equal the source build's (conformance solve cases and examples)")
def _():
    compare_runs.run_all("proxc", WORK, OUT / "wheel")
    return compare_runs.compare(WORK / "source", OUT / "wheel")


passed, failed = results.count(True), results.count(False)
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)

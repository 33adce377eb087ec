"""Time to an accurate answer: how far from the optimum proxc's default solve
stops, how many iterations and seconds each solver needs to come within 1e-3
and 1e-4 of the optimum, what a convergence check costs, and the same for
ProxImaL's default solve when a Python with ProxImaL is given.

    python3 bench/accuracy.py [--proxc build/release/tools/proxc/proxc]
        [--size 512] [--problems tv,deconv,inpaint]
        [--solvers pc,ladmm,admm,pc+adaptive,admm+adaptive]
        [--proximal-python PY] [--out DIR] [--write-only]
    python3 bench/accuracy.py --per-iteration --proximal-python PY [...]

The problems (synthetic, seeded, written to DIR): anisotropic TV denoising
with nonneg, isotropic TV deconvolution (7×7 Gaussian, sigma 1.5, circular)
with nonneg, and isotropic TV inpainting of half the pixels.

Every objective is computed here, in float64 NumPy, from the iterate the
solver returns (its projection onto nonneg where the problem has nonneg), by
the formulas of ../shared/SEMANTICS.md, so proxc and ProxImaL are measured
with one ruler. The optimum F* is the lowest objective found by a 20000
iteration proxc run and by a float64 primal-dual polish of its result
(NumPy, --polish iterations): both are objectives of feasible points, so
the lower is the better bound; the gap between them is printed.

A solver "NAME+adaptive" runs with --adaptive (adaptive step sizes),
"NAME+fixed-steps" with --fixed-steps (pc adapts by default).
"Iterations to 1e-3": the first check (one every 10 iterations, the
default; adaptive steps change at checks) of a run whose objective is within
1e-3·|F*| of F*; its time is that of a run of exactly that many iterations,
checked as often (best of --repeat).
"check every C": ms per iteration of --check-iters (1000) iterations with a
check every C (every 1000: the last one only), and the ratio of every 1 to it.

--per-iteration prints only the table of ms per iteration against ProxImaL's
numpy backend (pc and ladmm; --solvers is ignored): ProxImaL's from the
difference of solves of 20 and 120 iterations (its setup cancels; eps 0, so
every iteration runs, checked every 100 as ProxImaL does), proxc's from
--check-iters iterations checked every 100, best of --repeat each.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

PROBLEMS = {
    "tv": 'b = load("noisy.npy")\nx = variable(shape(b))\n'
          "minimize sum_squares(x - b) + 0.1 * norm1(grad(x)) + nonneg(x)\n",
    "deconv": 'b = load("blurred.npy")\nk = load("k.npy")\nx = variable(shape(b))\n'
              "minimize sum_squares(conv(k, x) - b) + 0.001 * group_norm1(grad(x), [2]) + nonneg(x)\n",
    "inpaint": 'b = load("observed.npy")\nm = load("mask.npy")\nx = variable(shape(b))\n'
               "minimize sum_squares(mul_elemwise(m, x) - b) + 0.05 * group_norm1(grad(x), [2])\n",
}

PROXIMAL_SCRIPT = r"""
import json, sys, time
import numpy as np
import proximal as px
d, name = sys.argv[1], sys.argv[2]
ld = lambda f: np.load(d + "/" + f).astype(np.float64)
if name == "tv":
    b = ld("noisy.npy"); x = px.Variable(b.shape)
    terms = [px.sum_squares(x - b), 0.1 * px.norm1(px.grad(x)), px.nonneg(x)]
elif name == "deconv":
    b = ld("blurred.npy"); k = ld("k.npy"); x = px.Variable(b.shape)
    terms = [px.sum_squares(px.conv(k, x) - b), 0.001 * px.group_norm1(px.grad(x), [2]), px.nonneg(x)]
else:
    b = ld("observed.npy"); m = ld("mask.npy"); x = px.Variable(b.shape)
    terms = [px.sum_squares(px.mul_elemwise(m, x) - b), 0.05 * px.group_norm1(px.grad(x), [2])]
prob = px.Problem(terms)
t = time.perf_counter(); prob.solve(); t = time.perf_counter() - t
np.save(d + "/proximal_" + name + ".npy", np.asarray(x.value, dtype=np.float64))
print(json.dumps({"seconds": t}))
"""

# ProxImaL's ms per iteration: solves of 20 and 120 iterations, each of the
# problem built afresh (the terms of PROXIMAL_SCRIPT; a Problem's solve
# leaves its variables and terms changed).
PROXIMAL_PER_ITERATION = r"""
import json, sys, time
import proximal as px
setup = open(sys.argv[5]).read().split("prob = px.Problem(terms)")[0]
solver, repeat = sys.argv[3], int(sys.argv[4])
def run(n):
    scope = {}
    exec(setup, scope)
    prob = px.Problem(scope["terms"])
    t = time.perf_counter(); prob.solve(solver=solver, max_iters=n, eps_abs=0, eps_rel=0)
    return time.perf_counter() - t
best = {n: min(run(n) for _ in range(repeat)) for n in (20, 120)}
print(json.dumps({"ms": (best[120] - best[20]) / 100 * 1e3}))
"""


def write_data(folder, n):
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:n, 0:n] / n
    clean = (np.sin(8 * xx) > 0) * 0.5 + 0.3 * ((xx - 0.5) ** 2 + (yy - 0.5) ** 2 < 0.1) + 0.1
    np.save(os.path.join(folder, "noisy.npy"), (clean + 0.1 * rng.standard_normal(clean.shape)).astype(np.float32))
    g = np.arange(7) - 3
    k = np.exp(-(g[:, None] ** 2 + g[None, :] ** 2) / (2 * 1.5 ** 2))
    k /= k.sum()
    np.save(os.path.join(folder, "k.npy"), k.astype(np.float32))
    blurred = conv(k, clean) + 0.01 * rng.standard_normal(clean.shape)
    np.save(os.path.join(folder, "blurred.npy"), blurred.astype(np.float32))
    m = (rng.random(clean.shape) > 0.5).astype(np.float32)
    np.save(os.path.join(folder, "mask.npy"), m)
    np.save(os.path.join(folder, "observed.npy"), (m * (clean + 0.02 * rng.standard_normal(clean.shape))).astype(np.float32))
    for name, text in PROBLEMS.items():
        with open(os.path.join(folder, name + ".prox"), "w") as f:
            f.write(text)


def otf(k, shape):
    pad = np.zeros(shape)
    pad[: k.shape[0], : k.shape[1]] = k
    return np.fft.rfft2(np.roll(pad, (-(k.shape[0] // 2), -(k.shape[1] // 2)), (0, 1)))


def conv(k, x, adjoint=False):
    o = otf(k, x.shape)
    return np.fft.irfft2(np.fft.rfft2(x) * (np.conj(o) if adjoint else o), s=x.shape)


def grad(x):
    g = np.zeros(x.shape + (2,))
    g[:-1, :, 0] = x[1:] - x[:-1]
    g[:, :-1, 1] = x[:, 1:] - x[:, :-1]
    return g


def grad_t(p):
    out = np.zeros(p.shape[:2])
    for ax in (0, 1):
        q = np.moveaxis(p[..., ax], ax, 0)
        o = np.moveaxis(out, ax, 0)
        o[0] -= q[0]
        o[1:-1] -= q[1:-1] - q[:-2]
        o[-1] += q[-2]
    return out


class Model:
    """The problem in float64: data term ‖A x − b‖², weight·TV(x), nonneg."""

    def __init__(self, folder, name):
        ld = lambda f: np.load(os.path.join(folder, f)).astype(np.float64)
        self.name = name
        self.nonneg = name != "inpaint"
        self.iso = name != "tv"
        self.weight = {"tv": 0.1, "deconv": 0.001, "inpaint": 0.05}[name]
        if name == "tv":
            self.b, self.A, self.At, self.normA = ld("noisy.npy"), (lambda x: x), (lambda y: y), 1.0
        elif name == "deconv":
            k = ld("k.npy")
            self.b = ld("blurred.npy")
            self.A, self.At = (lambda x: conv(k, x)), (lambda y: conv(k, y, True))
            self.normA = float(np.abs(otf(k, self.b.shape)).max())
        else:
            m = ld("mask.npy")
            self.b, self.A, self.At, self.normA = ld("observed.npy"), (lambda x: m * x), (lambda y: m * y), 1.0

    def tv(self, x):
        g = grad(x)
        return float(np.sqrt((g ** 2).sum(-1)).sum() if self.iso else np.abs(g).sum())

    def objective(self, x):
        x = np.asarray(x, dtype=np.float64)
        if self.nonneg:
            x = np.maximum(x, 0)
        return float(((self.A(x) - self.b) ** 2).sum()) + self.weight * self.tv(x)

    def polish(self, x, iters):
        """Primal-dual (Chambolle–Pock) in float64 from x: g = nonneg (or 0),
        K = [A; grad], f1 = ‖· − b‖², f2 = weight·TV; y1 starts at ∇f1(A x)."""
        L = np.sqrt(self.normA ** 2 + 8.0)
        tau = sigma = 0.99 / L
        x = np.maximum(x, 0) if self.nonneg else x.copy()
        xbar = x.copy()
        y1 = 2 * (self.A(x) - self.b)
        y2 = np.zeros(x.shape + (2,))
        for _ in range(iters):
            v1 = y1 + sigma * self.A(xbar)
            y1 = (v1 - sigma * self.b) / (1 + sigma / 2)  # prox of σ f1*, f1 = ‖z − b‖²
            v2 = y2 + sigma * grad(xbar)
            if self.iso:
                nrm = np.maximum(np.sqrt((v2 ** 2).sum(-1, keepdims=True)) / self.weight, 1)
                y2 = v2 / nrm
            else:
                y2 = np.clip(v2, -self.weight, self.weight)
            xn = x - tau * (self.At(y1) + grad_t(y2))
            if self.nonneg:
                xn = np.maximum(xn, 0)
            xbar = 2 * xn - x
            x = xn
        return x


def solver_flags(solver):
    """ "pc" -> --solver pc; "pc+adaptive" -> --solver pc --adaptive; "pc+fixed-steps" -> --fixed-steps."""
    name, _, variant = solver.partition("+")
    return ["--solver", name] + (["--" + variant] if variant else [])


def proxc(args, prox, extra, out_npy=None, log=None):
    cmd = [args.proxc, "solve", prox, "--json"] + extra
    if out_npy:
        cmd += ["-o", out_npy]
    if log:
        cmd += ["--log", log]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in (0,):
        sys.exit("proxc failed: " + " ".join(cmd) + "\n" + r.stderr)
    return json.loads(r.stdout)


def per_iteration(args, folder):
    """The per-iteration table: ProxImaL numpy against proxc, pc and ladmm."""
    print(f"# ms per iteration, {args.size}², ProxImaL's numpy backend against proxc, best of {args.repeat}\n")
    print("| problem | solver | ProxImaL ms | proxc ms | proxc ÷ ProxImaL |\n|---|---|---|---|---|")
    script, setup = os.path.join(folder, "proximal_per_iteration.py"), os.path.join(folder, "proximal_run.py")
    with open(script, "w") as f:
        f.write(PROXIMAL_PER_ITERATION)
    with open(setup, "w") as f:
        f.write(PROXIMAL_SCRIPT)
    for name in args.problems.split(","):
        prox = os.path.join(folder, name + ".prox")
        for solver in ("pc", "ladmm"):
            r = subprocess.run([args.proximal_python, script, folder, name, solver, str(args.repeat), setup],
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit("ProxImaL failed: " + r.stderr)
            px_ms = json.loads(r.stdout.strip().splitlines()[-1])["ms"]
            flags = ["--solver", solver, "--iters", str(args.check_iters), "--eps-abs", "0", "--eps-rel", "0",
                     "--check-every", "100"]
            proxc(args, prox, flags)  # compiles into the cache
            ms = min(proxc(args, prox, flags)["seconds"]["iterate"] for _ in range(args.repeat)) / args.check_iters * 1e3
            print(f"| {name} | {solver} | {px_ms:.2f} | {ms:.3f} | {px_ms / ms:.0f}× |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--proxc", default="build/release/tools/proxc/proxc")
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--problems", default="tv,deconv,inpaint")
    ap.add_argument("--solvers", default="pc+fixed-steps,pc,ladmm,admm,admm+adaptive")
    ap.add_argument("--proximal-python", default="", help="a Python that imports ProxImaL")
    ap.add_argument("--polish", type=int, default=2000)
    ap.add_argument("--check-iters", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="")
    ap.add_argument("--write-only", action="store_true", help="write the problems and their data, and stop")
    ap.add_argument("--per-iteration", action="store_true",
                    help="only the table of ms per iteration against ProxImaL (needs --proximal-python)")
    args = ap.parse_args()
    args.proxc = os.path.abspath(args.proxc)
    folder = args.out or tempfile.mkdtemp(prefix="proxc_accuracy_")
    os.makedirs(folder, exist_ok=True)
    write_data(folder, args.size)
    if args.write_only:
        print(f"wrote {', '.join(n + '.prox' for n in PROBLEMS)} and their data in {folder}")
        return
    if args.per_iteration:
        if not args.proximal_python:
            sys.exit("--per-iteration needs --proximal-python PY")
        per_iteration(args, folder)
        return
    print(f"# time to an accurate answer, {args.size}², data in {folder}\n")
    for name in args.problems.split(","):
        model = Model(folder, name)
        prox = os.path.join(folder, name + ".prox")
        opt_npy = os.path.join(folder, f"opt_{name}.npy")
        proxc(args, prox, ["--iters", "20000", "--eps-abs", "0", "--eps-rel", "0", "--check-every", "1000"], opt_npy)
        x32 = np.load(opt_npy)
        f32 = model.objective(x32)
        t = time.perf_counter()
        f64 = model.objective(model.polish(x32.astype(np.float64), args.polish))
        fstar = min(f32, f64)
        print(f"## {name}: F* = {fstar:.8g} (proxc 20000 iterations {f32:.8g}, "
              f"float64 polish {args.polish} iterations {f64:.8g}, {time.perf_counter() - t:.0f} s)\n")
        rel = lambda f: (f - fstar) / abs(fstar)

        print("| solve | iterations | iterate s | objective | above F* |\n|---|---|---|---|---|")
        px_row = None
        if args.proximal_python:
            script = os.path.join(folder, "proximal_run.py")
            with open(script, "w") as f:
                f.write(PROXIMAL_SCRIPT)
            r = subprocess.run([args.proximal_python, script, folder, name], capture_output=True, text=True)
            if r.returncode == 0:
                secs = json.loads(r.stdout.strip().splitlines()[-1])["seconds"]
                f = model.objective(np.load(os.path.join(folder, f"proximal_{name}.npy")))
                px_row = (secs, f)
                print(f"| ProxImaL default (pc) | | {secs:.3f} | {f:.8g} | {rel(f):.2e} |")
            else:
                print(f"| ProxImaL default | failed: {r.stderr.strip().splitlines()[-1] if r.stderr else ''} | | | |")
        for solver in args.solvers.split(","):
            out = os.path.join(folder, f"default_{name}_{solver}.npy")
            proxc(args, prox, solver_flags(solver), out)  # compiles into the cache
            best = None
            for _ in range(args.repeat):
                d = proxc(args, prox, solver_flags(solver), out)
                best = d if best is None or d["seconds"]["iterate"] < best["seconds"]["iterate"] else best
            f = model.objective(np.load(out))
            speed = f" ({px_row[0] / best['seconds']['iterate']:.0f}× sooner than ProxImaL)" if px_row else ""
            print(f"| proxc {' '.join(solver_flags(solver))} | {best['iterations']} | {best['seconds']['iterate']:.3f}{speed} "
                  f"| {f:.8g} | {rel(f):.2e} |")
        print()

        print("| solver | iterations to 1e-3 | s | iterations to 1e-4 | s |\n|---|---|---|---|---|")
        for solver in args.solvers.split(","):
            log = os.path.join(folder, f"log_{name}_{solver}.csv")
            proxc(args, prox, solver_flags(solver) + ["--iters", "3000", "--eps-abs", "0", "--eps-rel", "0",
                               "--check-every", "10"], os.path.join(folder, "tmp.npy"), log)
            with open(log) as fh:
                rows = list(csv.DictReader(fh))
            cells = []
            for tol in (1e-3, 1e-4):
                k = next((int(r["iteration"]) for r in rows if rel(float(r["objective"])) <= tol), None)
                if k is None:
                    cells += ["> 3000", ""]
                    continue
                secs = min(proxc(args, prox, solver_flags(solver) + ["--iters", str(k), "--eps-abs", "0", "--eps-rel", "0",
                                              "--check-every", "10"])["seconds"]["iterate"]
                           for _ in range(args.repeat))
                cells += [str(k), f"{secs:.3f}"]
            print(f"| {solver} | " + " | ".join(cells) + " |")
        print()

        print(f"| solver | ms/it, check every 1000 | every 10 | every 1 | every 1 ÷ every 1000 |\n|---|---|---|---|---|")
        for solver in [v for v in args.solvers.split(",") if "+" not in v]:
            ms = {}
            for c in (1000, 10, 1):
                ms[c] = min(proxc(args, prox, solver_flags(solver) + ["--iters", str(args.check_iters), "--eps-abs", "0",
                                               "--eps-rel", "0", "--check-every", str(c)])["seconds"]["iterate"]
                            for _ in range(args.repeat)) * 1e3 / args.check_iters
            print(f"| {solver} | {ms[1000]:.3f} | {ms[10]:.3f} | {ms[1]:.3f} | {ms[1] / ms[1000]:.2f} |")
        print()


if __name__ == "__main__":
    main()

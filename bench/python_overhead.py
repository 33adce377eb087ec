"""What a solve from Python costs beyond the CLI's: the same 512x512 problems
solved by `proxc solve` (its JSON summary's iterate time) and from Python
(wall time of Problem.solve, and the iterate time inside it), in one run.

    python3 bench/python_overhead.py --cli build/release/tools/proxc/proxc [--size 512] [--iters 200]

Run in the environment where `pip install .` put the package. Prints a table:
ms per iteration from the CLI, from Python (iterate time), Python's whole
solve() per iteration, and their ratios, the last against the CLI's own solve
phases (passes, compile from its cache, iterate). Both use proxc's stopping
rule (the CLI's), every check at the same iterations.
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

import numpy as np

import proxc
from proxc import Problem, Variable, conv, grad, group_norm1, mul_elemwise, nonneg, sum_squares

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--cli", required=True, help="the proxc command of a release build")
parser.add_argument("--size", type=int, default=512)
parser.add_argument("--iters", type=int, default=200)
parser.add_argument("--repeat", type=int, default=3)
args = parser.parse_args()

n = args.size
rng = np.random.default_rng(0)
clean = np.zeros((n, n), np.float32)
clean[n // 4:3 * n // 4, n // 3:2 * n // 3] = 0.8
noisy = (clean + 0.1 * rng.standard_normal(clean.shape)).astype(np.float32)
t = np.arange(9) - 4
g = np.exp(-t ** 2 / 8.0)
k = (np.outer(g, g) / np.outer(g, g).sum()).astype(np.float32)
mask = (rng.random(clean.shape) < 0.5).astype(np.float32)
observed = (mask * noisy).astype(np.float32)

problems = {
    "tv_denoise": ("minimize sum_squares(x - b) + 0.1 * group_norm1(grad(x), [2]) + nonneg(x)", {"b": noisy},
                   lambda x: sum_squares(x - noisy) + 0.1 * group_norm1(grad(x), [2]) + nonneg(x)),
    "tv_deconv": ("minimize sum_squares(conv(k, x) - b) + 0.001 * group_norm1(grad(x), [2]) + nonneg(x)",
                  {"b": noisy, "k": k},
                  lambda x: sum_squares(conv(k, x) - noisy) + 0.001 * group_norm1(grad(x), [2]) + nonneg(x)),
    "inpaint": ("minimize sum_squares(mul_elemwise(m, x) - b) + 0.05 * group_norm1(grad(x), [2])",
                {"b": observed, "m": mask},
                lambda x: sum_squares(mul_elemwise(mask, x) - observed) + 0.05 * group_norm1(grad(x), [2])),
}

print(f"{n}x{n}, pc, {args.iters} iterations, checked every 10, best of {args.repeat}")
print("| problem | CLI ms/it | Python ms/it (iterate) | Python solve() ms/it (wall) | iterate ratio | wall / CLI iterate |"
      " wall / CLI passes+compile+iterate |")
print("|---|---|---|---|---|---|---|")
with tempfile.TemporaryDirectory() as d:
    for name, (objective, data, build) in problems.items():
        lines = []
        for key, a in data.items():
            np.save(os.path.join(d, f"{key}.npy"), a)
            lines.append(f'{key} = load("{key}.npy")')
        path = os.path.join(d, f"{name}.prox")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\nx = variable(shape(b))\n" + objective + "\n")
        cli = []
        for _ in range(args.repeat):
            out = subprocess.run([args.cli, "solve", path, "--iters", str(args.iters), "--eps-abs", "0", "--eps-rel",
                                  "0", "--check-every", "10", "--json", "-o", os.path.join(d, "x.npy")],
                                 capture_output=True, text=True, check=True).stdout
            s = json.loads(out)
            t = s["seconds"]
            cli.append((t["iterate"], t["passes"] + t["compile"] + t["iterate"]))
        x = Variable(noisy.shape)
        prob = Problem(build(x))
        py_it, py_wall = [], []
        for _ in range(args.repeat + 1):
            t0 = time.perf_counter()
            prob.solve(max_iters=args.iters, eps_abs=0, eps_rel=0, conv_check=10, proximal_stopping=False)
            py_wall.append(time.perf_counter() - t0)
            py_it.append(prob.summary.iterate_s)
        py_it, py_wall = py_it[1:], py_wall[1:]  # the first compiles
        c = 1e3 * min(t[0] for t in cli) / args.iters
        c_solve = 1e3 * min(t[1] for t in cli) / args.iters
        p, w = (1e3 * min(v) / args.iters for v in (py_it, py_wall))
        print(f"| {name} | {c:.3f} | {p:.3f} | {w:.3f} | {p / c:.3f} | {w / c:.3f} | {w / c_solve:.3f} |")

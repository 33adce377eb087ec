"""What a split of the user's own costs from Python: Problem(psi_fns=, omega_fns=)
hands its roles to the C++ split pass (PassOptions::roles), on the problem in
memory. Before 2026-12-06 the package printed the absorbed problem as JSON with
its data inline, set the roles in the text and parsed it back; that path is
reproduced here, in the same run, and the two problems are checked equal.

    python3 bench/user_split.py [--sizes 512,2048] [--repeat 3]

Run in the environment where `pip install .` put the package. Prints seconds per
split (best of --repeat) of TV deconvolution's data term as omega, for pc.
"""
import argparse
import json
import time

import numpy as np

from proxc import Problem, Variable, conv, grad, group_norm1, nonneg, sum_squares
import proxc._proxc as _proxc

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--sizes", default="512,2048")
parser.add_argument("--repeat", type=int, default=3)
args = parser.parse_args()


def best(f):
    times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times), out


def as_json(p, roles):
    """The path before 2026-12-06: absorb, print with data inline, roles set, parse back."""
    absorbed = _proxc.run_passes(p._native, ["absorb"], "pc")
    d = json.loads(absorbed.print("json", "", True))
    for term, role in zip(d["terms"], roles):
        term["role"] = role
        if role == "omega" and term["function"] == "sum_squares":
            term["function"] = "least_squares"
    d["passes_run"] = d["passes_run"] + ["split"]
    d["solver"] = "pc"
    return _proxc.parse_problem_json(json.dumps(d), "<omega_fns>")


print("| size | split pass with roles, s | as JSON (before), s | ratio |")
print("|---|---|---|---|")
for n in (int(s) for s in args.sizes.split(",")):
    rng = np.random.default_rng(0)
    b = rng.random((n, n)).astype(np.float32)
    k = np.full((7, 7), 1 / 49, np.float32)
    x = Variable((n, n))
    data, prior, positive = sum_squares(conv(k, x) - b), 0.001 * group_norm1(grad(x), [2]), nonneg(x)
    p = Problem([data, prior, positive], omega_fns=[data])
    t_new, native = best(lambda: p._split_native("pc"))
    t_old, old = best(lambda: as_json(p, ["omega", "psi", "psi"]))
    assert old.print("text", "", False) == native.print("text", "", False), "the two splits differ"
    print(f"| {n}² | {t_new:.4f} | {t_old:.3f} | {t_old / t_new:.0f}× |")

"""What a convergence check costs: ms per iteration of a solve checked every
iteration against one checked only at its end (--check-every 1000), per
solver, for one or more builds of proxc, the runs of all builds interleaved
(the machine is shared: each figure is the best of --repeat, and ratios are
taken within one run of this script).

    python3 bench/check_cost.py PROBLEM.prox [--solvers pc,ladmm]
        [--iters 1000] [--repeat 5] [--build NAME=DIR ...]

A build is a folder holding the `proxc` binary (and, for a copy of a build
tree, its `libproxc.so.*`, found through LD_LIBRARY_PATH); the default is
the release build, build/release/tools/proxc. Times are the solve's own
`seconds.iterate` from --json (compiled pipelines come from the cache after
the first run), so parsing, passes and compiles are left out.

The 512² problems of bench/accuracy.py are written by
`python3 bench/accuracy.py --out DIR --write-only` (DIR/tv.prox, deconv.prox,
inpaint.prox).
"""
import argparse
import json
import os
import subprocess


def iterate_seconds(build, prox, solver, iters, every):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = build + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    cmd = [os.path.join(build, "proxc"), "solve", prox, "--solver", solver, "--iters", str(iters),
           "--eps-abs", "0", "--eps-rel", "0", "--check-every", str(every), "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    return json.loads(out)["seconds"]["iterate"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("problem")
    ap.add_argument("--solvers", default="pc,ladmm")
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--build", action="append", default=[], help="NAME=DIR (repeatable)")
    args = ap.parse_args()
    builds = dict(b.split("=", 1) for b in args.build) or {"release": "build/release/tools/proxc"}
    builds = {name: os.path.abspath(d) for name, d in builds.items()}
    print(f"# {os.path.basename(args.problem)}, {args.iters} iterations, best of {args.repeat}\n")
    print("| solver | build | ms/it, check every 1000 | every 1 | every 1 ÷ every 1000 |\n|---|---|---|---|---|")
    for solver in args.solvers.split(","):
        best = {}
        for _ in range(args.repeat):
            for name, d in builds.items():
                for every in (1, 1000):
                    t = iterate_seconds(d, args.problem, solver, args.iters, every)
                    best[(name, every)] = min(best.get((name, every), t), t)
        for name in builds:
            every1, every1000 = (best[(name, e)] * 1e3 / args.iters for e in (1, 1000))
            print(f"| {solver} | {name} | {every1000:.3f} | {every1:.3f} | {every1 / every1000:.2f} |", flush=True)


if __name__ == "__main__":
    main()

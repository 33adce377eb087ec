"""Strong and weak scaling of `proxc solve --distributed` over MPI ranks on
this machine, the halo bytes against the bytes each rank computes on, and a
model of the efficiency at 16, 64 and 256 ranks on a cluster network,
checked against the points measured here.

    python3 bench/distributed.py [--proxc build/release/tools/proxc/proxc]
        [--size 2048] [--iters 200] [--ranks 1 2 4] [--threads 1]
        [--latency-us 2] [--bandwidth-gbs 12.5]

Every rank runs Halide with --threads threads (HL_NUM_THREADS), so that N
ranks use N × threads cores: on a machine of C cores, points with more ranks
than C / threads are oversubscribed and say so. The problem: isotropic TV
denoising with nonneg (pc), 200 iterations, no checks but the last (the
default check every 10 iterations is kept: --check-every). Times are rank 0's
iterate seconds from --json (the ranks wait for each other at every
exchange, so rank 0's time is the slowest rank's, to a message).

The model, per run of the iteration on N ranks of an H × W problem:
    T(N) = t_row · (H / N + 2 g)            the slab and its ghost rows
         + 2 · (alpha + b / beta)           two halo messages of b bytes
         + (1 / C) · ceil(log2 N) · alpha   the sums at a check every C runs
t_row (seconds per row of the slab) is measured on one rank; g and b come
from the run's JSON. alpha and beta are the network's latency and
bandwidth (defaults: 2 us and 12.5 GB/s, a 100 Gb/s InfiniBand link).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np


def write_problem(folder, rows, cols):
    rng = np.random.default_rng(7)
    r = np.arange(rows)[:, None]
    c = np.arange(cols)[None, :]
    clean = ((r // 64 + c // 96) % 2) * 0.6 + 0.2 * r / rows
    b = (clean + rng.normal(0, 0.1, (rows, cols))).astype(np.float32)
    np.save(os.path.join(folder, "b.npy"), b)
    path = os.path.join(folder, "p.prox")
    with open(path, "w") as f:
        f.write('b = load("b.npy")\nx = variable(shape(b))\n'
                "minimize sum_squares(x - b) + 0.1 * group_norm1(grad(x), [2]) + nonneg(x)\n")
    return path


def run(args, prox, ranks, distributed=True):
    env = dict(os.environ, HL_NUM_THREADS=str(args.threads), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = [args.proxc, "solve", prox, "--iters", str(args.iters), "--eps-abs", "0", "--eps-rel", "0", "--json"]
    if distributed:
        cmd.append("--distributed")
        cmd = ["mpirun", "--oversubscribe", "--mca", "btl_vader_single_copy_mechanism", "none",
               "-np", str(ranks)] + cmd
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(" ".join(cmd) + "\n" + out.stdout + out.stderr)
    j = json.loads(out.stdout[out.stdout.index("{"):])
    return j


def model(t_row, rows, ranks, g, halo_bytes, alpha, beta, check_every):
    compute = t_row * (rows / ranks + (2 * g if ranks > 1 else 0))
    halo = 2 * (alpha + (halo_bytes / 2) / beta) if ranks > 1 else 0
    sums = math.ceil(math.log2(ranks)) * alpha / check_every if ranks > 1 else 0
    return compute + halo + sums


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--proxc", default="build/release/tools/proxc/proxc")
    p.add_argument("--size", type=int, default=2048)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--latency-us", type=float, default=2.0)
    p.add_argument("--bandwidth-gbs", type=float, default=12.5)
    args = p.parse_args()
    cores = os.cpu_count()
    alpha, beta = args.latency_us * 1e-6, args.bandwidth_gbs * 1e9
    n = args.size
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "strong"))
        prox = write_problem(os.path.join(tmp, "strong"), n, n)
        single = run(args, prox, 1, distributed=False)
        per_it = lambda j: j["seconds"]["iterate"] / j["iterations"]
        print(f"{n}x{n} TV denoising (pc), {args.iters} iterations, {args.threads} thread(s) per rank, "
              f"{cores} cores here")
        print(f"one process, no --distributed: {1e3 * per_it(single):.2f} ms per iteration")
        print("\nstrong scaling (the same image on N ranks)")
        print(f"{'ranks':>5} {'ms/it':>8} {'speed-up':>8} {'eff.':>6} {'ghost':>5} {'halo B/run':>10} "
              f"{'slab B/run':>10} {'comm. %':>7} {'model ms':>8}")
        base = None
        t_row = None
        for r in args.ranks:
            j = run(args, prox, r)
            d = j["distributed"]
            t = per_it(j)
            if base is None:
                base = t
                t_row = t / n
            g, halo = d["ghost_rows"], d["halo_bytes_per_run"]
            floats_per_pixel = halo / (2 * g * n * 4) if g > 0 else 0
            slab_bytes = (n / r + 2 * g) * n * 4 * floats_per_pixel * 2  # state read and written once
            m = model(t_row, n, r, g, halo, 0, float("inf"), 10)  # here: shared memory, compute term only
            over = " (oversubscribed)" if r * args.threads > cores else ""
            print(f"{r:>5} {1e3 * t:>8.2f} {base / t:>8.2f} {base / t / r:>6.2f} {g:>5} {halo:>10.0f} "
                  f"{slab_bytes:>10.0f} {100 * d['communicate_seconds'] / j['seconds']['iterate']:>7.1f} "
                  f"{1e3 * m:>8.2f}{over}")
        print("\nweak scaling (N ranks of " + f"{n // 2} rows × {n} columns each)")
        print(f"{'ranks':>5} {'rows':>6} {'ms/it':>8} {'eff.':>6} {'comm. %':>7}")
        weak_base = None
        for r in args.ranks:
            folder = os.path.join(tmp, f"weak{r}")
            os.makedirs(folder)
            j = run(args, write_problem(folder, r * n // 2, n), r)
            t = per_it(j)
            weak_base = weak_base or t
            over = " (oversubscribed)" if r * args.threads > cores else ""
            print(f"{r:>5} {r * n // 2:>6} {1e3 * t:>8.2f} {weak_base / t:>6.2f} "
                  f"{100 * j['distributed']['communicate_seconds'] / j['seconds']['iterate']:>7.1f}{over}")
        # The model on a cluster: ranks of this machine's per-row speed, alpha and beta of the network.
        g = 3
        floats_per_pixel = 5  # x, xbar, y of grad (2), y of nonneg: what pc exchanges here
        print(f"\nmodel on a cluster network (latency {args.latency_us} us, {args.bandwidth_gbs} GB/s; "
              f"t_row {1e6 * t_row:.2f} us per {n} columns from the 1-rank run, scaled by columns)")
        print(f"{'problem':>14} {'ranks':>5} {'rows/rank':>9} {'ms/it':>8} {'efficiency':>10}")
        for rows, cols in [(16384, 16384), (65536, 16384)]:
            tr = t_row * cols / n
            halo = 2 * g * cols * 4 * floats_per_pixel
            t1 = model(tr, rows, 1, g, halo, alpha, beta, 10)
            for r in [16, 64, 256]:
                t = model(tr, rows, r, g, halo, alpha, beta, 10)
                print(f"{rows:>6}x{cols:<7} {r:>5} {rows // r:>9} {1e3 * t:>8.3f} {t1 / (r * t):>10.2f}")


if __name__ == "__main__":
    main()

"""The same solves by two builds of the proxc command, and how far apart
their results are: ProxImaL's conformance solve cases (50 iterations, as
ProxImaL ran them) and every example whose data is there (30 iterations),
each result an .npy file named by its case.

    python compare_runs.py run PROXC WORK OUT   # solves with the command PROXC into OUT
    python compare_runs.py compare A B           # fails unless A's and B's results agree

WORK holds examples/ (with the data proxc_make_example_data makes),
conformance/ (ProxImaL's cases) and plugins/ (the examples' C++ operators):
every example and every conformance solve case is solved, or it is an error. scripts/test-wheel.sh
runs the source build's command outside the bare root and the wheel's inside.
"""
import json
import subprocess
import sys
from pathlib import Path


# Results agree when every entry is within this of the other build's (float32
# iterates of different compilers' host code: the conformance cases' own
# tolerance, 1e-4, is what both must meet against ProxImaL).
ABS_TOL = 1e-5
EXAMPLE_ITERS = 30


def cases(work, out):
    """(name, .prox file, extra arguments) of every solve to compare."""
    found = []
    conformance = work / "conformance"
    for c in json.loads((conformance / "cases.json").read_text()):
        if c["kind"] != "solve":
            continue
        # The case's data paths are relative to its folder, which may be read-only: the file goes to OUT.
        text = c["problem"].replace('load("data/', f'load("{conformance}/data/')
        path = out / "cases" / f"{c['id']}.prox"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
        found.append((c["id"], path, ["--solver", c["solver"], "--iters", str(c["max_iters"]), "--eps-abs",
                                      str(c["eps_abs"]), "--eps-rel", str(c["eps_rel"]), "--fixed-steps",
                                      "--allow-path", str(conformance)]))
    for path in sorted((work / "examples").rglob("*.prox")):
        text = path.read_text()
        loads = [line.split('load("', 1)[1].split('"', 1)[0] for line in text.splitlines() if 'load("' in line]
        absent = [f for f in loads if not (path.parent / f.split(":")[0]).exists()]
        if absent:
            raise FileNotFoundError(f"{path}: its data {absent} are not there (proxc_make_example_data makes them)")
        args = ["--iters", str(EXAMPLE_ITERS), "--eps-abs", "0", "--eps-rel", "0"]
        if "black_box(" in text:
            # The example's C++ operator (examples/plugins), built by the source build.
            plugins = sorted((work / "plugins").glob("*.so"))
            if not plugins:
                raise FileNotFoundError(f"{path} calls a black box, and {work / 'plugins'} has no plugin")
            args = [a for p in plugins for a in ("--plugin", str(p))] + args
        name = str(path.relative_to(work / "examples").with_suffix("")).replace("/", "_")
        found.append((f"example_{name}", path, args))
    return found


def run_all(proxc, work, out):
    out.mkdir(parents=True, exist_ok=True)
    for name, path, args in cases(work, out):
        # (--plugin goes before the command's name; every other option after.)
        plugin = [a for i, a in enumerate(args) if a == "--plugin" or (i and args[i - 1] == "--plugin")]
        rest = [a for a in args if a not in plugin]
        p = subprocess.run([proxc, *plugin, "solve", str(path), *rest, "-o", str(out / f"{name}.npy"), "--json"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"{proxc} solve {path} {' '.join(args)}: exit {p.returncode}\n{p.stderr[-2000:]}")
        (out / f"{name}.json").write_text(p.stdout)


def compare(a, b):
    """A line saying how far apart the results of a and b are; AssertionError beyond ABS_TOL."""
    import numpy as np  # (only here: `run` needs no NumPy)
    names = sorted(f.stem for f in a.glob("*.npy"))
    assert names and names == sorted(f.stem for f in b.glob("*.npy")), (names, sorted(b.glob("*.npy")))
    worst, identical, far = 0.0, 0, []
    for n in names:
        x, y = np.load(a / f"{n}.npy"), np.load(b / f"{n}.npy")
        assert x.shape == y.shape, f"{n}: shapes {x.shape} and {y.shape}"
        d = float(np.max(np.abs(x.astype(np.float64) - y))) if x.size else 0.0
        identical += d == 0
        worst = max(worst, d)
        if not d <= ABS_TOL:
            far.append(f"{n}: {d:.3g}")
    assert not far, f"results differ beyond {ABS_TOL}: {', '.join(far)}"
    return f"({len(names)} solves: {identical} bit-identical, the largest difference {worst:.3g})"


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run_all(sys.argv[2], Path(sys.argv[3]).resolve(), Path(sys.argv[4]).resolve())
    else:
        print(compare(Path(sys.argv[2]), Path(sys.argv[3])))

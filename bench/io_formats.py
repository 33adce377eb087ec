"""What reading and writing a z-stack costs in each format proxc reads:
proxc.load_array against NumPy's and h5py's own readers, in one run.

    python3 bench/io_formats.py [--depth 64] [--size 512] [--repeat 5]

Run where `pip install .` put the package, with h5py installed. A float32
stack (depth, size, size) is written as .npy, a multi-page TIFF, an .npz
member (stored and deflated) and an HDF5 dataset (contiguous, and gzip
chunks of one slice); each is read `--repeat` times and the median printed
in ms. Then writes: .npy, a new HDF5 file, and a dataset added to the HDF5
file above (proxc writes a private copy, which libhdf5 closes, then
replaces the file whole).
"""
import argparse
import statistics
import tempfile
import time

import h5py
import numpy as np

import proxc


def median_ms(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--depth", type=int, default=64)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    d = tempfile.mkdtemp()
    a = np.random.default_rng(0).random((args.depth, args.size, args.size), dtype=np.float32)
    np.save(f"{d}/s.npy", a)
    proxc.save_array(f"{d}/s.tif", a)
    np.savez(f"{d}/s.npz", x=a)
    np.savez_compressed(f"{d}/sc.npz", x=a)
    with h5py.File(f"{d}/s.h5", "w") as f:
        f["c"] = a
        f.create_dataset("g", data=a, compression="gzip", compression_opts=4, chunks=(1, args.size, args.size))

    def h5(name):
        with h5py.File(f"{d}/s.h5") as f:
            return f[name][...]

    rows = [
        ("npy", f"{d}/s.npy", lambda: np.load(f"{d}/s.npy")),
        ("tif, one page a slice", f"{d}/s.tif", None),
        ("npz, stored", f"{d}/s.npz:x", lambda: np.load(f"{d}/s.npz")["x"]),
        ("npz, deflated", f"{d}/sc.npz:x", lambda: np.load(f"{d}/sc.npz")["x"]),
        ("h5, contiguous", f"{d}/s.h5:/c", lambda: h5("c")),
        ("h5, gzip chunks", f"{d}/s.h5:/g", lambda: h5("g")),
    ]
    mib = a.nbytes / 2**20
    print(f"{args.depth} x {args.size} x {args.size} float32 ({mib:.0f} MiB), median of {args.repeat}, ms")
    print(f"{'read':24} {'proxc':>8} {'numpy/h5py':>11} {'ratio':>6}")
    for name, path, reference in rows:
        assert np.array_equal(np.asarray(proxc.load_array(path)), a), name
        tp = median_ms(lambda: proxc.load_array(path), args.repeat)
        tr = median_ms(reference, args.repeat) if reference else float("nan")
        print(f"{name:24} {tp:8.1f} {tr:11.1f} {tp / tr:6.1f}")
    print(f"{'write':24} {'proxc':>8}")
    for name, path in [("npy", f"{d}/o.npy"), ("h5, a new file", f"{d}/o.h5:/r"), ("h5, into the file above", f"{d}/s.h5:/r")]:
        print(f"{name:24} {median_ms(lambda: proxc.save_array(path, a), args.repeat):8.1f}")


if __name__ == "__main__":
    main()

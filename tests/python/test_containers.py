"""A 3-D problem reads its data from a multi-page TIFF, an HDF5 dataset
(written by h5py) and an .npz member (written by NumPy) and gives the result
it gives from the same array in .npy; results go to HDF5 datasets that h5py
reads back."""
import subprocess
import sys

import h5py
import numpy as np
import pytest

import proxc

PROBLEM = """b = load("{src}")
x = variable(shape(b))
minimize sum_squares(x - b) + 0.05 * group_norm1(grad(x), [3]) + nonneg(x)
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    d = tmp_path_factory.mktemp("containers")
    rng = np.random.default_rng(3)
    b = rng.random((6, 20, 24)).astype(np.float32)
    np.save(d / "stack.npy", b)
    np.savez_compressed(d / "frames.npz", noisy=b, psf=np.ones((3, 3), np.float32))
    with h5py.File(d / "scan.h5", "w") as f:
        f.create_dataset("/entry/data", data=b.astype(np.float64), compression="gzip", chunks=(1, 20, 24))
        f.create_dataset("/entry/dark", data=np.zeros((20, 24), np.uint16))
    proxc.save_array(d / "stack.tif", b)
    return d, b


def solve(d, src, out):
    (d / "p.prox").write_text(PROBLEM.format(src=src))
    p = proxc.load(d / "p.prox")
    p.solve(max_iters=30, eps_abs=0, eps_rel=0)
    x = p.variables()[0].value
    if out:
        proxc.save_array(d / out, x)
    return np.asarray(x)


@pytest.mark.parametrize("src", ["stack.tif", "frames.npz:noisy", "scan.h5:/entry/data"])
def test_a_container_gives_the_npy_result(stack, src):
    d, b = stack
    np.testing.assert_array_equal(proxc.load_array(d / src), b)
    expected = solve(d, "stack.npy", None)
    np.testing.assert_array_equal(solve(d, src, None), expected)


def test_results_go_into_an_hdf5_file_h5py_reads(stack):
    d, b = stack
    x = solve(d, "scan.h5:/entry/data", "scan.h5:/recon/x")
    with h5py.File(d / "scan.h5", "r") as f:
        np.testing.assert_array_equal(f["/recon/x"][...], x)
        np.testing.assert_array_equal(f["/entry/data"][...], b)  # kept
        assert f["/recon/x"].dtype == np.float32


def test_bad_members_are_clear_errors(stack):
    d, _ = stack
    with pytest.raises(ValueError, match=r"holds 2 arrays \(noisy, psf\); name one"):
        proxc.load_array(d / "frames.npz")
    with pytest.raises(ValueError, match=r"no dataset '/entry/nope' \(it holds /entry/dark, /entry/data"):
        proxc.load_array(f"{d}/scan.h5:/entry/nope")


def test_hdf5_datatypes_convert_by_value_or_are_refused(tmp_path):
    f64 = np.array([[1e-3, 3e38], [-2.5, 7.0]])
    with h5py.File(tmp_path / "t.h5", "w") as f:
        f["f64"] = f64
        f["i64"] = np.array([-(2**40), 5], dtype=np.int64)
        f["u8"] = np.arange(6, dtype=np.uint8).reshape(2, 3)
        f["f16"] = np.array([0.5, 2.0], dtype=np.float16)
        f["big"] = np.array([1e300])
        f["flag"] = np.array([True, False])
        f["text"] = "a string"
        f["table"] = np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")])
    path = str(tmp_path / "t.h5")
    np.testing.assert_array_equal(proxc.load_array(path + ":f64"), f64.astype(np.float32))
    np.testing.assert_array_equal(proxc.load_array(path + ":/i64"), [-(2.0**40), 5.0])
    np.testing.assert_array_equal(proxc.load_array(path + ":u8"), np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(proxc.load_array(path + ":f16"), [0.5, 2.0])
    with pytest.raises(ValueError, match=r"t.h5:/big: entry \(0,\) = 1e\+300 is outside the float32 range"):
        proxc.load_array(path + ":big")
    for name, kind in [("flag", "enum"), ("text", "string"), ("table", "compound")]:
        with pytest.raises(ValueError, match=f"unsupported HDF5 datatype: {kind}"):
            proxc.load_array(f"{path}:{name}")


def test_h5py_works_beside_proxc_in_one_process(tmp_path):
    # proxc's libhdf5 (Debian's) stays in its module: h5py, imported after
    # proxc, keeps its own HDF5, and both read and write the same file.
    code = f"""
import numpy as np, proxc, h5py
path = {str(tmp_path / 'both.h5')!r}
with h5py.File(path, 'w') as f:
    f['a'] = np.arange(6, dtype=np.float32).reshape(2, 3)
a = proxc.load_array(path + ':a')
proxc.save_array(path + ':/b', a * 2)
with h5py.File(path, 'r') as f:
    assert (f['b'][...] == 2 * f['a'][...]).all(), 'h5py reads what proxc wrote'
print('ok')
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


def test_data_outside_the_file_is_refused(tmp_path):
    # An external link, external raw storage and a virtual dataset would each
    # read other files than the one named: proxc reads only the file itself.
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["x"] = np.ones((2, 2), np.float32)
    (tmp_path / "raw.bin").write_bytes(np.ones(4, np.float32).tobytes())
    with h5py.File(tmp_path / "t.h5", "w") as f:
        f["ext"] = h5py.ExternalLink(str(other), "/x")
        f.create_dataset("stored", shape=(4,), dtype="<f4", external=[(str(tmp_path / "raw.bin"), 0, 16)])
        layout = h5py.VirtualLayout(shape=(2, 2), dtype="<f4")
        layout[:] = h5py.VirtualSource(str(other), "x", shape=(2, 2))
        f.create_virtual_dataset("virtual", layout)
    path = str(tmp_path / "t.h5")
    with pytest.raises(ValueError, match="'/ext' is an external link"):
        proxc.load_array(path + ":/ext")
    with pytest.raises(ValueError, match="external files"):
        proxc.load_array(path + ":/stored")
    with pytest.raises(ValueError, match="virtual dataset"):
        proxc.load_array(path + ":/virtual")

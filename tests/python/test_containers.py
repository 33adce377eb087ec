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


# Every storage layout h5py writes, each read as NumPy reads it: contiguous,
# compact, chunked (partial edge chunks, unlimited dimensions, chunks never
# written, a single chunk, the newest chunk indexes of libver="latest"), with
# and without filters.
LAYOUTS = {
    "contiguous": {},
    "chunked": {"chunks": (8, 8)},
    "chunked_unlimited": {"chunks": (8, 8), "maxshape": (None, 24)},
    "chunked_unlimited_both": {"chunks": (5, 7), "maxshape": (None, None)},
    "one_chunk": {"chunks": (20, 24)},
    "gzip": {"chunks": (8, 8), "compression": "gzip", "compression_opts": 9},
    "gzip_shuffle": {"chunks": (8, 8), "compression": "gzip", "shuffle": True},
    "shuffle_fletcher32": {"chunks": (8, 8), "shuffle": True, "fletcher32": True},
    "lzf": {"chunks": (8, 8), "compression": "lzf"},
}


# Every file format version h5py's HDF5 writes (libver: its lowest bound;
# "latest" is the newest the HDF5 inside h5py has).
LIBVERS = ["earliest", "v108", "v110", "v112", "v114", "latest"]


def newest_format_filters_chunks():
    """True when libver="latest" is HDF5 2.0's format, whose layout message
    for filtered chunks the libhdf5 1.10 in proxc cannot read."""
    return h5py.version.hdf5_version_tuple >= (2, 0, 0)


@pytest.mark.parametrize("libver", LIBVERS)
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_hdf5_layout_h5py_writes_loads(tmp_path, layout, libver):
    b = np.random.default_rng(5).random((20, 24)).astype(np.float32)
    path = tmp_path / "l.h5"
    with h5py.File(path, "w", libver=(libver, "latest")) as f:
        f.create_dataset("x", data=b, **LAYOUTS[layout])
    filtered = any(k in LAYOUTS[layout] for k in ("compression", "shuffle", "fletcher32"))
    if layout == "lzf" and not (libver == "latest" and newest_format_filters_chunks()):
        # h5py's own filter, which libhdf5 does not have: refused by name
        with pytest.raises(ValueError, match="l.h5:/x: cannot read the dataset"):
            proxc.load_array(f"{path}:/x")
        return
    if libver == "latest" and filtered and newest_format_filters_chunks():
        # Refused by name, with what to do (docs/python.md).
        with pytest.raises(ValueError, match=r"l.h5:/x: the dataset is stored in a newer HDF5 file format than the "
                                             r"libhdf5 1\.10\.\d+ proxc reads with.*libver=\"v114\" or earlier"):
            proxc.load_array(f"{path}:/x")
        return
    np.testing.assert_array_equal(proxc.load_array(f"{path}:/x"), b)


def test_chunks_never_written_read_as_the_fill_value(tmp_path):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        for name, opts in (("plain", {}), ("gzip", {"compression": "gzip"})):
            d = f.create_dataset(name, shape=(20, 24), dtype="<f4", chunks=(8, 8), fillvalue=7.5, **opts)
            d[:8, :8] = 1.0  # one chunk of nine written
        f.create_dataset("grown", shape=(4, 24), maxshape=(None, 24), chunks=(4, 8), dtype="<i2")
        f["grown"].resize((12, 24))
        f["grown"][8:] = 3
    for name in ("plain", "gzip"):
        want = np.full((20, 24), 7.5, np.float32)
        want[:8, :8] = 1.0
        np.testing.assert_array_equal(proxc.load_array(f"{path}:/{name}"), want, err_msg=name)
    want = np.zeros((12, 24), np.float32)
    want[8:] = 3
    np.testing.assert_array_equal(proxc.load_array(f"{path}:/grown"), want)


def test_compact_datasets_load(tmp_path):
    # h5py's high-level API has no compact layout: its low-level one does.
    b = np.arange(12, dtype=np.float64).reshape(3, 4) - 5.5
    path = tmp_path / "c.h5"
    with h5py.File(path, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        space = h5py.h5s.create_simple(b.shape)
        d = h5py.h5d.create(f.id, b"c", h5py.h5t.IEEE_F64LE, space, dcpl=dcpl)
        d.write(h5py.h5s.ALL, h5py.h5s.ALL, b)
        assert f["c"].id.get_create_plist().get_layout() == h5py.h5d.COMPACT
    np.testing.assert_array_equal(proxc.load_array(f"{path}:/c"), b.astype(np.float32))


@pytest.mark.parametrize("dtype", ["<f2", ">f2", "<f4", ">f4", "<f8", ">f8", "i1", "u1", "<i2", ">i2", "<u2",
                                   ">u2", "<i4", ">i4", "<u4", ">u4", "<i8", ">i8", "<u8", ">u8"])
@pytest.mark.parametrize("chunked", [False, True])
def test_every_number_type_and_byte_order_loads(tmp_path, dtype, chunked):
    rng = np.random.default_rng(6)
    kind = np.dtype(dtype)
    if kind.kind == "f":
        b = rng.standard_normal((6, 5)).astype(kind)
    else:
        info = np.iinfo(kind)
        b = rng.integers(max(info.min, -(2 ** 20)), min(info.max, 2 ** 20), (6, 5)).astype(kind)
        b[0, 0], b[0, 1] = info.min, info.max  # the extremes, float32-rounded as NumPy rounds them
    path = tmp_path / "t.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=b, chunks=(4, 4) if chunked else None)
    np.testing.assert_array_equal(proxc.load_array(f"{path}:/x"), b.astype(np.float32))


# save_array takes h5py's storage keywords; h5py reads back the layout asked
# for, and the values are those of the contiguous default.
@pytest.mark.parametrize("kwargs, chunks, compression, level, shuffle", [
    ({}, None, None, None, False),
    ({"chunks": True}, (24, 64), None, None, False),
    ({"chunks": (10, 7)}, (10, 7), None, None, False),
    ({"compression": "gzip"}, (24, 64), "gzip", 4, False),
    ({"compression": "gzip", "compression_opts": 9, "shuffle": True}, (24, 64), "gzip", 9, True),
    ({"compression": 2, "chunks": (96, 1)}, (96, 1), "gzip", 2, False),
    ({"shuffle": True}, (24, 64), None, None, True),
])
def test_hdf5_outputs_are_stored_as_h5py_keywords_ask(tmp_path, kwargs, chunks, compression, level, shuffle):
    b = np.random.default_rng(7).random((96, 128)).astype(np.float32)
    path = tmp_path / "o.h5"
    proxc.save_array(f"{path}:/g/x", b, **kwargs)
    with h5py.File(path) as f:
        d = f["g/x"]
        assert (d.chunks, d.compression, d.compression_opts, d.shuffle) == (chunks, compression, level, shuffle)
        np.testing.assert_array_equal(d[()], b)
    np.testing.assert_array_equal(proxc.load_array(f"{path}:/g/x"), b)


def test_hdf5_storage_keywords_that_do_not_fit_are_refused(tmp_path):
    b = np.zeros((8, 8), np.float32)
    h5 = f"{tmp_path / 'o.h5'}:/x"
    with pytest.raises(ValueError, match=r"o.h5:/x: the chunk shape \(4, 9\) does not fit the array \(8, 8\)"):
        proxc.save_array(h5, b, chunks=(4, 9))
    with pytest.raises(ValueError, match=r"has 1 axes and the array \(8, 8\) has 2"):
        proxc.save_array(h5, b, chunks=(4,))
    with pytest.raises(ValueError, match="lzf is h5py's own filter"):
        proxc.save_array(h5, b, compression="lzf")
    with pytest.raises(ValueError, match="gzip's level is 1 to 9"):
        proxc.save_array(h5, b, compression="gzip", compression_opts=11)
    with pytest.raises(ValueError, match="need chunks"):
        proxc.save_array(h5, b, chunks=False, compression="gzip")
    with pytest.raises(ValueError, match="o.npy: chunks, gzip and shuffle are HDF5 storage"):
        proxc.save_array(tmp_path / "o.npy", b, compression="gzip")
    assert not list(tmp_path.iterdir())

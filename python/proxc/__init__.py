"""proxc: proximal image optimization compiled by Halide, with ProxImaL's API.

A ProxImaL script runs with its import changed::

    from proxc import *
    x = Variable(b.shape)
    prob = Problem(sum_squares(conv(k, x) - b) + 0.001 * group_norm1(grad(x), [2]) + nonneg(x))
    prob.solve()          # ProxImaL's defaults: pc, 1000 iterations, eps 1e-3, checked every 100
    restored = x.value

docs/python.md lists what it adds (zero-copy results, the GIL released,
no recompilation for new data, callbacks, convergence history, Module,
load/print) and what differs from ProxImaL.
"""
import ctypes as _ctypes
import glob as _glob
import os as _os

from . import _build as _build_info  # noqa: E402
from . import _cpu as _cpu  # noqa: E402

_cpu.require(_build_info.MARCH)

# libproxc's symbols for everyone: pipelines loaded from the on-disk cache
# call its extern stages (FFT solves, black boxes), which a library loaded
# privately, as Python loads extension modules, would hide from them.
for _lib in sorted(_glob.glob(_os.path.join(_os.path.dirname(__file__), "libproxc.so*")))[:1]:
    _ctypes.CDLL(_lib, mode=_ctypes.RTLD_GLOBAL)  # (in a build tree the module finds it by its rpath)

from . import _proxc  # noqa: E402
from .lin_ops import *  # noqa: F401,F403
from .lin_ops import __all__ as _lin_all
from .prox_fns import *  # noqa: F401,F403
from .prox_fns import __all__ as _fn_all
from .problem import Module, Problem, load, parse, SOLVER_NAMES  # noqa: F401
from .plot import plot_convergence  # noqa: F401
from . import utils  # noqa: F401
from . import algorithms  # noqa: F401
from .algorithms import (absorb_lin_op, absorb_offset, admm, can_merge, equil, hqs, ladmm,  # noqa: F401
                         merge_fns, pc)  # (ProxImaL's `from proximal import *` has them)

__version__ = _proxc.version()

#: ProxImaL's implementation names (accepted, ignored: proxc chooses its backend with solve(backend=...)).
Impl = {"numpy": 0, "halide": 1, "pycuda": 2}


def load_array(path):
    """An array from .npy, .png or .tif (float32; PNG scaled to [0, 1])."""
    return _proxc.load_array(str(path))


def save_array(path, array, chunks=None, compression=None, compression_opts=None, shuffle=False):
    """Writes an array (.npy, .png, .tif, "result.h5:/recon"), whole or not at all.

    An HDF5 dataset takes h5py's storage keywords: ``chunks`` (True to have
    them chosen as h5py chooses them, or a tuple), ``compression`` ("gzip",
    or a gzip level 0-9 as h5py takes it), ``compression_opts`` (gzip's
    level, 4 by default) and ``shuffle``. Compression or shuffle without
    ``chunks`` chooses the chunks.
    """
    import numpy as np
    a = np.ascontiguousarray(array, dtype=np.float32)
    if chunks is None and compression is None and compression_opts is None and not shuffle:
        _proxc.save_array(str(path), a)
        return
    level = 0
    if isinstance(compression, (int, np.integer)) and not isinstance(compression, bool):
        if compression_opts is not None:
            raise ValueError("save_array: compression is a gzip level already; compression_opts is not taken with it")
        level = int(compression)
        if not 0 <= level <= 9:
            raise ValueError(f"save_array: compression={level}: a gzip level is 0 to 9")
    elif compression == "gzip":
        level = 4 if compression_opts is None else compression_opts
        if isinstance(level, bool) or not isinstance(level, (int, np.integer)) or not 1 <= level <= 9:
            raise ValueError(f"save_array: compression_opts={compression_opts!r}: gzip's level is 1 to 9")
        level = int(level)
    elif compression is not None:
        raise ValueError(f"save_array: compression={compression!r}: proxc writes gzip (deflate) only; "
                         "lzf is h5py's own filter and szip is not in every libhdf5")
    elif compression_opts is not None:
        raise ValueError("save_array: compression_opts without compression")
    if chunks is False and (level or shuffle):
        raise ValueError("save_array: compression and shuffle need chunks (chunks=False was given)")
    shape = () if chunks is None or isinstance(chunks, bool) else tuple(int(c) for c in chunks)
    _proxc.save_array(str(path), a, list(shape), chunks is True, level, bool(shuffle))


def set_max_memory(size):
    """Sets the process's memory budget, as the CLI's --max-memory: bytes, or
    a string such as "4G" or "512M". A solve, a load or a pass that would
    need more raises MemoryError saying for what, how much and how much is in
    use, before allocating it. Default: the memory the machine had available
    when proxc was imported."""
    if isinstance(size, str):
        size = _proxc.parse_byte_size(size, "set_max_memory")
    if isinstance(size, bool) or int(size) != size or size <= 0:
        raise ValueError(f"set_max_memory: {size!r}: the budget is a positive number of bytes (or \"4G\", \"512M\")")
    _proxc.set_max_array_bytes(int(size))


def max_memory():
    """The process's memory budget in bytes (set_max_memory)."""
    return _proxc.max_array_bytes()


def psnr(x, reference):
    """PSNR in dB, peak 1."""
    import numpy as np
    return _proxc.psnr(np.ascontiguousarray(x, dtype=np.float32), np.ascontiguousarray(reference, dtype=np.float32))


def ssim(x, reference):
    """SSIM (Gaussian window sigma 1.5, K1 0.01, K2 0.03, range 1; docs/cli.md)."""
    import numpy as np
    return _proxc.ssim(np.ascontiguousarray(x, dtype=np.float32), np.ascontiguousarray(reference, dtype=np.float32))


def load_plugin(path):
    """Loads a plugin of black-box operators and prox functions; returns their names."""
    return _proxc.load_plugin(str(path))


__all__ = list(_lin_all) + list(_fn_all) + [
    "Problem", "Module", "load", "parse", "plot_convergence", "Impl", "load_array", "save_array", "psnr", "ssim",
    "set_max_memory", "max_memory",
    "load_plugin", "admm", "pc", "hqs", "ladmm", "absorb_offset", "absorb_lin_op", "can_merge", "merge_fns", "equil",
]

"""The console script `proxc`: runs the proxc command the package carries
(proxc/bin/proxc, the same program as the C++ build's; docs/cli.md) in this
process's place, so that its exit code, signals and output are its own.

A module of its own, outside the package: importing `proxc` loads NumPy,
Halide and libproxc (0.1-0.4 s) that the command loads again itself. It
finds the package without importing it, and checks the processor as the
package's import does (proxc/_cpu.py, read from its file)."""
import importlib.util
import os
import signal
import sys


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def package_dir():
    spec = importlib.util.find_spec("proxc")  # (a top-level package: found, not imported)
    return spec.submodule_search_locations[0] if spec and spec.submodule_search_locations else None


def main():
    here = package_dir()
    exe = os.path.join(here or "", "bin", "proxc")
    if not here or not os.access(exe, os.X_OK):
        sys.stderr.write(f"proxc: the package proxc has no proxc command ({exe} is missing): install it again\n")
        return 2
    try:
        march = _load("_proxc_build", os.path.join(here, "_build.py")).MARCH
        _load("_proxc_cpu", os.path.join(here, "_cpu.py")).require(march)
    except ImportError as e:
        sys.stderr.write(f"proxc: {e}\n")
        return 2
    # Python ignores SIGPIPE and SIGXFSZ for itself; an exec would hand that
    # on, and proxc keeps a signal ignored at its start (as nohup asks).
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    os.execv(exe, ["proxc"] + sys.argv[1:])

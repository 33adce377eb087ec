"""The console script `proxc`: runs the proxc command the package carries
(bin/proxc, the same program as the C++ build's; docs/cli.md), in this
process's place, so that its exit code, signals and output are its own."""
import os
import signal
import sys


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    exe = os.path.join(here, "bin", "proxc")
    if not os.access(exe, os.X_OK):
        sys.stderr.write(f"proxc: this package has no proxc command ({exe} is missing): "
                         "reinstall it (pip install --force-reinstall proxc)\n")
        return 2
    # Python ignores SIGPIPE and SIGXFSZ for itself; an exec would hand that
    # on, and proxc keeps a signal ignored at its start (as nohup asks).
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    os.execv(exe, ["proxc"] + sys.argv[1:])

"""What the installed package carries besides the module: the console script
`proxc` (the C++ build's command, bin/proxc, run in the script's place) and
the processor check that keeps a wheel built for x86-64-v3 from dying of
SIGILL on an older machine. (scripts/test-wheel.sh checks the wheel itself
in a bare Debian root.)"""
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import proxc
import _proxc_cli
from proxc import _cpu

REPO = Path(__file__).resolve().parents[2]


def console_script():
    found = shutil.which("proxc", path=os.path.dirname(sys.executable))
    if not found:
        pytest.fail(f"no console script proxc beside {sys.executable}: the package is not installed")
    return found


def test_the_console_script_is_the_packaged_command():
    r = subprocess.run([console_script(), "--version"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"proxc {proxc.__version__}"
    r = subprocess.run([console_script(), "solve", str(REPO / "examples/deconv_tv.prox"), "--iters", "5",
                        "--eps-abs", "0", "--eps-rel", "0", "--cache-dir", "off"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "after 5 iterations" in r.stdout + r.stderr


def test_the_commands_exit_code_and_messages_are_its_own(tmp_path):
    missing = tmp_path / "nowhere.prox"
    r = subprocess.run([console_script(), "solve", str(missing)], capture_output=True, text=True)
    assert r.returncode == 2
    assert str(missing) in r.stderr and "Traceback" not in r.stderr


def test_the_command_gets_sigpipe_and_sigxfsz_back(monkeypatch):
    # Python ignores both for itself; proxc keeps a signal ignored at its start (nohup), so the
    # script sets them to their defaults before the exec.
    seen = {}

    def fake_execv(path, argv):
        seen["path"], seen["argv"] = path, argv
        seen["pipe"], seen["xfsz"] = signal.getsignal(signal.SIGPIPE), signal.getsignal(signal.SIGXFSZ)
        raise SystemExit(0)

    before = signal.getsignal(signal.SIGPIPE), signal.getsignal(signal.SIGXFSZ)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    monkeypatch.setattr(os, "execv", fake_execv)
    monkeypatch.setattr(sys, "argv", ["proxc", "parse", "x.prox"])
    try:
        with pytest.raises(SystemExit):
            _proxc_cli.main()
    finally:
        signal.signal(signal.SIGPIPE, before[0])
        signal.signal(signal.SIGXFSZ, before[1])
    assert seen["pipe"] == signal.SIG_DFL and seen["xfsz"] == signal.SIG_DFL
    assert seen["argv"] == ["proxc", "parse", "x.prox"]
    assert Path(seen["path"]) == Path(proxc.__file__).parent / "bin" / "proxc"


def test_a_package_without_its_command_says_so(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(_proxc_cli, "package_dir", lambda: str(tmp_path))
    assert _proxc_cli.main() == 2
    assert "has no proxc command" in capsys.readouterr().err


def test_the_console_script_checks_the_processor_before_the_exec(monkeypatch, tmp_path, capsys):
    # A package as installed, whose processor check fails: one line and exit 2, no traceback, no exec.
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "proxc").write_text("#!/bin/sh\nexit 0\n")
    (tmp_path / "bin" / "proxc").chmod(0o755)
    (tmp_path / "_build.py").write_text('MARCH = "x86-64-v3"\n')
    (tmp_path / "_cpu.py").write_text("def require(march):\n    raise ImportError(f'built for {march}, lacks avx2')\n")
    monkeypatch.setattr(_proxc_cli, "package_dir", lambda: str(tmp_path))
    monkeypatch.setattr(os, "execv", lambda *a: pytest.fail("exec'd on a processor that lacks the features"))
    assert _proxc_cli.main() == 2
    assert capsys.readouterr().err == "proxc: built for x86-64-v3, lacks avx2\n"


def test_the_console_script_does_not_import_the_package():
    code = "import sys, _proxc_cli; _proxc_cli.package_dir(); print('proxc' in sys.modules, 'numpy' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.stdout.split() == ["False", "False"], r.stderr


def test_the_processor_check_names_what_is_missing(tmp_path, monkeypatch):
    haswell = ("fpu sse2 ssse3 cx16 sse4_1 sse4_2 popcnt lahf_lm movbe xsave avx f16c fma bmi1 avx2 bmi2 abm")
    sandy_bridge = "fpu sse2 ssse3 cx16 sse4_1 sse4_2 popcnt lahf_lm xsave avx"
    for flags, missing in ((haswell, []), (sandy_bridge, ["avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe"])):
        info = tmp_path / "cpuinfo"
        info.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
        monkeypatch.setattr(_cpu.platform, "machine", lambda: "x86_64")
        assert _cpu.missing_flags("x86-64-v3", info) == missing
        assert _cpu.missing_flags("", info) == []  # a baseline build runs anywhere
    monkeypatch.setattr(_cpu, "missing_flags", lambda march: ["avx2", "fma"])
    with pytest.raises(ImportError, match=r"built for x86-64-v3, and this processor lacks avx2, fma: build it here"):
        _cpu.require("x86-64-v3")
    assert _cpu.needed_flags("x86-64-v4")[-1] == "avx512vl" and "avx2" in _cpu.needed_flags("x86-64-v4")

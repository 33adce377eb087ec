"""Shared fixtures of the Python tests: the conformance cases computed by
ProxImaL (../shared/conformance beside the checkout, or $PROXC_CONFORMANCE)
and the repository's folders; a child Python interrupted by SIGINT."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


def conformance_dir():
    d = os.environ.get("PROXC_CONFORMANCE")
    return Path(d) if d else REPO.parent / "shared" / "conformance"


@pytest.fixture(scope="session")
def conformance():
    d = conformance_dir()
    if not (d / "cases.json").exists():
        pytest.fail(f"the conformance cases are not at {d} (set PROXC_CONFORMANCE)")
    cases = {c["id"]: c for c in json.loads((d / "cases.json").read_text())}

    def load(rel):
        return np.load(d / rel)

    return cases, load


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    # One on-disk pipeline cache for the whole run, away from the user's.
    monkeypatch.setenv("PROXC_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "proxc-cache"))


@pytest.fixture
def interrupted_child():
    """run(code, wait): runs `code` in a child Python, waits for its first line
    of output ('solving'), sends SIGINT `wait` seconds later and returns
    (returncode, stdout + stderr); fails the test if the child goes on for 30 s."""

    def run(code, wait):
        child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
        assert child.stdout.readline().strip() == "solving"
        time.sleep(wait)
        child.send_signal(signal.SIGINT)
        try:
            out, err = child.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            pytest.fail("a solve went on after Ctrl-C")
        return child.returncode, out + err

    return run

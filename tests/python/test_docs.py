"""Every Python block of docs/python.md runs (in order, in one namespace, in a
scratch folder), and every script of examples/python/ runs and writes its
images and plot."""
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO


def test_every_block_of_docs_python_md_runs(tmp_path, monkeypatch):
    text = (REPO / "docs" / "python.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 6
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs__"}
    for i, block in enumerate(blocks):
        try:
            exec(compile(block, f"docs/python.md block {i + 1}", "exec"), namespace)
        except Exception as e:  # noqa: BLE001
            pytest.fail(f"docs/python.md, block {i + 1} fails: {type(e).__name__}: {e}\n{block}")


# The least gain in PSNR each script's restoration shows (dB): the wavelet
# prior (an orthonormal, decimated Haar transform, without cycle spinning) is
# the weaker one.
GAIN = {"denoise_tv.py": 2, "deconv_tv.py": 2, "inpaint.py": 2, "pnp_wavelet.py": 1.5, "colour_crosstalk.py": 4}


@pytest.mark.parametrize("script", sorted(GAIN))
def test_example_scripts(tmp_path, script):
    pytest.importorskip("matplotlib")
    r = subprocess.run([sys.executable, str(REPO / "examples" / "python" / script), "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    stem = script[:-3]
    for name in (f"{stem}.png", f"{stem}_convergence.png"):
        assert (tmp_path / name).stat().st_size > 1000, name
    psnr = re.search(r"PSNR ([\d.]+) dB -> ([\d.]+) dB", r.stdout)
    assert psnr and float(psnr.group(2)) > float(psnr.group(1)) + GAIN[script], r.stdout

"""scripts/device_amx_check.sh, the one run a session with an AMX machine makes, in its smoke mode on this
machine: every step runs or says why not (on a CPU without AMX: the twin checks on the instructions skipped,
naming the reason), and its result files are there. About five minutes of two cores (two CMake builds): slow."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from qnnpy import _core

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_device_script_runs_every_step_or_says_why_not(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(["bash", str(REPO / "scripts" / "device_amx_check.sh")], capture_output=True, text=True,
                          timeout=1800, env={**os.environ, "OUT": str(out), "PYTHON": sys.executable,
                                             "QNNPY_DEVICE_QUICK": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    log = (out / "log.txt").read_text()
    assert "FAILED" not in log and log.rstrip().endswith("done"), log[-3000:]
    kernels = (out / "kernel_tests.txt").read_text()
    assert "twins: all passed" in kernels and "amx_model tiles: " in kernels
    if _core.cpu_has_amx():
        assert "amx gemm: " in kernels and "peak_tdpbusd_gmacs 0.0" not in kernels
    else:
        assert f"SKIPPED, amx unavailable: {_core.amx_unavailable_reason()}" in kernels
    assert " passed" in (out / "pytest.txt").read_text()
    result = json.loads(next(out.glob("*.json")).read_text())
    assert result["qnnpy_isa"] == _core.default_isa()
    assert result["models"]["MobileNetV2"]["1"]["qnnpy runtime"] > 0
    assert "## " in (out / "RESULTS.md").read_text()
    assert len(list(out.iterdir())) <= 8  # what the device tool brings back

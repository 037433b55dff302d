"""The README's install, pip install '.[tvm]' with build isolation (pip's default), gives the fast kernels form.

A throwaway venv sees this environment's packages (torch, apache-tvm, apache-tvm-ffi) through a .pth file,
so pip resolves the [tvm] extra without downloading them; the build itself runs isolated, with its own
build requirements (scikit-build-core, pybind11, apache-tvm-ffi) from the package index, in a fresh
build folder: the whole C++ build, several minutes on two cores, hence `slow`. The default suite checks
the same property on the package scripts/setup.sh installs that way (tests/test_tvm_runners.py).
"""
from __future__ import annotations

import os
import site
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_pip_install_with_the_tvm_extra_builds_the_kernel_library(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    outer = {sysconfig.get_paths()["purelib"], *site.getsitepackages()} | {p for p in sys.path if "site-packages" in p}
    (Path(purelib) / "outer_environment.pth").write_text("\n".join(sorted(outer)) + "\n")
    start = time.perf_counter()
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", f"{REPO}[tvm]", "--config-settings", f"build-dir={tmp_path / 'build'}"],
        capture_output=True, text=True, timeout=1800,
        env={k: v for k, v in os.environ.items() if k != "PIP_NO_BUILD_ISOLATION"})  # pip's default: isolated
    assert install.returncode == 0, install.stderr[-3000:]
    print(f"pip install '.[tvm]' with build isolation: {time.perf_counter() - start:.0f} s")
    check = subprocess.run(
        [str(python), "-P", "-c", "import qnnpy; from qnnpy import tvm_bridge; print(qnnpy.__file__); "
                                  "print(tvm_bridge.default_form())"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert check.returncode == 0, check.stderr[-3000:]
    location, form = check.stdout.split()
    assert location.startswith(purelib)  # the package just built, not this environment's
    assert form == "kernels"

"""The kernel and runtime tests again, against a core built with AddressSanitizer and UBSan.

The extension is built once per machine with ``QNNPY_SANITIZE=address,undefined`` into
build/sanitize (gcc's sanitizers: the C++ core is instrumented, the pybind11 bindings are
not), then a subset of the suite runs against it in a subprocess with gcc's libasan
preloaded, as an uninstrumented Python needs. Any sanitizer report ends that process,
so the subset fails. See docs/fuzzing.md.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Not yet seen passing (the build outlasted the loaded machine it was written on): deselected
# by default until it has been run once (docs/fuzzing.md).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "sanitize"
# The kernel twins (scalar vs AVX2, every kernel) and the packed u8s8 GEMM: the C++ the
# runtime runs, on the edge sizes those tests pick (tails, odd channel counts).
SUBSET = ["tests/test_kernel_twins.py", "tests/test_gemm_u8s8.py"]


def _output(result: subprocess.CompletedProcess) -> str:
    return (result.stdout + result.stderr).decode(errors="replace")[-6000:]


@pytest.fixture(scope="session")
def sanitized_env() -> dict[str, str]:
    """Environment that imports the sanitized qnnpy (build/sanitize/site) with libasan preloaded."""
    libasan = subprocess.run(["c++", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    assert Path(libasan).is_file(), "gcc's libasan.so not found (Debian: apt-get install libasan8, part of g++)"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "--upgrade",
         "--target", str(BUILD / "site"), "-C", f"build-dir={BUILD / 'build'}",
         "-C", "cmake.define.QNNPY_SANITIZE=address,undefined", "-C", "cmake.define.QNNPY_TVM_KERNELS=OFF", str(ROOT)],
        capture_output=True)
    assert build.returncode == 0, f"the sanitized build failed:\n{_output(build)}"
    return {**os.environ, "PYTHONPATH": str(BUILD / "site"), "LD_PRELOAD": libasan,
            # Python and torch leak by design at exit; every other report ends the process.
            "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
            "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}


def test_subprocess_runs_the_sanitized_core(sanitized_env: dict[str, str]):
    probe = ("import qnnpy._core as c; maps = open('/proc/self/maps').read(); "
             "print(c.__file__); print('libasan' in maps, 'libubsan' in maps)")
    result = subprocess.run([sys.executable, "-P", "-c", probe], env=sanitized_env, capture_output=True)
    lines = result.stdout.decode().split()
    assert result.returncode == 0, _output(result)
    assert Path(lines[0]).is_relative_to(BUILD / "site")
    assert lines[1:] == ["True", "True"]


def test_kernel_tests_pass_under_asan_and_ubsan(sanitized_env: dict[str, str]):
    result = subprocess.run([sys.executable, "-P", "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *SUBSET],
                            cwd=ROOT, env=sanitized_env, capture_output=True)
    assert result.returncode == 0, f"{' '.join(SUBSET)} under ASan/UBSan:\n{_output(result)}"

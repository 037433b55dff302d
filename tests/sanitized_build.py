"""The clang build with AddressSanitizer and UBSan that the suite's sanitized C++ checks share
(scripts/build_fuzzers.sh into build/fuzz): the libFuzzer targets (tests/test_fuzzing.py) and
qnnpy_kernel_tests (tests/test_kernel_driver.py) link one instrumented core, compiled once.

Test files run in parallel workers: the build holds a file lock, so a second caller waits for the
first's build and then finds it up to date.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "fuzz"


def missing_clang() -> str | None:
    """Why the sanitized build cannot run here, or None when it can."""
    if shutil.which("clang++") is None:
        return ("clang++ is not installed, so the sanitized build (libFuzzer targets, ASan/UBSan kernel driver) "
                "cannot be made (scripts/setup.sh --test installs clang and libclang-rt-14-dev when run as root)")
    return None


def build() -> Path:
    """Builds (or brings up to date) build/fuzz and returns it: fuzz/fuzz_<target> and qnnpy_kernel_tests. Skips the
    calling test, saying why, where clang is missing."""
    reason = missing_clang()
    if reason:
        pytest.skip(reason)
    BUILD.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    with open(BUILD / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = subprocess.run(["bash", str(ROOT / "scripts" / "build_fuzzers.sh"), str(BUILD)], env=env,
                                capture_output=True)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).decode(errors="replace")
        raise RuntimeError(f"scripts/build_fuzzers.sh exited with {result.returncode}:\n{output[-4000:]}")
    return BUILD

"""Builds and runs qnnpy_kernel_tests, the C++ driver of the kernels and the runtime (no
Python; src/kernel_tests): natively, and cross-compiled for AArch64 and run under qemu-user.

Build directories live in pytest's cache (``.pytest_cache``), so later sessions rebuild only
what changed. The core is compiled with -O1 and as a unity build (16 sources a translation unit: the
headers are parsed once per batch, 40% less compile time) to keep a cold build short.
"""
from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
AARCH64_SYSROOT = Path("/usr/aarch64-linux-gnu")
AARCH64_TOOLCHAIN = REPO / "cmake" / "aarch64-linux-gnu.cmake"
INSTALL_HINT = "scripts/install_cross_tools.sh installs them"
UNITY_BUILD = ["-DCMAKE_UNITY_BUILD=ON", "-DCMAKE_UNITY_BUILD_BATCH_SIZE=16"]


def missing_cross_tools() -> str | None:
    """Why the AArch64 cross build cannot run here, or None when it can."""
    missing = [tool for tool in ("cmake", "aarch64-linux-gnu-g++", "qemu-aarch64") if shutil.which(tool) is None]
    if not AARCH64_SYSROOT.is_dir():
        missing.append(str(AARCH64_SYSROOT))
    return f"missing {', '.join(missing)} ({INSTALL_HINT})" if missing else None


def build_driver(build_dir: Path, cross_aarch64: bool, simd: bool = True) -> Path:
    """Configures (once) and builds qnnpy_kernel_tests in ``build_dir``; returns the executable.
    ``simd=False`` builds the scalar kernels only, as for an architecture without SIMD kernels
    (the sanitized driver is built with the fuzz targets: tests/sanitized_build.py)."""
    if not (build_dir / "CMakeCache.txt").exists():
        args = ["cmake", "-S", str(REPO), "-B", str(build_dir), "-DQNNPY_PYTHON=OFF", "-DQNNPY_KERNEL_TESTS=ON",
                "-DQNNPY_OPT=-O1", "-DCMAKE_BUILD_TYPE=", f"-DQNNPY_SIMD={'ON' if simd else 'OFF'}", *UNITY_BUILD]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        if cross_aarch64:
            args.append(f"-DCMAKE_TOOLCHAIN_FILE={AARCH64_TOOLCHAIN}")
        _check(subprocess.run(args, capture_output=True, text=True), "configure")
    _check(subprocess.run(["cmake", "--build", str(build_dir), "--target", "qnnpy_kernel_tests", "--parallel", "2"],
                          capture_output=True, text=True), "build")
    return build_dir / "qnnpy_kernel_tests"


def _check(done: subprocess.CompletedProcess, step: str) -> None:
    if done.returncode != 0:
        raise RuntimeError(f"qnnpy_kernel_tests {step} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")


def aarch64_command(exe: Path, cpu: str) -> list[str]:
    """The command line running the AArch64 ``exe`` under qemu-user emulating ``cpu``
    (``max``: every extension, sdot included; ``cortex-a53``: Armv8.0, no sdot)."""
    return ["qemu-aarch64", "-cpu", cpu, "-L", str(AARCH64_SYSROOT), str(exe)]


def run(command: list[str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=600)


def write_inputs(path: Path, inputs: list[np.ndarray]) -> None:
    """The driver's input file: the float32 inputs back to back."""
    path.write_bytes(b"".join(np.ascontiguousarray(x, np.float32).tobytes() for x in inputs))


def read_results(path: Path) -> dict[str, np.ndarray]:
    """The driver's result file (format in src/kernel_tests/run_graph.h) as {name: array}."""
    data = path.read_bytes()
    if data[:8] != b"QNNPYRUN":
        raise ValueError(f"{path} is not a qnnpy_kernel_tests result file")
    pos = 8

    def take(fmt: str):
        nonlocal pos
        values = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return values

    def take_string() -> str:
        nonlocal pos
        (size,) = take("I")
        pos += size
        return data[pos - size:pos].decode()

    (count,) = take("I")
    results = {}
    for _ in range(count):
        name, dtype = take_string(), take_string()
        (rank,) = take("I")
        shape = take(f"{rank}q")
        (size,) = take("Q")
        results[name] = np.frombuffer(data, np.dtype(dtype), size // np.dtype(dtype).itemsize, pos).reshape(shape)
        pos += size
    return results

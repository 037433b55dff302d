"""TVM's runtime libraries for another architecture, taken from the PyPI wheels of the TVM version installed here.

A deploy folder for an AArch64 board needs ``libtvm_runtime.so`` (the Relax VM) and ``libtvm_ffi.so`` built
for AArch64, of the same versions as the TVM that compiled the model. apache-tvm and apache-tvm-ffi publish
manylinux AArch64 wheels; the two libraries are extracted from them once and kept in qnnpy's cache
(``$QNNPY_CACHE_DIR``, default ``~/.cache/qnnpy``; 5 MB kept, the apache-tvm wheel is a 95 MB download).
``python -m qnnpy.tvm_bridge.deploy aarch64-linux-gnu`` fetches them ahead (for a machine that is offline later)
and prints their folder.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from qnnpy.cross_targets import cross_target_named

# Each library and the distribution whose wheel holds it.
LIBRARIES = {"libtvm_runtime.so": ("apache-tvm", "tvm/lib/"), "libtvm_ffi.so": ("apache-tvm-ffi", "tvm_ffi/lib/")}


def cache_dir() -> Path:
    """qnnpy's cache folder: ``$QNNPY_CACHE_DIR``, else ``$XDG_CACHE_HOME/qnnpy``, else ``~/.cache/qnnpy``."""
    if os.environ.get("QNNPY_CACHE_DIR"):
        return Path(os.environ["QNNPY_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "qnnpy"


def installed_versions() -> dict[str, str]:
    """The versions of apache-tvm and apache-tvm-ffi installed here (the runtime must match the compiler)."""
    try:
        return {name: metadata.version(name) for name in ("apache-tvm", "apache-tvm-ffi")}
    except metadata.PackageNotFoundError as e:
        raise RuntimeError(f"{e.name} is not installed: pip install 'qnnpy[tvm]'") from e


def runtime_dir(triple: str, progress: Callable[[str], None] | None = None) -> Path:
    """The folder holding ``libtvm_runtime.so`` and ``libtvm_ffi.so`` for ``triple`` (e.g.
    ``"aarch64-linux-gnu"``), of the installed TVM's versions; fetched from PyPI with pip on first use.
    ``progress`` receives a line before the download."""
    platforms = cross_target_named(triple).wheel_platforms
    versions = installed_versions()
    folder = cache_dir() / "tvm-runtime" / triple / "_".join(f"{n}-{v}" for n, v in versions.items())
    if all((folder / name).is_file() for name in LIBRARIES):
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent) as scratch:
        wheels = Path(scratch) / "wheels"
        for distribution, version in versions.items():
            if progress:
                progress(f"fetching {distribution}=={version} for {triple} from PyPI (TVM's runtime for the target)")
            _download_wheel(distribution, version, platforms, wheels)
        extracted = Path(scratch) / "libraries"
        extracted.mkdir()
        for name, (distribution, inside) in LIBRARIES.items():
            _extract(wheels, distribution, inside + name, extracted / name)
        try:
            extracted.rename(folder)  # atomic: a process that fetched it at the same time wins, the same files
        except OSError:
            if not all((folder / name).is_file() for name in LIBRARIES):
                raise
    return folder


def _download_wheel(distribution: str, version: str, platforms: tuple[str, ...], into: Path) -> None:
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
               f"--python-version={sys.version_info.major}.{sys.version_info.minor}", "-d", str(into),
               *(f"--platform={p}" for p in platforms), f"{distribution}=={version}"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"could not fetch the {platforms[0]} wheel of {distribution}=={version} from PyPI "
                           f"(pip download failed: {done.stderr.strip()[-600:]}); on an offline machine, copy the "
                           f"folder {cache_dir() / 'tvm-runtime'} from a machine that fetched it")


def _extract(wheels: Path, distribution: str, member: str, to: Path) -> None:
    prefix = distribution.replace("-", "_") + "-"
    found = [w for w in wheels.glob("*.whl") if w.name.startswith(prefix)]
    if not found:
        raise RuntimeError(f"pip download left no {distribution} wheel in {wheels}")
    with zipfile.ZipFile(found[0]) as wheel, wheel.open(member) as source, open(to, "wb") as target:
        shutil.copyfileobj(source, target)
    to.chmod(0o755)


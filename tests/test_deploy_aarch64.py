"""AArch64 deploy folders (``qnnpy build --target aarch64-linux-gnu``): ResNet-18 at 224x224 compiled for the
board in the integer form (TVM's own code) and the kernels form (qnnpy's kernel library cross-built), copied
elsewhere and run by the folder's runner under qemu-user, on a core with the dot-product instructions
(``-cpu max``) and on one without (``-cpu cortex-a53``): every output equals the x86 runtime's, bit for bit.

TVM's AArch64 runtime comes from the apache-tvm wheels (scripts/setup.sh --test fetches them into qnnpy's cache)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import qnnpy
from kernel_driver import AARCH64_SYSROOT, missing_cross_tools
from qnnpy import cli, zoo

pytest.importorskip("tvm", reason="Apache TVM is not installed: pip install 'qnnpy[tvm]'")
REPO = Path(__file__).resolve().parents[1]
WHY_NOT = missing_cross_tools()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=f"AArch64 deploy folders: {WHY_NOT}")


@pytest.fixture(scope="module")
def resnet18(tmp_path_factory):
    """ResNet-18 saved as a module folder, an input, and the x86 runtime's output under the default profile."""
    directory = tmp_path_factory.mktemp("resnet18")
    x = zoo.calibration_data(1, 1, (3, 224, 224), seed=4)[0]
    module = qnnpy.from_torch(zoo.quantized_resnet18(), (x,))
    module.save(directory / "module")
    np.save(directory / "x.npy", x.numpy())
    np.save(directory / "expected.npy", module.run(x.numpy()).dequantized)
    return directory


def _run_on_board(bundle: Path, cpu: str, inputs: Path, output: Path) -> np.ndarray:
    done = subprocess.run(["qemu-aarch64", "-cpu", cpu, "-L", str(AARCH64_SYSROOT), str(bundle / "run"),
                           "--threads", "2", str(bundle / "model.so"), str(inputs), str(output)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return np.load(output)


def _build(resnet18: Path, out: Path, *options: str) -> None:
    code = cli.main(["build", str(resnet18 / "module"), "-o", str(out), "--target", "aarch64-linux-gnu", *options])
    assert code == cli.EXIT_OK


def test_integer_form_folder_runs_on_cores_with_and_without_dotprod(resnet18, tmp_path):
    expected = np.load(resnet18 / "expected.npy")
    _build(resnet18, tmp_path / "built")
    assert sorted(p.name for p in (tmp_path / "built" / "lib").iterdir()) == ["libtvm_ffi.so", "libtvm_runtime.so"]
    shutil.move(tmp_path / "built", tmp_path / "board")  # the folder finds its libraries wherever it lies
    got = _run_on_board(tmp_path / "board", "max", resnet18 / "x.npy", tmp_path / "y.npy")
    assert got.dtype == np.float32 and np.array_equal(got, expected)

    _build(resnet18, tmp_path / "armv8", "--no-dotprod")
    got = _run_on_board(tmp_path / "armv8", "cortex-a53", resnet18 / "x.npy", tmp_path / "y_a53.npy")
    assert np.array_equal(got, expected)


@pytest.fixture(scope="module")
def aarch64_kernel_library(request) -> Path:
    """scripts/cross_build_tvm_kernels.sh's library, built in pytest's cache (rebuilt only where sources changed)."""
    build_dir = Path(request.config.cache.mkdir("aarch64-tvm-kernels"))
    done = subprocess.run(["bash", str(REPO / "scripts" / "cross_build_tvm_kernels.sh"), str(build_dir)],
                          capture_output=True, text=True, cwd=REPO, timeout=1200,
                          env={**os.environ, "PYTHON": sys.executable})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return Path(done.stdout.strip().splitlines()[-1])


def test_kernels_form_folder_runs_the_kernels_of_each_core(resnet18, aarch64_kernel_library, tmp_path):
    expected = np.load(resnet18 / "expected.npy")
    _build(resnet18, tmp_path / "kernels", "--form", "kernels", "--kernel-library", str(aarch64_kernel_library))
    assert (tmp_path / "kernels" / "lib" / "libqnnpy_tvm_kernels.so").is_file()
    for cpu in ("max", "cortex-a53"):  # neon_dot's sdot kernels, then plain NEON (chosen on the board)
        assert np.array_equal(_run_on_board(tmp_path / "kernels", cpu, resnet18 / "x.npy", tmp_path / f"{cpu}.npy"),
                              expected), cpu


def test_kernels_form_needs_a_kernel_library_for_the_target(resnet18, tmp_path, capsys):
    code = cli.main(["build", str(resnet18 / "module"), "-o", str(tmp_path / "k"), "--target", "aarch64-linux-gnu",
                     "--form", "kernels"])
    assert code == cli.EXIT_USAGE
    assert "needs qnnpy's kernel library built for it" in capsys.readouterr().err
    from qnnpy.tvm_bridge import kernel_form

    code = cli.main(["build", str(resnet18 / "module"), "-o", str(tmp_path / "k"), "--target", "aarch64-linux-gnu",
                     "--form", "kernels", "--kernel-library", kernel_form.kernel_library_path()])
    assert code == cli.EXIT_USAGE
    assert "is not a shared library for aarch64-linux-gnu" in capsys.readouterr().err


def test_cross_options_are_refused_for_the_host(resnet18, tmp_path, capsys):
    code = cli.main(["build", str(resnet18 / "module"), "-o", str(tmp_path / "m.so"), "--no-dotprod"])
    assert code == cli.EXIT_USAGE
    assert "--no-dotprod are options of the cross targets" in capsys.readouterr().err

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


def _run_on_board(bundle: Path, cpu: str, inputs: Path, output: Path, model: str = "model.so") -> np.ndarray:
    """The folder's runner on ``model`` under qemu emulating ``cpu``, two threads; its output."""
    done = subprocess.run(["qemu-aarch64", "-cpu", cpu, "-L", str(AARCH64_SYSROOT), str(bundle / "run"),
                           "--threads", "2", str(bundle / model), str(inputs), str(output)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (model, done.stderr)
    return np.load(output)


def _build(resnet18: Path, out: Path, *options: str) -> None:
    code = cli.main(["build", str(resnet18 / "module"), "-o", str(out), "--target", "aarch64-linux-gnu", *options])
    assert code == cli.EXIT_OK


def _instructions(library: Path) -> list[str]:
    """The mnemonic and operands of every instruction of an AArch64 library."""
    listing = subprocess.run(["aarch64-linux-gnu-objdump", "-d", "--no-show-raw-insn", str(library)],
                             capture_output=True, text=True, check=True).stdout
    return [line.split("\t", 1)[1] for line in listing.splitlines() if line.startswith(" ") and "\t" in line]


def _single_precision_fmas(instructions: list[str]) -> list[str]:
    """Fused multiply-adds on float32 (the integer form's float32 products are kept apart from their adds; its
    float64 ones are exact products, where fusing changes nothing: lowering/rules/elementwise.py)."""
    fused = ("fmla", "fmls", "fmadd", "fmsub", "fnmadd", "fnmsub")
    return [i for i in instructions if i.split()[0] in fused and (".4s" in i or ".2s" in i or " s" in i.split(None, 1)[1])]


def test_integer_form_folder_runs_on_cores_with_and_without_dotprod(resnet18, tmp_path):
    expected = np.load(resnet18 / "expected.npy")
    _build(resnet18, tmp_path / "built")
    assert sorted(p.name for p in (tmp_path / "built" / "lib").iterdir()) == ["libtvm_ffi.so", "libtvm_runtime.so"]
    shutil.move(tmp_path / "built", tmp_path / "board")  # the folder finds its libraries wherever it lies
    got = _run_on_board(tmp_path / "board", "max", resnet18 / "x.npy", tmp_path / "y.npy")
    assert got.dtype == np.float32 and np.array_equal(got, expected)
    code = _instructions(tmp_path / "board" / "model.so")
    assert sum(i.startswith("sdot") for i in code) >= 100  # every conv's and the classifier's GEMM on sdot
    assert not _single_precision_fmas(code)

    _build(resnet18, tmp_path / "armv8", "--no-dotprod")
    got = _run_on_board(tmp_path / "armv8", "cortex-a53", resnet18 / "x.npy", tmp_path / "y_a53.npy")
    assert np.array_equal(got, expected)
    assert not any(i.startswith(("sdot", "udot")) for i in _instructions(tmp_path / "armv8" / "model.so"))


def test_every_gemm_path_with_sdot_equals_the_runtime(tmp_path):
    """Each conv path of the rewrite and the linear GEMM (tests/test_tvm_schedules.py's shapes) and an XNNPACK model
    (int8 activations, packed as they are: sdot's bytes are signed), compiled for AArch64 with dotprod and run
    under qemu -cpu max: the runtime's results bit for bit."""
    from pt2e_models import inputs, pt2e
    from test_tvm_lowering import _op_case
    from test_tvm_schedules import CONVS, _conv_module, _linear_module

    from qnnpy.tvm_bridge.deploy import export_model, write_bundle

    cases = {name: _conv_module(name) for name in sorted(CONVS)}
    cases.update({name: _linear_module(name) for name in ("wide_linear", "linear_on_rank4")})
    cases.update({name: _op_case(name) for name in ("conv_transpose2d", "conv3d")})
    gm = pt2e("resnet18", "xnnpack", shape=(1, 3, 32, 32))
    x = inputs(1, seed=3, shape=(1, 3, 32, 32))[0]
    cases["xnnpack_resnet18"] = (qnnpy.from_torch(gm, (x,)), x.numpy())
    folder = tmp_path / "folder"
    first, *rest = cases
    write_bundle(cases[first][0], folder, profile="fbgemm")
    (folder / "model.so").rename(folder / f"{first}.so")
    for name in rest:
        export_model(cases[name][0], folder / f"{name}.so", profile="fbgemm")
    for name, (module, x) in cases.items():
        np.save(tmp_path / f"{name}_x.npy", np.ascontiguousarray(x, np.float32))
        got = _run_on_board(folder, "max", tmp_path / f"{name}_x.npy", tmp_path / f"{name}_y.npy", f"{name}.so")
        assert np.array_equal(got, module.run(x, profile="fbgemm").dequantized), name
        if "depthwise" not in name:
            assert any(i.startswith("sdot") for i in _instructions(folder / f"{name}.so")), name


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


def test_a_symbolic_length_runs_at_every_length_on_the_board(tmp_path):
    """A torchao W8A8 MLP with a symbolic sequence length: one folder, its runner given inputs of lengths 1, 7 and
    24 (the shapes come from the .npy files), each output the runtime's bit for bit."""
    import torch
    from torchao_models import quantized_mlp

    from qnnpy import DynamicDim
    from qnnpy.tvm_bridge.deploy import write_bundle

    module = qnnpy.from_torch(quantized_mlp("w8a8_dynamic"), (torch.randn(1, 5, 64),),
                              dynamic_dim=DynamicDim(axes=(1,), max=24))
    folder = write_bundle(module, tmp_path / "folder", form="integer")
    for length in (1, 7, 24):
        x = np.random.default_rng(length).standard_normal((1, length, 64)).astype(np.float32)
        np.save(tmp_path / "x.npy", x)
        got = _run_on_board(folder, "max", tmp_path / "x.npy", tmp_path / f"y{length}.npy")
        assert got.shape == (1, length, 64) and np.array_equal(got, module.run(x).dequantized), length

"""The qnnpy command line: exit codes, files written, and what inspect and compare print."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import tvm
from torch import nn
from tvm import relax

import qnnpy
from qnnpy import cli
from qnnpy.convert.input_shapes import expected_input_text
from qnnpy.profiles import profile_for_engine
from qnnpy.model_files import EXPORTED_PROGRAM, PICKLED_MODULE, TORCHSCRIPT, detect_kind
from small_models import Head, quantized

SHAPE = (2, 3, 12, 12)
SHAPE_ARG = ",".join(map(str, SHAPE))
TESTS_DIR = Path(__file__).parent


# The installed command (pip's console script next to this Python), else the module.
QNNPY_COMMAND = ([str(Path(sys.executable).with_name("qnnpy"))] if Path(sys.executable).with_name("qnnpy").exists()
                 else [sys.executable, "-m", "qnnpy"])


def run_qnnpy(*args: str | Path) -> subprocess.CompletedProcess:
    """``qnnpy ARGS`` in a subprocess that imports this qnnpy and can unpickle the test models."""
    package_root = Path(qnnpy.__file__).resolve().parent.parent  # the source tree, or site-packages when installed
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(package_root), str(TESTS_DIR)]))
    return subprocess.run([*QNNPY_COMMAND, *map(str, args)], cwd=package_root, env=env,
                          capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """A quantized CNN saved with torch.save, as TorchScript, as a state_dict; a float model; a converted module."""
    root = tmp_path_factory.mktemp("cli")
    torch.backends.quantized.engine = "fbgemm"
    torch.manual_seed(0)  # Head's weights: the same model whatever ran before in this process
    model, _ = quantized(Head(linear_relu=False), SHAPE[1:])
    paths = {name: root / name for name in ("model.pt", "scripted.pt", "state_dict.pt", "float.pt", "out")}
    torch.save(model, paths["model.pt"])
    torch.jit.save(torch.jit.trace(model, torch.randn(SHAPE)), paths["scripted.pt"])
    torch.save(model.state_dict(), paths["state_dict.pt"])
    torch.save(nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()).eval(), paths["float.pt"])
    assert cli.main(["convert", "--trust-pickle", str(paths["model.pt"]), "-o", str(paths["out"]), "--input-shape", SHAPE_ARG]) == 0
    return paths


# --- in a subprocess, as a user runs it ------------------------------------------

def test_help_summarizes_the_exit_codes_and_version_prints_it():
    result = run_qnnpy("--help")
    assert result.returncode == 0, result.stderr
    assert "exit codes: 0 success, 1 conversion error, 2 usage error, 3 mismatch (compare), 4 input file problem" \
        in result.stdout
    version = run_qnnpy("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"qnnpy {qnnpy.__version__}"


def _exit_codes_listed(help_text: str) -> list[int]:
    section = help_text.split("exit codes:\n")[1]
    return [int(line.split()[0]) for line in section.splitlines() if line.startswith("  ") and line.split()[0].isdigit()]


@pytest.mark.parametrize("command, codes", [("convert", [0, 1, 2, 4]), ("inspect", [0, 2, 4]),
                                            ("compare", [0, 1, 2, 3, 4]), ("build", [0, 1, 2, 4]),
                                            ("generate", [0, 1, 2, 3, 4])])
def test_each_command_lists_its_own_exit_codes(command, codes, capsys):
    assert cli.main([command, "--help"]) == 0
    assert _exit_codes_listed(capsys.readouterr().out) == codes


def test_help_answers_without_importing_torch():
    code = ("import sys, time; t = time.perf_counter(); from qnnpy import cli; cli.build_parser().format_help(); "
            "print('torch' in sys.modules, 'tvm' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=TESTS_DIR)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False"]


def test_convert_then_inspect_then_compare_in_a_subprocess(files, tmp_path):
    out = tmp_path / "module"
    converted = run_qnnpy("convert", "--trust-pickle", files["model.pt"], "-o", out, "--input-shape", SHAPE_ARG)
    assert converted.returncode == 0, converted.stderr
    assert {p.name for p in out.iterdir()} == {"module.py", "graph.qnnpy"}
    assert "loading" in converted.stderr and "saving" in converted.stderr
    assert "@R.function" in (out / "module.py").read_text()

    inspected = run_qnnpy("inspect", out)
    assert inspected.returncode == 0, inspected.stderr
    assert inspected.stdout.strip() == qnnpy.load(out).summary()
    assert "conv2d x1" in inspected.stdout and "linear x1" in inspected.stdout

    compared = run_qnnpy("compare", "--trust-pickle", files["model.pt"], out, "--no-tvm", "--num-inputs", "2")
    assert compared.returncode == 0, compared.stderr
    assert compared.stdout.startswith("2 input(s); % of values bit-identical to PyTorch's x86 engine")
    assert f"runtime profile {profile_for_engine('x86')} (required) vs PyTorch x86: 7/7 layers bit-identical" \
        in compared.stdout
    assert "Warning" not in compared.stderr  # PyTorch's deprecation notices are held back without --debug


@pytest.mark.parametrize("source", ["scripted.pt", "out"])
def test_build_in_a_subprocess_from_torchscript_and_from_a_folder(files, tmp_path, source):
    """The library runs without PyTorch in the module's form: TVM's VM gives qnnpy's runtime's output."""
    extra = ["--input-shape", SHAPE_ARG] if source.endswith(".pt") else []
    built = run_qnnpy("build", files[source], "-o", tmp_path / "lib.so", "--profile", "fbgemm", *extra)
    assert built.returncode == 0, built.stderr
    assert "Warning" not in built.stderr
    vm = relax.VirtualMachine(tvm.runtime.load_module(str(tmp_path / "lib.so")), tvm.cpu())
    x = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
    expected = qnnpy.load(files["out"]).run(x, profile="fbgemm").dequantized
    np.testing.assert_array_equal(vm["main"](tvm.runtime.tensor(x)).numpy(), expected)


def test_error_exit_code_and_one_line_message_in_a_subprocess(tmp_path):
    result = run_qnnpy("convert", tmp_path / "missing.pt", "-o", tmp_path / "out", "--input-shape", SHAPE_ARG)
    assert result.returncode == cli.EXIT_INPUT_FILE
    errors = [line for line in result.stderr.splitlines() if line.startswith("qnnpy: error:")]
    assert errors == [f"qnnpy: error: {tmp_path / 'missing.pt'}: no such file"]
    assert "Traceback" not in result.stderr


# --- in-process, through cli.main ------------------------------------------------

def test_convert_writes_the_same_module_as_from_torch(files, tmp_path):
    assert cli.main(["convert", "--trust-pickle", str(files["model.pt"]), "-o", str(tmp_path), "--input-shape", SHAPE_ARG]) == 0
    direct = qnnpy.from_torch(qnnpy.model_files.load_model_file(files["model.pt"], trust_pickle=True).model, (torch.randn(SHAPE),))
    assert qnnpy.load(tmp_path).graph.serialize() == direct.graph.serialize()


def test_convert_with_a_dynamic_batch(files, tmp_path):
    assert cli.main(["convert", "--trust-pickle", str(files["model.pt"]), "-o", str(tmp_path), "--input-shape",
                     SHAPE_ARG, "--dynamic-batch"]) == 0
    module = qnnpy.load(tmp_path)
    assert module.dynamic_batch and '("batch", ' in (tmp_path / "module.py").read_text()
    x = torch.randn(3, *SHAPE[1:])
    np.testing.assert_array_equal(module.run(x.numpy(), profile="fbgemm").dequantized,
                                  qnnpy.model_files.load_model_file(files["model.pt"], trust_pickle=True).model(x).numpy())


@pytest.mark.parametrize("form", ["kernels", "integer"])
def test_building_a_dynamic_batch_folder_in_a_static_form_names_the_flag(files, tmp_path, capsys, form):
    assert cli.main(["convert", "--trust-pickle", str(files["model.pt"]), "-o", str(tmp_path), "--input-shape",
                     SHAPE_ARG, "--dynamic-batch"]) == 0
    capsys.readouterr()
    assert cli.main(["build", str(tmp_path), "-o", str(tmp_path / "lib.so"), "--form", form]) == cli.EXIT_USAGE
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"qnnpy: error: {tmp_path} has a dynamic batch and --form {form} needs static shapes: give --form qdq "
        "(any batch size), or convert without --dynamic-batch")


@pytest.mark.parametrize("form", ["kernels", "integer"])
def test_a_folder_with_a_symbolic_length_builds_a_library_that_takes_any_length(tmp_path, form):
    from torchao_models import quantized_mlp

    module = qnnpy.from_torch(quantized_mlp("w8a8_dynamic"), (torch.randn(1, 5, 64),),
                              dynamic_dim=qnnpy.DynamicDim(axes=(1,), max=16))
    module.save(tmp_path / "m")
    assert cli.main(["build", str(tmp_path / "m"), "-o", str(tmp_path / "lib.so"), "--form", form]) == 0
    if form == "kernels":
        from qnnpy.tvm_bridge import kernel_form

        kernel_form.load_kernel_library()
    vm = relax.VirtualMachine(tvm.runtime.load_module(str(tmp_path / "lib.so")), tvm.cpu())
    for length in (2, 16):
        x = torch.randn(1, length, 64).numpy()
        np.testing.assert_array_equal(vm["main"](tvm.runtime.tensor(x)).numpy(), module.run(x).dequantized)


def test_pickled_quantized_convs_are_usable_after_loading(files):
    raw = torch.load(files["model.pt"], weights_only=False)
    assert "_modules" not in raw.body.conv.__dict__  # PyTorch's unpickling leaves quantized convs incomplete
    model = qnnpy.model_files.load_model_file(files["model.pt"], trust_pickle=True).model
    x = torch.randn(SHAPE)
    with torch.no_grad():
        assert torch.equal(model(x), torch.jit.load(files["scripted.pt"])(x))  # the same model, traced


def test_convert_torchscript_file(files, tmp_path):
    assert cli.main(["convert", "--trust-pickle", str(files["scripted.pt"]), "-o", str(tmp_path), "--input-shape", SHAPE_ARG]) == 0


def test_file_kinds_are_read_from_the_contents(files, tmp_path):
    renamed = tmp_path / "scripted.pt2"
    renamed.write_bytes(files["scripted.pt"].read_bytes())
    program = torch.export.export(nn.Sequential(nn.Conv2d(3, 4, 3)).eval(), (torch.randn(SHAPE),))
    torch.export.save(program, tmp_path / "exported.pt")
    assert detect_kind(files["model.pt"]) == PICKLED_MODULE
    assert detect_kind(renamed) == TORCHSCRIPT
    assert detect_kind(tmp_path / "exported.pt") == EXPORTED_PROGRAM


def test_a_pt2e_archive_converts_in_a_fresh_process(tmp_path):
    """A .pt2 file of a PT2E model (torch.export.save) calls quantized_decomposed ops: a new process registers them
    before torch.export.load resolves them."""
    from pt2e_models import pt2e

    program = torch.export.export(pt2e("float_ops", "x86"), (torch.randn(1, 3, 32, 32),), strict=True)
    torch.export.save(program, tmp_path / "model.pt2")
    result = run_qnnpy("convert", tmp_path / "model.pt2", "-o", tmp_path / "out", "--input-shape", "1,3,32,32")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "graph.qnnpy").exists()
    assert run_qnnpy("inspect", tmp_path / "out").returncode == 0
    compared = run_qnnpy("compare", tmp_path / "model.pt2", tmp_path / "out", "--num-inputs", "2")
    assert compared.returncode == 0, compared.stderr
    lines = compared.stdout.splitlines()
    assert lines[0].startswith("2 input(s); % of values bit-identical to PyTorch's PT2E reference (float ops "
                               "between quantize and dequantize)")
    assert lines[lines.index("") - 1].split()[1] == "float_linear"  # the table's last row: the float head
    assert "runtime profile fbgemm (required) vs PyTorch PT2E reference: " in compared.stdout
    assert "vs PyTorch PT2E reference: top-1 agrees on 2/2 sample(s); final float output " in lines[-1]


def test_float_exported_program_is_refused_as_a_float_model(tmp_path, capsys):
    program = torch.export.export(nn.Sequential(nn.Conv2d(3, 4, 3)).eval(), (torch.randn(SHAPE),))
    torch.export.save(program, tmp_path / "model.pt2")
    code = cli.main(["convert", "--trust-pickle", str(tmp_path / "model.pt2"), "-o", str(tmp_path / "out"), "--input-shape", SHAPE_ARG])
    assert code == cli.EXIT_CONVERSION
    assert "torch.export program without quantize / dequantize ops: a float model" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_float_model_exits_1_with_the_reason(files, tmp_path, capsys):
    code = cli.main(["convert", "--trust-pickle", str(files["float.pt"]), "-o", str(tmp_path / "out"), "--input-shape", SHAPE_ARG])
    err = capsys.readouterr().err
    assert code == cli.EXIT_CONVERSION
    assert "qnnpy: error: Sequential computes no quantized tensor: it is a float model" in err
    assert not (tmp_path / "out").exists()


class WithUnsupportedOps(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.act = nn.PixelShuffle(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flip(self.act(self.conv(x)), [3])


def test_unsupported_ops_are_listed_on_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS_DIR))  # the pickled class lives in this test module
    model, _ = quantized(WithUnsupportedOps(), SHAPE[1:])
    torch.save(model, tmp_path / "model.pt")
    code = cli.main(["convert", "--trust-pickle", str(tmp_path / "model.pt"), "-o", str(tmp_path / "out"), "--input-shape", SHAPE_ARG])
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("qnnpy: error:")]
    assert code == cli.EXIT_CONVERSION
    assert len(err) == 1
    assert "2 unsupported op(s), none converted: body.act: " in err[0]
    assert "body.flip: torch.flip" in err[0]


@pytest.mark.parametrize("shape", ["2,x,12,12", "2,3,0,12", ""])
def test_bad_shape_string_is_a_usage_error(files, tmp_path, shape, capsys):
    code = cli.main(["convert", "--trust-pickle", str(files["model.pt"]), "-o", str(tmp_path), "--input-shape", shape])
    assert code == cli.EXIT_USAGE
    assert "is not a shape" in capsys.readouterr().err


def test_missing_arguments_are_usage_errors(files):
    assert cli.main(["convert", "--trust-pickle", str(files["model.pt"]), "--input-shape", SHAPE_ARG]) == cli.EXIT_USAGE  # no -o
    assert cli.main(["compare", "--trust-pickle", str(files["model.pt"])]) == cli.EXIT_USAGE
    assert cli.main(["compare", "--trust-pickle", str(files["model.pt"]), str(files["out"]), "--profile", "fast"]) == cli.EXIT_USAGE


def test_an_output_path_of_the_wrong_kind_is_a_usage_error_before_any_work(files, tmp_path, capsys):
    (tmp_path / "a_file").write_text("")
    code = cli.main(["convert", "--trust-pickle", str(files["model.pt"]), "-o", str(tmp_path / "a_file"),
                     "--input-shape", SHAPE_ARG])
    assert code == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "a_file: exists and is a file, not a folder" in err and "loading" not in err
    assert cli.main(["build", str(files["out"]), "-o", str(tmp_path)]) == cli.EXIT_USAGE
    assert "exists and is a folder, not a file" in capsys.readouterr().err
    assert cli.main(["build", str(files["out"]), "-o", str(tmp_path / "lib.so"), "--profile", "fast"]) == cli.EXIT_USAGE
    assert cli.main(["build", str(files["out"]), "-o", str(tmp_path / "a_file" / "lib.so")]) == cli.EXIT_USAGE
    assert "a_file is a file, not a folder" in capsys.readouterr().err
    cli.check_output(tmp_path / "a_file", directory=False)  # an existing file is written again


@pytest.mark.parametrize("model_file", ["model.pt", "scripted.pt"])
@pytest.mark.parametrize("shape", ["2,5,12,12", "2,3,12"])
def test_an_input_shape_the_model_does_not_run_on_is_a_usage_error_naming_the_expected_shape(
        files, tmp_path, capsys, model_file, shape):
    code = cli.main(["convert", "--trust-pickle", str(files[model_file]), "-o", str(tmp_path), "--input-shape", shape])
    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE
    assert (f"qnnpy: error: --input-shape {shape}: the model does not run on inputs of this shape; it expects "
            "(N, 3, H, W), the input of its first layer body.conv (") in err
    assert len(err.strip().splitlines()[-1]) < 400  # one line: the last line of PyTorch's message, no traceback


def test_a_pt2e_models_expected_shape_is_its_exported_one(tmp_path, capsys):
    program = torch.export.export(nn.Sequential(nn.Conv2d(3, 4, 3)).eval(), (torch.randn(SHAPE),))
    model = program.module()
    assert expected_input_text(model) == SHAPE_ARG


@pytest.mark.parametrize("name", ["state_dict.pt", "garbage.pt", "missing.pt"])
def test_unusable_model_files_exit_4(files, tmp_path, name, capsys):
    path = files[name] if name in files else tmp_path / name
    if name == "garbage.pt":
        path.write_text("not a model")
    code = cli.main(["convert", "--trust-pickle", str(path), "-o", str(tmp_path / "out"), "--input-shape", SHAPE_ARG])
    assert code == cli.EXIT_INPUT_FILE
    assert capsys.readouterr().err.count("qnnpy: error:") == 1


def test_build_of_a_missing_path_says_so(tmp_path, capsys):
    assert cli.main(["build", str(tmp_path / "nothere"), "-o", str(tmp_path / "x.so")]) == cli.EXIT_INPUT_FILE
    assert "nothere: no such file or directory" in capsys.readouterr().err


def test_inspect_of_a_folder_without_a_module_exits_4(tmp_path, capsys):
    assert cli.main(["inspect", str(tmp_path)]) == cli.EXIT_INPUT_FILE
    assert "graph.qnnpy not found" in capsys.readouterr().err


def test_compare_under_the_qnnpack_engine_requires_the_qnnpack_profile(files, capsys):
    code = cli.main(["compare", "--trust-pickle", str(files["model.pt"]), str(files["out"]), "--engine", "qnnpack",
                     "--profile", "int32_bias", "--no-tvm"])
    out = capsys.readouterr().out
    assert code == cli.EXIT_OK, out
    assert "runtime profile int32_bias vs PyTorch qnnpack: 7/7 layers bit-identical" in out
    assert "runtime profile qnnpack (required) vs PyTorch qnnpack: 7/7 layers bit-identical" in out


def test_compare_exits_3_when_the_profile_differs_from_the_engine(files, capsys):
    model = qnnpy.model_files.load_model_file(files["model.pt"], trust_pickle=True).model
    inputs = cli.generated_inputs(SHAPE, 4, cli.SEED)
    report = qnnpy.compare(model, qnnpy.from_torch(model, (inputs[0],)), inputs, profiles=["int32_bias"])
    first = report.first_divergence("int32_bias")
    assert first is not None, "int32_bias should differ from the fbgemm engine on this model and these inputs"
    code = cli.main(["compare", "--trust-pickle", str(files["model.pt"]), str(files["out"]), "--require", "int32_bias",
                     "--no-tvm"])
    captured = capsys.readouterr()
    assert code == cli.EXIT_MISMATCH
    assert f"first diverging layer '{first.source}'" in captured.err
    assert f"first divergence at '{first.source}'" in captured.out


def test_compare_shows_every_profile_and_requires_the_engines(files, capsys):
    code = cli.main(["compare", "--trust-pickle", str(files["model.pt"]), str(files["out"]), "--no-tvm"])
    out = capsys.readouterr().out
    assert code == cli.EXIT_OK  # fbgemm is identical; int32_bias is not (test above) and does not count
    header = out.splitlines()[1].split()
    assert header == ["layer", "op", "int32_bias", "fbgemm", "fixed_point", "qnnpack"]
    assert max(len(line) for line in out.splitlines()[:9]) <= 100
    assert "PyTorch's fbgemm engine" in out.splitlines()[0]  # the engine the test runs under (conftest)
    assert cli.main(["compare", "--trust-pickle", str(files["model.pt"]), str(files["out"]), "--no-tvm",
                     "--require", "none", "--engine", "qnnpack", "--profile", "fbgemm"]) == cli.EXIT_OK


def test_compare_reads_stacked_inputs_and_runs_tvm(files, tmp_path, capsys):
    inputs = np.random.default_rng(3).standard_normal((3, *SHAPE)).astype(np.float32)
    np.save(tmp_path / "inputs.npy", inputs)
    code = cli.main(["compare", "--trust-pickle", str(files["model.pt"]), str(files["out"]), "--inputs", str(tmp_path / "inputs.npy"),
                     "--profile", "fbgemm", "--tvm"])
    out = capsys.readouterr().out
    assert code == cli.EXIT_OK
    assert out.startswith("3 input(s)")
    assert "form, profile fbgemm) vs PyTorch fbgemm: top-1 agrees on 6/6 sample(s); final output 60/60 values identical" in out


def test_compare_rejects_inputs_of_the_wrong_shape(files, tmp_path, capsys):
    np.save(tmp_path / "inputs.npy", np.zeros((3, 1, 3, 12, 12), np.float32))
    code = cli.main(["compare", "--trust-pickle", str(files["model.pt"]), str(files["out"]), "--inputs", str(tmp_path / "inputs.npy")])
    assert code == cli.EXIT_INPUT_FILE
    assert "the module's input is (2, 3, 12, 12)" in capsys.readouterr().err


def test_compare_refuses_a_module_converted_from_another_model(files, tmp_path, capsys):
    other, _ = quantized(Head(linear_relu=True), SHAPE[1:], seed=7)
    qnnpy.from_torch(other, (torch.randn(SHAPE),)).save(tmp_path)
    code = cli.main(["compare", "--trust-pickle", str(files["model.pt"]), str(tmp_path), "--no-tvm"])
    assert code == cli.EXIT_MISMATCH
    assert "is not the conversion of this model" in capsys.readouterr().err


def test_debug_prints_the_traceback(tmp_path, capsys):
    code = cli.main(["inspect", str(tmp_path), "--debug"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_INPUT_FILE
    assert "Traceback (most recent call last)" in err


def test_build_holds_back_tvms_scope_lines_unless_debug(files, tmp_path):
    quiet = run_qnnpy("build", files["out"], "-o", tmp_path / "lib.so", "--form", "qdq")
    assert quiet.returncode == 0, quiet.stderr
    assert "Scope" not in quiet.stderr and "wrote" in quiet.stderr
    loud = run_qnnpy("build", files["out"], "-o", tmp_path / "lib.so", "--form", "qdq", "--debug")
    assert loud.returncode == 0, loud.stderr
    assert "Warning: Scope Saving:" in loud.stderr  # what the filter drops is there to drop

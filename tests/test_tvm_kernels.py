"""The kernels form (TVM calling qnnpy's integer kernels) against qnnpy's runtime, tolerance 0,
and its deployable artifact loaded in fresh processes (Python without torch, and C++)."""
from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch

import qnnpy
from qnnpy import _core, zoo
from small_models import conv_cases, op_cases, quantized

tvm = pytest.importorskip("tvm", reason="Apache TVM is not installed: pip install 'qnnpy[tvm]'")
from qnnpy.tvm_bridge import kernel_form  # noqa: E402

LIBRARY = kernel_form.kernel_library_path()  # built by every install (apache-tvm-ffi is a build requirement)

PROFILES = ["int32_bias", "fbgemm"]
REPO = Path(__file__).resolve().parents[1]


def _runtime_outputs(module: qnnpy.QDQModule, x: np.ndarray, profile: str) -> list[np.ndarray]:
    """Every output of the module from qnnpy's runtime (NCHW, as the runtime returns them)."""
    outputs, _ = _core.Executor(module.graph, profile, "", 1).run([np.ascontiguousarray(x, dtype=np.float32)], False)
    return outputs


def _kernel_outputs(runner: kernel_form.KernelRunner, x: np.ndarray) -> list[np.ndarray]:
    out = runner(x)
    return out if isinstance(out, list) else [out]


def _assert_identical(got: list[np.ndarray], expected: list[np.ndarray]) -> None:
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        assert np.array_equal(g, e), f"{np.count_nonzero(g != e)} of {g.size} values differ"


@pytest.fixture(scope="module")
def resnet18_module():
    x = zoo.calibration_data(1, 1, (3, 64, 64), seed=7)[0]
    return qnnpy.from_torch(zoo.quantized_resnet18(engine="fbgemm", seed=0), (x,))


@pytest.fixture(scope="module")
def mobilenet_v2_module():
    x = zoo.calibration_data(1, 1, (3, 64, 64), seed=7)[0]
    return qnnpy.from_torch(zoo.quantized_mobilenet_v2(engine="fbgemm", seed=0), (x,))


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("model", ["resnet18_module", "mobilenet_v2_module"])
def test_models_equal_runtime(model, profile, request):
    module = request.getfixturevalue(model)
    runner = kernel_form.build(module, profile=profile)
    for x in zoo.calibration_data(3, 1, (3, 64, 64), seed=11):
        got = _kernel_outputs(runner, x.numpy())
        _assert_identical(got, _runtime_outputs(module, x.numpy(), profile))
        assert np.array_equal(got[0], module.run(x.numpy(), profile=profile).dequantized)


def _small_cases() -> dict:
    cases = {name: (body, shape, True, None) for name, (body, shape) in op_cases().items()}
    cases.update(conv_cases())
    return cases


@pytest.mark.parametrize("name", sorted(_small_cases()))
def test_every_op_equals_runtime(name):
    body, shape, per_channel, fuse = _small_cases()[name]
    model, x = quantized(body, shape, per_channel, fuse)
    module = qnnpy.from_torch(model, (x,))
    for profile in PROFILES:
        runner = kernel_form.build(module, profile=profile)
        _assert_identical(_kernel_outputs(runner, x.numpy()), _runtime_outputs(module, x.numpy(), profile))


class _QuantizedOutput(torch.nn.Module):
    """quant -> conv, returning the quantized tensor (no DeQuantStub)."""

    def __init__(self):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.conv = torch.nn.Conv2d(3, 5, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(self.quant(x))


def test_quantized_rank4_output_is_returned_nchw():
    model = _QuantizedOutput().eval()
    model.qconfig = torch.ao.quantization.get_default_qconfig("fbgemm")
    torch.ao.quantization.prepare(model, inplace=True)
    for x in zoo.calibration_data(2, 2, (3, 8, 9), seed=1):
        model(x)
    torch.ao.quantization.convert(model, inplace=True)
    x = zoo.calibration_data(1, 1, (3, 8, 9), seed=2)[0]
    module = qnnpy.from_torch(model, (x,))
    got = kernel_form.build(module, profile="fbgemm")(x.numpy())
    assert got.dtype == np.uint8 and got.shape == (1, 5, 6, 7)
    _assert_identical([got], _runtime_outputs(module, x.numpy(), "fbgemm"))
    with torch.no_grad():
        assert np.array_equal(got, model(x).int_repr().numpy())


def test_every_node_is_one_call_with_nhwc_intermediates(resnet18_module):
    text = kernel_form.to_kernel_relax(resnet18_module).script()
    calls = text.count('R.call_pure_packed("qnnpy.kernels.call_node"')
    assert calls == len(resnet18_module.nodes())
    assert "R.nn.conv2d" not in text and "R.quantize" not in text
    assert "R.Tensor((1, 32, 32, 64), dtype=\"uint8\")" in text  # conv1's output, NHWC


def _spec_tensors(graph: _core.Graph, profile: str) -> list:
    calls = tvm.get_global_func("qnnpy.kernels.split_graph")(bytes(graph.serialize()), profile)
    return [tvm.runtime.tensor(np.frombuffer(bytes(call[0]), dtype=np.uint8)) for call in calls]


def test_call_node_outputs_pass_between_calls_unchanged():
    """call_node returns tensors owning the node's output storage, which a call reading one takes over for the
    time of the call (src/tvm_kernels/owned_tensors.h): a tensor read by two calls in turn, twice by one call
    (add(q, q): one value, lent once), by the destination-passing run_node, and
    after being read, holds the same bytes; every result equals the runtime's."""
    kernel_form.load_kernel_library()
    call_node = tvm.get_global_func("qnnpy.kernels.call_node")
    run_node = tvm.get_global_func("qnnpy.kernels.run_node")
    g = _core.Graph()
    q = g.add_node("quantize", [g.add_input("x", [1, 4, 5, 6])], "q", "q", "uint8", 0.05, 100)
    doubled = g.add_node("add", [q, q], "add", "add", "uint8", 0.1, 90, ints={"relu": [0]})
    g.mark_output(g.add_node("dequantize", [doubled], "dq", "dq", "float32"))
    x = np.random.default_rng(3).standard_normal((1, 4, 5, 6)).astype(np.float32) * 3
    _, want = _core.Executor(g, "int32_bias", "", 1).run([x], True)
    quantize, add, dequantize = _spec_tensors(g, "int32_bias")
    q_out = call_node(quantize, tvm.runtime.tensor(x))
    q_bytes = q_out.numpy().copy()
    assert np.array_equal(q_bytes.transpose(0, 3, 1, 2), want["q"])  # NHWC storage
    first = call_node(add, q_out, q_out)
    second = call_node(add, q_out, q_out)
    into = tvm.runtime.tensor(np.zeros(q_bytes.shape, np.uint8))
    run_node(add, q_out, q_out, into)
    for got in (first, second, into):
        assert np.array_equal(got.numpy().transpose(0, 3, 1, 2), want["add"])
    assert np.array_equal(q_out.numpy(), q_bytes)
    assert np.array_equal(call_node(dequantize, first).numpy(), want["dq"])


def test_concurrent_runs_of_one_module_agree(mobilenet_v2_module):
    """Four threads run one compiled module at once, each on a virtual machine of its own (a TVM VM runs one
    call at a time): the nodes, prepared once, are shared, each run's intermediates are its own tensors."""
    runner = kernel_form.build(mobilenet_v2_module, profile="fbgemm")
    xs = [x.numpy() for x in zoo.calibration_data(4, 1, (3, 64, 64), seed=11)]
    want = [mobilenet_v2_module.run(x, profile="fbgemm").dequantized for x in xs]

    def run(x: np.ndarray) -> np.ndarray:
        vm = tvm.relax.VirtualMachine(runner.executable, tvm.cpu())
        return [vm["main"](tvm.runtime.tensor(x)).numpy() for _ in range(3)]

    with ThreadPoolExecutor(max_workers=4) as pool:
        for got, w in zip(pool.map(run, xs), want):
            for g in got:
                assert np.array_equal(g, w)


def test_weights_are_packed_once(resnet18_module):
    runner = kernel_form.build(resnet18_module, profile="fbgemm")
    x = np.zeros((1, 3, 64, 64), np.float32)
    before = kernel_form.prepared_node_count()
    runner(x)
    after_first = kernel_form.prepared_node_count()
    runner(x)
    runner(x)
    assert after_first - before == len(resnet18_module.nodes())
    assert kernel_form.prepared_node_count() == after_first


def test_prepared_node_is_dropped_when_its_spec_is_freed(resnet18_module):
    """The cache holds a node while someone else holds its spec tensor, and drops it on a later miss after."""
    kernel_form.load_kernel_library()
    run_node = tvm.get_global_func("qnnpy.kernels.run_node")
    spec_bytes = bytes(tvm.get_global_func("qnnpy.kernels.split_graph")(
        bytes(resnet18_module.graph.serialize()), "int32_bias")[0][0])
    x = tvm.runtime.tensor(np.zeros((1, 3, 64, 64), np.float32))
    out = tvm.runtime.tensor(np.zeros((1, 64, 64, 3), np.uint8))
    spec = tvm.runtime.tensor(np.frombuffer(spec_bytes, dtype=np.uint8))
    run_node(spec, x, out)
    held = kernel_form.cached_node_count()
    run_node(tvm.runtime.tensor(np.frombuffer(spec_bytes, dtype=np.uint8)), x, out)  # a second spec object
    assert kernel_form.cached_node_count() == held + 1
    del spec
    gc.collect()
    run_node(tvm.runtime.tensor(np.frombuffer(spec_bytes, dtype=np.uint8)), x, out)  # a miss: sweeps both
    assert kernel_form.cached_node_count() == held


def test_threads_give_the_same_result(resnet18_module):
    runner = kernel_form.build(resnet18_module, profile="int32_bias")
    x = zoo.calibration_data(1, 1, (3, 64, 64), seed=5)[0].numpy()
    one = runner(x)
    kernel_form.set_num_threads(2)
    try:
        assert np.array_equal(runner(x), one)
    finally:
        kernel_form.set_num_threads(1)


def test_scalar_kernels_when_qnnpy_isa_says_so(tmp_path):
    """QNNPY_ISA=scalar selects the scalar twins in the kernel library as in the runtime (a fresh process:
    the library reads it once)."""
    script = tmp_path / "scalar_run.py"
    script.write_text(textwrap.dedent("""
        import numpy as np, qnnpy
        from qnnpy import zoo
        from qnnpy.tvm_bridge import kernel_form
        x = zoo.calibration_data(1, 1, (3, 32, 32), seed=2)[0]
        model = zoo.quantized_torchvision("mobilenet_v2", seed=0, calibration_batches=1, image_size=32, batch_size=2)
        module = qnnpy.from_torch(model, (x,))
        got = kernel_form.build(module, profile="fbgemm")(x.numpy())
        assert kernel_form.kernel_isa() == "scalar"
        assert np.array_equal(got, module.run(x.numpy(), profile="fbgemm", isa="scalar").dequantized)
        print("ok")
    """))
    result = subprocess.run([sys.executable, "-P", str(script)], capture_output=True, text=True, timeout=600,
                            env={**os.environ, "QNNPY_ISA": "scalar"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_bad_input_names_the_node(resnet18_module):
    kernel_form.load_kernel_library()
    run_node = tvm.get_global_func("qnnpy.kernels.run_node")
    calls = tvm.get_global_func("qnnpy.kernels.split_graph")(bytes(resnet18_module.graph.serialize()), "fbgemm")
    quantize, conv1 = (tvm.runtime.tensor(np.frombuffer(bytes(call[0]), dtype=np.uint8)) for call in calls[:2])
    wrong = tvm.runtime.tensor(np.zeros((1, 3, 32, 32), np.float32))
    out = tvm.runtime.tensor(np.zeros((1, 64, 64, 3), np.uint8))
    with pytest.raises(ValueError, match=r"quantize \(quant\) input 0 'x' must have shape \(1, 3, 64, 64\), "
                                         r"got \(1, 3, 32, 32\)"):
        run_node(quantize, wrong, out)
    with pytest.raises(ValueError, match=r"conv2d \(conv1\) input 0 'quant' must be uint8"):
        run_node(conv1, tvm.runtime.tensor(np.zeros((1, 64, 64, 3), np.int8)), out)
    with pytest.raises(ValueError, match=r"conv2d \(conv1\): 1 input\(s\) and an output expected, got 3"):
        run_node(conv1, out, out, out)
    with pytest.raises(ValueError, match="node spec"):
        run_node(tvm.runtime.tensor(np.zeros(16, np.uint8)), wrong, out)


def test_unknown_profile_is_refused(resnet18_module):
    with pytest.raises(ValueError, match="unknown profile 'mkldnn'"):
        kernel_form.to_kernel_relax(resnet18_module, profile="mkldnn")


# The fresh process makes torch unimportable: tvm_ffi imports torch when it can.
FRESH_PROCESS = textwrap.dedent("""
    import importlib.abc, sys

    class NoTorch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] == "torch":
                raise ImportError("torch is blocked in this process")

    sys.meta_path.insert(0, NoTorch())
    import numpy as np
    import tvm
    from tvm import relax

    library, inputs, expected = sys.argv[1:]
    vm = relax.VirtualMachine(tvm.runtime.load_module(library), tvm.cpu())
    got = vm["main"](tvm.runtime.tensor(np.load(inputs))).numpy()
    assert "torch" not in sys.modules and "qnnpy" not in sys.modules, sorted(sys.modules)
    assert np.array_equal(got, np.load(expected)), "outputs differ"
    print("ok")
""")


@pytest.fixture(scope="module")
def exported(resnet18_module, tmp_path_factory):
    """ResNet-18 exported under fbgemm, an input and the runtime's output for it."""
    directory = tmp_path_factory.mktemp("kernels_artifact")
    runner = kernel_form.build(resnet18_module, profile="fbgemm")
    library = runner.export_library(directory / "resnet18.so")
    x = zoo.calibration_data(1, 1, (3, 64, 64), seed=3)[0].numpy()
    np.save(directory / "x.npy", x)
    np.save(directory / "expected.npy", resnet18_module.run(x, profile="fbgemm").dequantized)
    return directory, library


def test_exported_library_runs_in_a_fresh_process_without_torch(exported):
    directory, library = exported
    script = directory / "run_artifact.py"
    script.write_text(FRESH_PROCESS)
    result = subprocess.run([sys.executable, "-P", str(script), str(library), str(directory / "x.npy"),
                             str(directory / "expected.npy")], capture_output=True, text=True, cwd=directory,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_cpp_runner_runs_the_exported_library(exported):
    """run_model.cc, the runner of the deploy folders (shipped in the package), built for this machine."""
    from qnnpy.tvm_bridge import deploy

    compiler = shutil.which(os.environ.get("CXX", "g++"))
    if compiler is None:
        pytest.fail("no C++ compiler (g++ or $CXX) to build the C++ runner")
    import tvm_ffi

    directory, library = exported
    source = Path(deploy.__file__).with_name("run_model.cc")
    ffi_lib = Path(tvm_ffi.libinfo.find_libtvm_ffi()).parent
    tvm_lib = Path(tvm.__file__).parent / "lib"
    program = directory / "run_model"
    subprocess.run([compiler, "-std=c++17", "-O2", str(source), "-o", str(program),
                    f"-I{tvm_ffi.libinfo.find_include_path()}", f"-L{ffi_lib}", f"-L{tvm_lib}", "-Wl,--no-as-needed",
                    "-ltvm_runtime", "-ltvm_ffi", f"-Wl,-rpath,{ffi_lib}:{tvm_lib}"], check=True, timeout=300)
    done = subprocess.run([str(program), str(library), "x.npy", "y.npy"], capture_output=True, text=True,
                          timeout=300, cwd=directory)
    assert done.returncode == 0, done.stderr
    assert np.array_equal(np.load(directory / "y.npy"), np.load(directory / "expected.npy"))

    np.save(directory / "wrong.npy", np.zeros((1, 3, 32, 32), np.float32))
    done = subprocess.run([str(program), str(library), "wrong.npy", "y.npy"], capture_output=True, text=True,
                          timeout=300, cwd=directory)
    assert done.returncode == 1 and done.stderr.startswith("run_model: ")
    np.save(directory / "fortran.npy", np.asfortranarray(np.load(directory / "x.npy")[0].transpose(1, 2, 0)))
    done = subprocess.run([str(program), str(library), "fortran.npy", "y.npy"], capture_output=True, text=True,
                          timeout=300, cwd=directory)
    assert done.returncode == 1 and "Fortran order is not supported" in done.stderr


def test_cli_build_writes_a_library_a_fresh_process_runs(resnet18_module, tmp_path, capsys):
    from qnnpy import cli

    resnet18_module.save(tmp_path / "module")
    library = tmp_path / "resnet18_int32.so"
    assert cli.main(["build", str(tmp_path / "module"), "-o", str(library), "--profile", "int32_bias"]) == cli.EXIT_OK
    x = zoo.calibration_data(1, 1, (3, 64, 64), seed=4)[0].numpy()
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "expected.npy", resnet18_module.run(x, profile="int32_bias").dequantized)
    (tmp_path / "run_artifact.py").write_text(FRESH_PROCESS)
    result = subprocess.run([sys.executable, "-P", str(tmp_path / "run_artifact.py"), str(library),
                             str(tmp_path / "x.npy"), str(tmp_path / "expected.npy")], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr

    assert cli.main(["build", str(tmp_path / "module"), "-o", str(library), "--profile", "mkldnn"]) == cli.EXIT_USAGE
    assert "invalid choice: 'mkldnn'" in capsys.readouterr().err

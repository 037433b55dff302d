"""TorchScript modules (traced or scripted, saved and loaded back) through from_torch, bit for bit."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import qnnpy
from qnnpy import _core, zoo
from qnnpy.capture import script_ops
from qnnpy.capture.torchscript_archive import packed_param_states
from qnnpy.convert.torch_weight_reader import conv_state, conv_state_from_tuple
from qnnpy.errors import ConversionError, UnsupportedOpsError
from qnnpy.quantized_types import QuantizedValue
from script_archives import rewrite_conv_states
from script_models import (
    FUNCTIONAL_CONV, quantized_functional_fx, quantized_tiny_resnet, quantized_unsupported, save_and_load,
)


def _script(model: torch.nn.Module, x: torch.Tensor, mode: str) -> torch.jit.ScriptModule:
    scripted = torch.jit.trace(model, x) if mode == "trace" else torch.jit.script(model)
    return save_and_load(scripted)


def assert_same_params(a: qnnpy.QDQModule, b: qnnpy.QDQModule, by_name: bool = True) -> None:
    """Same params, bit for bit: by name, or (models named differently) in order."""
    if by_name:
        assert list(a.params) == list(b.params)
    assert len(a.params) == len(b.params) > 0
    for (name_a, pa), (name_b, pb) in zip(a.params.items(), b.params.items()):
        assert pa.dtype == pb.dtype, (name_a, name_b)
        np.testing.assert_array_equal(pa, pb, err_msg=f"{name_a} / {name_b}")


def assert_runtime_equals(module: qnnpy.QDQModule, scripted: torch.jit.ScriptModule, x: torch.Tensor) -> None:
    """The integer runtime (fbgemm profile) reproduces the TorchScript module under fbgemm, tolerance 0."""
    torch.backends.quantized.engine = "fbgemm"
    with torch.no_grad():
        ref = scripted(x)
    result = module.run(x.numpy(), profile="fbgemm")
    scale, zero_point = module.output_qparams()[0]
    np.testing.assert_array_equal(result.dequantized, ref.numpy())
    np.testing.assert_array_equal(result.quantized,
                                  torch.quantize_per_tensor(ref, scale, zero_point, torch.quint8).int_repr().numpy())


# --- ResNet-like models ------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_resnet() -> torch.nn.Module:
    return quantized_tiny_resnet()


@pytest.mark.parametrize("mode", ["trace", "script"])
def test_tiny_resnet_converts_like_eager_and_runs_bit_exact(tiny_resnet, mode):
    x = zoo.calibration_data(1, 1, (3, 32, 32), seed=7)[0]
    loaded = _script(tiny_resnet, x, mode)
    module = qnnpy.from_torch(loaded, x)
    eager = qnnpy.from_torch(tiny_resnet, x)
    assert_same_params(module, eager)
    assert [n["op"] for n in module.nodes()] == [n["op"] for n in eager.nodes()]
    assert sum(n["op"] == "relu" for n in module.nodes()) == 2  # the blocks' in-place ReLUs (aten::relu_)
    sources = {n["source"] for n in module.nodes()}
    assert {"conv1", "layer1.conv1", "layer2.downsample.0", "fc"} <= sources
    assert_runtime_equals(module, loaded, x)
    other = zoo.calibration_data(1, 1, (3, 32, 32), seed=8)[0]  # same shapes, new values
    assert_runtime_equals(module, loaded, other)


def test_frozen_module_converts_bit_exact(tiny_resnet):
    """torch.jit.freeze folds attributes into constants; a saved frozen module keeps no module paths."""
    x = zoo.calibration_data(1, 1, (3, 32, 32), seed=9)[0]
    frozen = save_and_load(torch.jit.freeze(torch.jit.script(tiny_resnet).eval()))
    module = qnnpy.from_torch(frozen, x)
    assert_same_params(module, qnnpy.from_torch(tiny_resnet, x), by_name=False)
    assert_runtime_equals(module, frozen, x)


@pytest.fixture(scope="module")
def resnet18_small() -> torch.nn.Module:
    return zoo.quantized_resnet18(engine="fbgemm", seed=0, calibration_batches=1)


@pytest.mark.parametrize("mode", ["trace", "script"])
def test_torchvision_resnet18_from_torchscript_is_bit_exact(resnet18_small, mode):
    x = zoo.calibration_data(1, 1, (3, 64, 64), seed=11)[0]
    loaded = _script(resnet18_small, x, mode)
    module = qnnpy.from_torch(loaded, x)
    assert_same_params(module, qnnpy.from_torch(resnet18_small, x))
    assert sum(n["op"] == "conv2d" for n in module.nodes()) == 20
    assert_runtime_equals(module, loaded, x)


# --- FX lowering: functional quantized ops with packed params as attributes -------

@pytest.fixture(scope="module")
def functional_fx() -> tuple[torch.fx.GraphModule, torch.Tensor]:
    return quantized_functional_fx()


def test_fx_lowered_functional_ops_convert_in_fx_and_torchscript(functional_fx):
    fx_model, x = functional_fx
    fx_module = qnnpy.from_torch(fx_model, x)
    assert [n["op"] for n in fx_module.nodes()][:2] == ["quantize", "conv2d"]
    assert [n["ints"]["relu"] for n in fx_module.nodes() if n["op"] == "conv2d"] == [[1]]
    loaded = save_and_load(torch.jit.script(fx_model))
    ts_module = qnnpy.from_torch(loaded, x)
    assert_same_params(ts_module, fx_module, by_name=False)
    assert_runtime_equals(fx_module, loaded, x)
    assert_runtime_equals(ts_module, loaded, x)


# --- archives with conv packed-params state versions 2 and 3 ----------------------

@pytest.fixture(scope="module")
def archives(functional_fx, tmp_path_factory) -> dict[str, Path]:
    fx_model, _ = functional_fx
    folder = tmp_path_factory.mktemp("archives")
    paths = {"torch": folder / "torch.pt", "v2": folder / "v2.pt", "v3": folder / "v3.pt"}
    torch.jit.save(torch.jit.script(fx_model), str(paths["torch"]))
    assert rewrite_conv_states(paths["torch"], paths["v2"], 2) == 1
    assert rewrite_conv_states(paths["torch"], paths["v3"], 3) == 1
    return paths


def _conv_state(path: Path) -> tuple:
    states = packed_param_states(path)
    conv = [state for cls, state in states.values() if cls == "Conv2dPackedParamsBase"]
    assert len(conv) == 1, states.keys()
    return conv[0]


def test_torch_writes_conv_state_version_2(archives):
    version, (config, weight), (bias,) = _conv_state(archives["torch"])
    assert version == "2"
    assert config.dtype == torch.int16
    assert _core.decode_conv_config(2, config.numpy().astype(np.int64)) == FUNCTIONAL_CONV


def test_hand_made_archives_store_layouts_2_and_3_and_decode_alike(archives):
    v2 = _conv_state(archives["v2"])
    v3 = _conv_state(archives["v3"])
    assert v2[0] == "2" and isinstance(v2[1][0], torch.Tensor)
    assert v3[0] == 3 and all(isinstance(v, int) for v in v3[1]) and v3[2][0] is None
    assert _core.decode_conv_config(2, v2[1][0].numpy().astype(np.int64)) == FUNCTIONAL_CONV
    assert _core.decode_conv_config(3, np.array(v3[1], dtype=np.int64)) == FUNCTIONAL_CONV
    from_v2 = conv_state_from_tuple(v2, "v2")
    from_v3 = conv_state_from_tuple(v3, "v3")
    assert (from_v2.version, from_v3.version) == (2, 3)
    loaded = conv_state(torch.jit.load(str(archives["v3"]))._packed_weight_0, "loaded")
    for state in (from_v2, from_v3):
        np.testing.assert_array_equal(state.weight.data, loaded.weight.data)
        np.testing.assert_array_equal(state.weight.scale, loaded.weight.scale)
        np.testing.assert_array_equal(state.bias, loaded.bias)


def test_archive_weights_are_read_without_making_torch_quantized_tensors(archives, monkeypatch):
    """The reader rebuilds stored quantized tensors as qnnpy's QuantizedValue (PyTorch is removing the functions
    that make quantized tensors): the same integers and qparams torch.jit.load gives."""
    def removed(*args, **kwargs):
        raise AssertionError("a torch quantized tensor was made")

    for name in ("_make_per_tensor_quantized_tensor", "_make_per_channel_quantized_tensor", "quantize_per_tensor",
                 "quantize_per_channel"):
        monkeypatch.setattr(torch, name, removed)
    _, (_, weight), _ = _conv_state(archives["torch"])
    monkeypatch.undo()
    assert isinstance(weight, QuantizedValue)
    loaded = torch.jit.load(str(archives["torch"]))._packed_weight_0.unpack()[0]
    assert torch.equal(weight.int_repr(), loaded.int_repr()) and weight.qscheme() == loaded.qscheme()
    assert torch.equal(weight.q_per_channel_scales(), loaded.q_per_channel_scales())
    assert torch.equal(weight.q_per_channel_zero_points(), loaded.q_per_channel_zero_points())


@pytest.mark.parametrize("layout", ["v2", "v3"])
def test_hand_made_archive_loads_and_converts_bit_exact(archives, functional_fx, layout):
    fx_model, x = functional_fx
    loaded = torch.jit.load(str(archives[layout]))
    module = qnnpy.from_torch(loaded, x)
    assert_same_params(module, qnnpy.from_torch(fx_model, x), by_name=False)
    assert_runtime_equals(module, loaded, x)
    with torch.no_grad():
        np.testing.assert_array_equal(loaded(x).numpy(), fx_model(x).numpy())


# --- errors ------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["trace", "script"])
def test_unsupported_ops_are_all_listed_with_module_paths(mode):
    model = quantized_unsupported()
    x = torch.randn(1, 3, 8, 8)
    with pytest.raises(UnsupportedOpsError) as info:
        qnnpy.from_torch(_script(model, x, mode), x)
    assert info.value.ops == [("shuffle", "torch.pixel_shuffle: no integer form in qnnpy"),
                              ("act", "torch.threshold: no integer form in qnnpy")]


def test_shape_check_of_scripted_code_fails_on_the_example_input(tiny_resnet):
    scripted = save_and_load(torch.jit.script(tiny_resnet))
    with pytest.raises(ConversionError, match=r"conv1 raises builtins.ValueError .*\(N, C, H, W\)"):
        qnnpy.from_torch(scripted, torch.randn(3, 32, 32))


def test_example_input_count_is_checked(tiny_resnet):
    scripted = save_and_load(torch.jit.script(tiny_resnet))
    with pytest.raises(ConversionError, match=r"takes 1 input\(s\) \(x\), but 2 example input\(s\)"):
        qnnpy.from_torch(scripted, (torch.randn(1, 3, 32, 32), torch.randn(1, 3, 32, 32)))


class _ValueBranch(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if bool(x.sum() > 0):
            return torch.relu(x)
        return x


def test_control_flow_on_tensor_values_is_rejected():
    with pytest.raises(ConversionError, match="reads the values of a tensor computed from the inputs"):
        qnnpy.from_torch(torch.jit.script(_ValueBranch().eval()), torch.randn(1, 4))


def test_aten_ops_map_to_the_python_forms_the_converter_table_knows():
    def form(kind: str, schema: str, known=frozenset()):
        op = script_ops.python_op(kind, torch._C.parse_schema(schema), known)
        return op.fx_op, op.target

    pool = "aten::adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor"
    assert form("aten::adaptive_avg_pool2d", pool) == ("call_function", F.adaptive_avg_pool2d)
    assert form("aten::relu_", "aten::relu_(Tensor(a!) self) -> Tensor(a!)") == ("call_function", torch.relu)
    assert form("aten::view", "aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)") == ("call_method", "view")
    flatten = "aten::flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)"
    assert form("aten::flatten", flatten) == ("call_function", torch.flatten)
    assert form("aten::flatten", flatten, {"Tensor.flatten"}) == ("call_method", "flatten")
    conv = "quantized::conv2d.new(Tensor qx, __torch__.torch.classes.quantized.Conv2dPackedParamsBase " \
           "packed_weight, float output_scale, int output_zero_point) -> Tensor"
    assert form("quantized::conv2d", conv) == ("call_function", torch.ops.quantized.conv2d)

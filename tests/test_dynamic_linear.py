"""Dynamic quantization: torch.ao.nn.quantized.dynamic.Linear converts to dynamic_linear, and the runtime
equals PyTorch's fbgemm dynamic linear bit for bit (tolerance 0 on the float outputs)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch import nn

import qnnpy
from qnnpy import _core
from dynamic_models import TwoLinears, dynamic_cases, dynamic_quantized

ISAS = ["scalar"] + (["avx2"] if _core.cpu_has_avx2() else [])


def _inputs(shape: tuple[int, ...], seed: int) -> list[torch.Tensor]:
    """Inputs that reach every branch of the qparams rule: ordinary ranges, one-signed tensors (min or
    max is 0), ranges so small that the scale is cut off at 6.1e-5, huge values, all zeros."""
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(shape, generator=g)
    return [base, base * 40.0, base.abs() + 0.5, -base.abs(), base * 1e-5, base.abs() * 1e-6, base * 3e4,
            torch.zeros(shape)]


@pytest.mark.parametrize("name", list(dynamic_cases()))
@pytest.mark.parametrize("isa", ISAS)
def test_runtime_equals_pytorch_fbgemm_dynamic_linear(name, isa):
    model, shape = dynamic_cases()[name]
    module = qnnpy.from_torch(model, (torch.randn(shape),))
    assert {n["op"] for n in module.nodes()} == {"dynamic_linear"}
    for x in _inputs(shape, seed=1):
        expected = model(x).numpy()
        result = module.run(x.numpy(), isa=isa)
        assert result.quantized is None
        np.testing.assert_array_equal(result.dequantized, expected)


def test_compare_reports_every_dynamic_layer_identical():
    model, shape = dynamic_cases()["dynamic_per_tensor_relu"]
    x = torch.randn(shape)
    report = qnnpy.compare(model, qnnpy.from_torch(model, (x,)), [x * 3, x], profiles=["fbgemm"])
    assert [layer.op for layer in report.layers["fbgemm"]] == ["dynamic_linear"] * 3
    assert report.all_identical("fbgemm")


def test_reduce_range_follows_the_module_version():
    """nnqd.Linear passes reduce_range=True from state version 4 on, False before; both are reproduced."""
    model = dynamic_quantized(nn.Sequential(nn.Linear(16, 8)), per_channel=False)
    x = torch.randn(6, 16)
    for version, reduce_range in ((4, 1), (3, 0)):
        model[0].version = version
        module = qnnpy.from_torch(model, (x,))
        assert module.nodes()[0]["ints"]["reduce_range"] == [reduce_range]
        np.testing.assert_array_equal(module.run(x.numpy()).dequantized, model(x).numpy())


@pytest.mark.parametrize("reduce_range", [False, True])
def test_qparams_rule_equals_pytorch(reduce_range):
    """The run-time qparams equal torch._choose_qparams_per_tensor (PyTorch's ChooseQuantizationParams, 0..255)."""
    for x in _inputs((7, 9), seed=2) + [torch.tensor([3.0]), torch.tensor([-1e-30, 2e-30])]:
        scale, zero_point = _core.choose_dynamic_qparams(x.numpy().ravel(), reduce_range)
        expected_scale, expected_zero_point = torch._choose_qparams_per_tensor(x, reduce_range)
        assert (np.float32(scale), zero_point) == (np.float32(expected_scale), expected_zero_point), x


def test_fx_and_torchscript_forms_convert_to_the_same_computation():
    from torch.ao.quantization import QConfigMapping, default_dynamic_qconfig, quantize_fx

    model, shape = dynamic_cases()["dynamic_per_tensor_relu"]
    x = torch.randn(shape)
    expected = model(x).numpy()
    for scripted in (torch.jit.trace(model, x), torch.jit.script(model)):
        module = qnnpy.from_torch(scripted, (x,))
        assert [n["op"] for n in module.nodes()] == ["dynamic_linear"] * 3
        np.testing.assert_array_equal(module.run(x.numpy()).dequantized, expected)
    torch.manual_seed(0)
    float_model = TwoLinears().eval()
    fx = quantize_fx.convert_fx(quantize_fx.prepare_fx(
        float_model, QConfigMapping().set_global(default_dynamic_qconfig), (x,)))
    module = qnnpy.from_torch(fx, (x,))
    assert {n["op"] for n in module.nodes()} == {"dynamic_linear"}
    np.testing.assert_array_equal(module.run(x.numpy()).dequantized, fx(x).numpy())


def test_params_are_the_int8_weight_and_the_float_bias(tmp_path):
    model, shape = dynamic_cases()["dynamic_per_channel"]
    module = qnnpy.from_torch(model, (torch.randn(shape),))
    weight, bias = model.fc1._packed_params._weight_bias()
    np.testing.assert_array_equal(module.params["fc1_weight"], weight.int_repr().numpy())
    np.testing.assert_array_equal(module.params["fc1_weight_scale"], weight.q_per_channel_scales().float().numpy())
    np.testing.assert_array_equal(module.params["fc1_bias"], bias.detach().numpy())
    assert module.params["fc1_bias"].dtype == np.float32 and "fc3_bias" not in module.params
    script = module.script()
    assert "R.quantize(x, fc1_x_scale, fc1_x_zero_point" in script and "R.min(x)" in script
    x = torch.randn(shape)
    reloaded = qnnpy.QDQModule.load(module.save(tmp_path / "m"))
    np.testing.assert_array_equal(reloaded.run(x.numpy()).dequantized, model(x).numpy())


@pytest.mark.parametrize("layer, name", [(nn.LSTM(8, 8), "LSTM"), (nn.GRU(8, 8), "GRU"),
                                         (nn.LSTMCell(8, 8), "LSTMCell"), (nn.GRUCell(8, 8), "GRUCell")])
def test_recurrent_dynamic_layers_are_refused_by_name(layer, name):
    model = torch.ao.quantization.quantize_dynamic(nn.Sequential(layer).eval(), {type(layer)})
    with pytest.raises(qnnpy.ConversionError, match=rf"0 \({name}\).*LSTM, GRU and RNN cells"):
        qnnpy.from_torch(model, (torch.randn(2, 8),))


def test_float16_dynamic_linear_is_refused():
    model = torch.ao.quantization.quantize_dynamic(nn.Sequential(nn.Linear(8, 4)).eval(), {nn.Linear},
                                                   dtype=torch.float16)
    with pytest.raises(qnnpy.ConversionError, match=r"0 \(Linear with torch.float16 weights\)"):
        qnnpy.from_torch(model, (torch.randn(2, 8),))


def test_rule_refuses_a_quantized_input():
    g = _core.Graph()
    x = g.add_input("x", [2, 4])
    q = g.add_node("quantize", [x], "q", "q", "uint8", 0.1, 3)
    with pytest.raises(ValueError, match=r"dynamic_linear \(fc\): input 'q' must be float32"):
        _core.add_dynamic_linear(g, q, "fc", "fc", np.ones((3, 4), np.int8), np.array([0.1], np.float32),
                                 np.array([0]), -1, None, False, True)


def test_tvm_forms():
    """Kernels form: bit-exact. Float form: TVM computes the same run-time qparams as the runtime, then
    float math (R.quantize divides by the scale; TVM's matmul sums in its own order). Integer form: the
    dynamic layers stay in float and the report says why."""
    pytest.importorskip("tvm")
    from qnnpy import tvm_bridge
    from qnnpy.tvm_bridge import expose_values, lower_integer, lowering_report

    model, shape = dynamic_cases()["dynamic_per_tensor_relu"]
    x = torch.randn(shape)
    module = qnnpy.from_torch(model, (x,))
    expected = model(x).numpy()
    if tvm_bridge.default_form() == "kernels":
        np.testing.assert_array_equal(tvm_bridge.build(module, form="kernels", profile="fbgemm")(x.numpy()), expected)

    import tvm
    from tvm import relax

    # fc2's input is TVM's own fc1 output (float math), so its qparams are checked against that tensor.
    names = ["fc1_x_scale", "fc1_x_zero_point", "fc1", "fc2_x_scale", "fc2_x_zero_point", "fc3"]
    mod = relax.transform.BindParams("main", dict(module.params))(expose_values(module.to_tvm(), names))
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    s1, z1, fc1, s2, z2, y = (v.numpy() for v in vm["main"](tvm.runtime.tensor(x.numpy())))
    for layer_input, scale, zero_point in ((x.numpy(), s1, z1), (fc1, s2, z2)):
        expected_scale, expected_zero_point = _core.choose_dynamic_qparams(layer_input.ravel(), True)
        assert (np.float32(scale), int(zero_point)) == (np.float32(expected_scale), expected_zero_point)
    np.testing.assert_allclose(y, expected, rtol=0, atol=1e-5 * np.abs(expected).max())

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lowered = lower_integer(module.to_tvm(), "fbgemm", params=module.params, hints=module)
    report = lowering_report(lowered)
    assert [name for name, _, _ in report.kept_float] == ["fc1_xq", "fc2_xq", "fc3_xq"]
    assert all("dynamic quantization" in reason for _, _, reason in report.kept_float)


def test_float_relu_between_dynamic_linears_is_exact():
    """An unfused ReLU between dynamic linears computes in float in PyTorch: it converts to float_relu
    (module and function form), and the model equals PyTorch's on every input of the qparams rule."""

    class FunctionalRelu(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(12, 16), nn.Linear(16, 5)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.b(torch.relu(self.a(x)))

    torch.manual_seed(3)
    for body in (nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 5)), FunctionalRelu()):
        model = dynamic_quantized(body, per_channel=True)
        module = qnnpy.from_torch(model, (torch.randn(4, 12),))
        assert [n["op"] for n in module.nodes()] == ["dynamic_linear", "float_relu", "dynamic_linear"]
        for x in _inputs((4, 12), seed=2):
            np.testing.assert_array_equal(module.run(x.numpy()).dequantized, model(x).numpy())


def test_summary_counts_dynamic_linears_as_quantized_layers():
    model, shape = dynamic_cases()["dynamic_per_tensor_relu"]
    summary = qnnpy.from_torch(model, (torch.randn(shape),)).summary()
    assert "weight-only): dynamic_linear x3" in summary and "float ops: 0" in summary

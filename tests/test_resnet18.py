"""ResNet-18 end to end: canonical QDQ text, integer params, and TVM against PyTorch."""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import torch.ao.nn.quantized as nnq

import qnnpy
from qnnpy import tvm_bridge
from conftest import lsb_diff


@pytest.fixture(scope="module")
def module(resnet18, resnet18_inputs) -> qnnpy.QDQModule:
    return qnnpy.from_torch(resnet18, (resnet18_inputs[0],))


def _torch_layers(model: torch.nn.Module) -> dict[str, torch.nn.Module]:
    return {name: m for name, m in model.named_modules() if isinstance(m, (nnq.Conv2d, nnq.Linear))}


def test_every_weight_is_int8_with_the_exact_torch_values(resnet18, module):
    params = module.params
    layers = _torch_layers(resnet18)
    assert len(layers) == 21  # 20 convs + fc
    for path, m in layers.items():
        prefix = path.replace(".", "_")
        weight = params[f"{prefix}_weight"]
        assert weight.dtype == np.int8
        np.testing.assert_array_equal(weight, m.weight().int_repr().numpy())
        np.testing.assert_array_equal(params[f"{prefix}_weight_scale"],
                                      m.weight().q_per_channel_scales().numpy().astype(np.float32))


def test_every_bias_is_int32_by_the_formula(resnet18, module, resnet18_inputs):
    from qnnpy.capture.fx_capture import capture_fx

    captured = capture_fx(resnet18, (resnet18_inputs[0],))
    gm = captured.module
    input_of = {n.target: n.args[0] for n in gm.graph.nodes if n.op == "call_module"}
    params = module.params
    for path, m in _torch_layers(resnet18).items():
        prefix = path.replace(".", "_")
        s_in = captured.values[input_of[path].name].q_scale()
        s_w = m.weight().q_per_channel_scales().numpy()
        # Scale in double, rounded to float32; value = nearbyint(bias * (1/scale)) in float32.
        scale = (np.float64(np.float32(s_in)) * s_w.astype(np.float32).astype(np.float64)).astype(np.float32)
        expected = np.rint(m.bias().detach().numpy().astype(np.float32) * (np.float32(1) / scale))
        bias = params[f"{prefix}_bias"]
        assert bias.dtype == np.int32
        np.testing.assert_array_equal(bias, expected.astype(np.int32))
        np.testing.assert_array_equal(params[f"{prefix}_bias_scale"], scale)


def test_param_bytes_are_a_quarter_of_the_float_model(resnet18, module):
    float_bytes = sum(p.numel() * 4 for p in torch.nn.Module.parameters(_float_resnet18()))
    total = sum(a.nbytes for a in module.params.values())
    assert 0.24 < total / float_bytes < 0.26, total / float_bytes
    assert not any(a.dtype == np.float32 and a.ndim > 1 for a in module.params.values())


def _float_resnet18() -> torch.nn.Module:
    from torchvision.models.quantization import resnet18

    m = resnet18(weights=None, quantize=False).eval()
    m.fuse_model()  # BN folded, as in the quantized model
    return m


def test_script_is_canonical_qdq(module):
    text = module.script()
    assert 'R.func_attr({"num_input": 1})' in text
    # No quantize is ever applied to a weight: every R.quantize consumes a float op result or the input.
    for arg in re.findall(r"R\.quantize\((\w+),", text):
        assert not arg.endswith(("_weight", "_bias")), arg
    # Each conv: dequantized input and weight (axis 0), conv, bias dequantized with zero point 0, quantize.
    for conv in re.findall(r"(\w+)_conv = R\.nn\.conv2d\((\w+), (\w+),", text):
        name, x, w = conv
        assert re.search(rf"{x} = R\.dequantize\(", text)
        assert re.search(rf"{w} = R\.dequantize\({name}_weight, {name}_weight_scale, R\.const\(0, \"int32\"\), axis=0", text)
        assert re.search(rf"R\.dequantize\({name}_bias, {name}_bias_scale, R\.const\(0, \"int32\"\), axis=0", text)
        assert re.search(rf"\n\s+{name} = R\.quantize\(", text)
    assert text.count("R.nn.conv2d(") == 20


def test_resnet18_runs_in_tvm_with_top1_agreement(resnet18, resnet18_inputs, module, capsys):
    runner = tvm_bridge.build(module, form="qdq")
    scale = resnet18.fc.scale
    identical = total = worst = 0
    for x in resnet18_inputs:
        out = runner(x.numpy())
        with torch.no_grad():
            ref = resnet18(x).numpy()
        assert out.shape == ref.shape == (1, 1000)
        assert out.argmax() == ref.argmax()
        d = lsb_diff(out, ref, scale)
        identical += int((d == 0).sum())
        total += d.size
        worst = max(worst, int(d.max()))
    with capsys.disabled():
        print(f"\nResNet-18 TVM vs PyTorch fbgemm: {identical}/{total} outputs bit-identical "
              f"({identical / total:.2%}), max {worst} LSB")
    assert worst <= 4

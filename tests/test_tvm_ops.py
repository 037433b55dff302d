"""Each supported op, converted alone, parses, builds and runs in TVM and agrees with PyTorch."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import tvm

import qnnpy
from qnnpy import tvm_bridge
from small_models import Head, Residual, conv_cases, quantized
from conftest import lsb_diff


def _check_against_torch(model: torch.nn.Module, x: torch.Tensor, min_identical: float, max_lsb: int = 1) -> qnnpy.QDQModule:
    """TVM runs the QDQ graph in float: a 1-LSB tie can flip per requantizing op, so chains allow more."""
    module = qnnpy.from_torch(model, (x,))
    assert isinstance(module.to_tvm(), tvm.IRModule)
    out = tvm_bridge.build(module, form="qdq")(x.numpy())
    with torch.no_grad():
        ref = model(x).numpy()
    scale, _ = module.output_qparams()[0]
    diff = lsb_diff(out, ref, scale)
    assert diff.max() <= max_lsb, f"max difference {diff.max()} LSB"
    assert (diff == 0).mean() >= min_identical, f"only {(diff == 0).mean():.4f} identical"
    return module


@pytest.mark.parametrize("name", sorted(conv_cases()))
def test_conv_variants_match_torch(name):
    body, shape, per_channel, fuse = conv_cases()[name]
    model, x = quantized(body, shape, per_channel, fuse)
    module = _check_against_torch(model, x, min_identical=0.99)
    weight = next(a for k, a in module.params.items() if k.endswith("_weight"))
    np.testing.assert_array_equal(weight, model.body.conv.weight().int_repr().numpy())


@pytest.mark.parametrize("relu", [False, True])
def test_add_matches_torch(relu):
    model, x = quantized(Residual(relu), (3, 10, 10))
    module = _check_against_torch(model, x, min_identical=0.99, max_lsb=2)  # conv -> add: two roundings
    assert [n["ints"]["relu"] for n in module.nodes() if n["op"] == "add"] == [[int(relu)]]


@pytest.mark.parametrize("linear_relu", [False, True])
def test_pools_flatten_linear_match_torch(linear_relu):
    fuse = [["body.conv", "body.relu"]] + ([["body.fc", "body.fc_relu"]] if linear_relu else [])
    model, x = quantized(Head(linear_relu), (3, 17, 17), fuse=fuse)
    module = _check_against_torch(model, x, min_identical=0.95)
    ops = [n["op"] for n in module.nodes()]
    assert ops == ["quantize", "conv2d", "max_pool2d", "adaptive_avg_pool2d", "reshape", "linear", "dequantize"]


def test_unfused_relu_module_is_converted():
    model, x = quantized(Head(linear_relu=False), (3, 17, 17))
    ops = [n["op"] for n in _check_against_torch(model, x, min_identical=0.95).nodes()]
    assert "relu" in ops

"""qnnpy.testing: the helpers pass on exact modules and fail, naming the layer or samples, on wrong ones."""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import qnnpy
from qnnpy import zoo
from qnnpy.testing import assert_bit_exact, assert_top1_agrees, engine_copy
from small_models import Head, quantized

SHAPE = (3, 12, 12)


@pytest.fixture()
def head() -> tuple[torch.nn.Module, qnnpy.QDQModule, list[torch.Tensor]]:
    model, x = quantized(Head(linear_relu=False), SHAPE)
    module = qnnpy.from_torch(model, (x,))
    return model, module, zoo.calibration_data(3, 2, SHAPE, seed=5)


def _with_one_weight_changed(conv: torch.nn.Module, index: tuple[int, ...]) -> None:
    """Move one int8 weight of a quantized conv/linear by one step, keeping its qparams."""
    weight = conv.weight()
    values = weight.int_repr().clone()
    values[index] += 1 if values[index] < 127 else -1
    changed = torch._make_per_channel_quantized_tensor(
        values, weight.q_per_channel_scales(), weight.q_per_channel_zero_points(), weight.q_per_channel_axis()
    )
    conv.set_weight_bias(changed, conv.bias())


@pytest.mark.parametrize("profile", ["fbgemm", "int32_bias"])
def test_bit_exact_passes_under_the_paired_engine(head, profile):
    model, module, inputs = head
    assert_bit_exact(model, module, inputs, profile=profile)


def test_bit_exact_accepts_a_single_tensor(head):
    model, module, inputs = head
    assert_bit_exact(model, module, inputs[0])


def test_bit_exact_restores_the_callers_engine(head):
    model, module, inputs = head
    torch.backends.quantized.engine = "fbgemm"
    assert_bit_exact(model, module, inputs, profile="int32_bias")
    assert torch.backends.quantized.engine == "fbgemm"


def test_bit_exact_fails_on_a_perturbed_weight_and_names_the_layer(head):
    model, module, inputs = head
    _with_one_weight_changed(model.body.fc, (3, 7))
    with pytest.raises(AssertionError) as info:
        assert_bit_exact(model, module, inputs)
    message = str(info.value)
    assert "first diverging layer 'body.fc' (linear)" in message
    # One output column of one weight row changed: at most the 6 logits of class 3 differ.
    match = re.search(r"(\d+)/(\d+) values identical \(([\d.]+)%\), max difference (\d+) LSB", message)
    assert match is not None, message
    identical, total, lsb = int(match[1]), int(match[2]), int(match[4])
    assert total == 3 * 2 * 10
    assert total - 6 <= identical < total
    assert lsb >= 1


def test_bit_exact_fails_on_a_mismatched_profile_and_engine(head):
    model, module, inputs = head
    with engine_copy(model, "fbgemm") as fbgemm_model:
        report = qnnpy.compare(fbgemm_model, module, inputs, profiles=["int32_bias"])
    first = report.first_divergence("int32_bias")
    assert first is not None, "int32_bias should differ from the fbgemm engine on this model"
    with pytest.raises(AssertionError, match=rf"first diverging layer '{re.escape(first.source)}'"):
        assert_bit_exact(model, module, inputs, profile="int32_bias", engine="fbgemm")


def test_bit_exact_rejects_an_unknown_profile(head):
    model, module, inputs = head
    with pytest.raises(ValueError, match="unknown profile"):
        assert_bit_exact(model, module, inputs, profile="fast")


@pytest.mark.parametrize("profile", ["fbgemm", "int32_bias"])
def test_top1_agrees_on_the_runtime(head, profile):
    model, module, inputs = head
    assert_top1_agrees(model, module, inputs, profile=profile)


def test_top1_agrees_on_tvm(head):
    model, module, inputs = head
    assert_top1_agrees(model, module, inputs, backend="tvm")


def test_top1_fails_and_lists_the_disagreeing_samples(head):
    model, module, inputs = head
    bias = model.body.fc.bias().detach().clone()
    bias[4] += 50.0  # class 4 now wins in PyTorch for (nearly) every sample
    model.body.fc.set_weight_bias(model.body.fc.weight(), bias)
    with torch.no_grad():
        pytorch = np.concatenate([model(x).argmax(1).numpy() for x in inputs])
    ours = np.concatenate([module.run(x.numpy(), profile="fbgemm").dequantized.argmax(1) for x in inputs])
    expected = np.flatnonzero(pytorch != ours).tolist()
    assert expected, "the bias change should flip some predictions"
    with pytest.raises(AssertionError, match=re.escape(f"{len(expected)}/6 sample(s): indices {expected}")):
        assert_top1_agrees(model, module, inputs)


def test_top1_rejects_an_unknown_backend(head):
    model, module, inputs = head
    with pytest.raises(ValueError, match="unknown backend"):
        assert_top1_agrees(model, module, inputs, backend="onnx")

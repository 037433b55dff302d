"""Real data: a CNN trained on scikit-learn's digits, quantized, and run by PyTorch, qnnpy's runtime and TVM."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch

import qnnpy
from qnnpy import tvm_bridge
from qnnpy.examples import digits
from qnnpy.testing import engine_copy


@dataclass
class Setup:
    data: digits.DigitsSplit
    float_model: digits.DigitsCNN
    quantized: torch.nn.Module
    module: qnnpy.QDQModule


@pytest.fixture(scope="module")
def setup() -> Setup:
    torch.set_num_threads(1)
    data = digits.load_split()
    float_model = digits.trained_model(data)
    quantized = digits.quantize_eager(float_model, data, engine="fbgemm")
    module = qnnpy.from_torch(quantized, (data.test_x,))  # the whole held-out split is one batch
    return Setup(data, float_model, quantized, module)


def _pytorch_logits(model: torch.nn.Module, engine: str, x: torch.Tensor) -> np.ndarray:
    with engine_copy(model, engine) as repacked, torch.no_grad():
        return repacked(x).numpy()


def _quantized(logits: np.ndarray, module: qnnpy.QDQModule) -> np.ndarray:
    scale, zero_point = module.output_qparams()[0]
    return torch.quantize_per_tensor(torch.from_numpy(logits), scale, zero_point, torch.quint8).int_repr().numpy()


@pytest.mark.parametrize(("engine", "profile"), [("fbgemm", "fbgemm"), ("qnnpack", "int32_bias")])
def test_runtime_logits_and_predictions_equal_pytorch(setup, engine, profile, capsys):
    x, labels = setup.data.test_x, setup.data.test_y
    expected = _pytorch_logits(setup.quantized, engine, x)
    result = setup.module.run(x.numpy(), profile=profile)
    np.testing.assert_array_equal(result.dequantized, expected)
    np.testing.assert_array_equal(result.quantized, _quantized(expected, setup.module))
    ours, theirs = result.dequantized.argmax(1), expected.argmax(1)
    assert (ours == theirs).all(), f"samples {np.flatnonzero(ours != theirs).tolist()} differ"
    with capsys.disabled():
        print(f"\ndigits ({len(labels)} held-out): PyTorch {engine} {digits.accuracy(torch.from_numpy(expected), labels):.2%}, "
              f"runtime {profile} {digits.accuracy(torch.from_numpy(result.dequantized), labels):.2%}; "
              f"{int((ours == theirs).sum())}/{len(labels)} predictions identical")


def test_quantization_keeps_the_float_accuracy(setup, capsys):
    with torch.no_grad():
        float_accuracy = digits.accuracy(setup.float_model(setup.data.test_x), setup.data.test_y)
    quantized_accuracy = digits.accuracy(torch.from_numpy(_pytorch_logits(setup.quantized, "fbgemm", setup.data.test_x)),
                                         setup.data.test_y)
    with capsys.disabled():
        print(f"\ndigits: float {float_accuracy:.2%}, quantized (fbgemm) {quantized_accuracy:.2%}")
    assert float_accuracy > 0.9, "the small CNN should learn the digits"
    assert abs(float_accuracy - quantized_accuracy) <= 0.02


def test_tvm_top1_accuracy_within_half_a_point_of_quantized_pytorch(setup, capsys):
    x, labels = setup.data.test_x, setup.data.test_y
    expected = _pytorch_logits(setup.quantized, "fbgemm", x)
    got = np.asarray(tvm_bridge.build(setup.module, form="qdq")(x.numpy()))
    scale, _ = setup.module.output_qparams()[0]
    steps = np.rint(np.abs(got.astype(np.float64) - expected) / scale)
    pytorch_accuracy = digits.accuracy(torch.from_numpy(expected), labels)
    tvm_accuracy = digits.accuracy(torch.from_numpy(got), labels)
    with capsys.disabled():
        print(f"\ndigits: TVM {tvm_accuracy:.2%} vs PyTorch fbgemm {pytorch_accuracy:.2%}; "
              f"{int((got.argmax(1) == expected.argmax(1)).sum())}/{len(labels)} predictions identical, "
              f"{(steps == 0).mean():.2%} of logits identical, max {int(steps.max())} LSB")
    assert abs(tvm_accuracy - pytorch_accuracy) <= 0.005


def test_fx_quantized_model_runs_bit_exact(setup):
    x, labels = setup.data.test_x, setup.data.test_y
    fx_model = digits.quantize_fx(setup.float_model, setup.data, engine="fbgemm")
    with torch.no_grad():
        expected = fx_model(x).numpy()
    result = qnnpy.from_torch(fx_model, (x,)).run(x.numpy(), profile="fbgemm")
    np.testing.assert_array_equal(result.dequantized, expected)
    assert digits.accuracy(torch.from_numpy(expected), labels) > 0.9

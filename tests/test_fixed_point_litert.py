"""The fixed_point profile against LiteRT's reference kernels, bit for bit.

One-op int8 .tflite models (tests/tflite_builder.py) run in LiteRT's interpreter with the
reference op resolver (BUILTIN_REF: tensorflow/lite/kernels/internal/reference/integer_ops,
no XNNPACK delegate); the same layer, built in qnnpy's IR with the same int8 weights and int32
bias, runs in the runtime under fixed_point. The inputs are exact: x = s_x (q - z_x) with s_x a
power of two, so quantize gives back q.
"""
from __future__ import annotations

import numpy as np
import pytest

import qnnpy
from qnnpy import _core
from fixed_point_reference import ref_multiply_by_quantized_multiplier, ref_quantize_multiplier, ref_single_rounding

S_X = 2.0**-4


@pytest.fixture(scope="module")
def litert():
    try:
        from ai_edge_litert import interpreter
    except ImportError:
        pytest.fail("ai-edge-litert is not installed (pip install -r requirements-test.txt)")
    from tflite_builder import QTensor, one_op_model
    return interpreter, QTensor, one_op_model


def _run_litert(interpreter, model: bytes, x_nhwc: np.ndarray) -> np.ndarray:
    it = interpreter.Interpreter(model_content=model,
                                 experimental_op_resolver_type=interpreter.OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], np.ascontiguousarray(x_nhwc))
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


def _run_qnnpy(g: _core.Graph, x_shape: tuple[int, ...], xq: np.ndarray, zx: int, out: str,
               profile: str = "fixed_point") -> tuple[np.ndarray, qnnpy.QDQModule]:
    module = qnnpy.QDQModule(g)
    xf = ((xq.astype(np.float32) - zx) * np.float32(S_X)).astype(np.float32)
    result = module.run(xf.reshape(x_shape), profile=profile, capture=True)
    np.testing.assert_array_equal(result.intermediates["q"], xq.reshape(x_shape))  # the input is exact
    return result.intermediates[out], module


CONV_CASES = [
    # op, cin, cout, kernel, stride, same padding, relu, zx, zy, output scale
    ("CONV_2D", 5, 37, 3, 1, True, False, -3, 4, 0.037),
    ("CONV_2D", 16, 8, 3, 2, True, True, 127, -128, 0.11),
    ("CONV_2D", 3, 20, 5, 1, False, False, -128, 100, 0.0009),  # multipliers up to 2.1 (positive shifts)
    ("CONV_2D", 8, 9, 1, 1, False, True, 0, 0, 0.08),
    ("DEPTHWISE_CONV_2D", 24, 24, 3, 1, True, True, 10, -7, 0.05),
    ("DEPTHWISE_CONV_2D", 13, 13, 3, 2, True, False, -128, 30, 0.2),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: f"{c[0]}-c{c[1]}-{c[2]}_k{c[3]}_s{c[4]}_relu{int(c[6])}")
def test_conv_equals_litert_reference_kernels(litert, case):
    interpreter, QTensor, one_op_model = litert
    op, cin, cout, k, stride, same, relu, zx, zy, s_y = case
    rng = np.random.default_rng(cin * 100 + cout)
    n, h, w = 2, 9, 11
    depthwise = op == "DEPTHWISE_CONV_2D"
    s_w = rng.uniform(2e-3, 3e-2, cout).astype(np.float32)
    wq = rng.integers(-127, 128, (cout, 1 if depthwise else cin, k, k), dtype=np.int8)
    xq = rng.integers(-128, 128, (n, cin, h, w), dtype=np.int8)
    if S_X * s_w.max() > s_y:  # small sums, so that not every output saturates
        assert S_X * s_w.min() < s_y
        wq = rng.integers(-8, 9, wq.shape, dtype=np.int8)
        xq = np.clip(zx + rng.integers(-8, 9, xq.shape), -128, 127).astype(np.int8)
    pad = 0
    if same:  # TFLite pads (out - 1) * stride + k - in in total, the smaller half first: symmetric here
        totals = [max((-(-size // stride) - 1) * stride + k - size, 0) for size in (h, w)]
        assert totals[0] == totals[1] and totals[0] % 2 == 0
        pad = totals[0] // 2
    g = _core.Graph()
    q = g.add_node("quantize", [g.add_input("x", [n, cin, h, w])], "q", "q", "int8", S_X, zx)
    config = np.array([2, stride, stride, pad, pad, 1, 1, 0, 0, cin if depthwise else 1, 0], np.int64)
    y = g.add_conv2d(q, "conv", "conv", 3, config, wq, s_w, np.zeros(cout, np.int64), 0,
                     (rng.standard_normal(cout) * 20 * s_y).astype(np.float32), relu, "int8", s_y, zy)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    ours, module = _run_qnnpy(g, (n, cin, h, w), xq, zx, "conv")

    weight = (QTensor((1, k, k, cout), "int8", s_w, np.zeros(cout, np.int64), 3, wq[:, 0].transpose(1, 2, 0))
              if depthwise else
              QTensor((cout, k, k, cin), "int8", s_w, np.zeros(cout, np.int64), 0, wq.transpose(0, 2, 3, 1)))
    bias = QTensor((cout,), "int32", np.float32(S_X) * s_w, np.zeros(cout, np.int64), 0, module.params["conv_bias"])
    oh, ow = ours.shape[2:]
    model = one_op_model(op, QTensor((n, h, w, cin), "int8", np.array([S_X]), np.array([zx])), weight, bias,
                         QTensor((n, oh, ow, cout), "int8", np.array([s_y]), np.array([zy])), (stride, stride), same,
                         relu)
    theirs = _run_litert(interpreter, model, xq.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    np.testing.assert_array_equal(ours, theirs)
    assert len(np.unique(ours)) > 40  # not a saturated output


@pytest.mark.parametrize("per_channel", [True, False])
def test_fully_connected_against_litert(litert, per_channel):
    """Per-tensor weights: LiteRT's reference FULLY_CONNECTED, bit for bit. Per-channel weights:
    LiteRT 2.3.0 rounds once (as TFLITE_SINGLE_ROUNDING), even with the reference op resolver,
    where fixed_point rounds twice as TFLite's reference integer kernels and its conv do: both are
    checked against their formula, and they differ only where the double rounding moves a value."""
    interpreter, QTensor, one_op_model = litert
    rng = np.random.default_rng(int(per_channel))
    rows, k, n, zx, zy, s_y = 6, 300, 45, 9, -11, 0.4
    s_w = rng.uniform(1e-3, 1e-2, n if per_channel else 1).astype(np.float32)
    wq = rng.integers(-127, 128, (n, k), dtype=np.int8)
    xq = rng.integers(-128, 128, (rows, k), dtype=np.int8)
    g = _core.Graph()
    q = g.add_node("quantize", [g.add_input("x", [rows, k])], "q", "q", "int8", S_X, zx)
    y = g.add_linear(q, "fc", "fc", wq, s_w, np.zeros(s_w.size, np.int64), 0 if per_channel else -1,
                     (rng.standard_normal(n) * 20 * s_y).astype(np.float32), False, "int8", s_y, zy)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    ours, module = _run_qnnpy(g, (rows, k), xq, zx, "fc")

    bias_q = module.params["fc_bias"]
    weight = QTensor((n, k), "int8", s_w, np.zeros(s_w.size, np.int64), 0, wq)
    bias = QTensor((n,), "int32", np.float32(S_X) * s_w, np.zeros(s_w.size, np.int64), 0, bias_q)
    model = one_op_model("FULLY_CONNECTED", QTensor((rows, k), "int8", np.array([S_X]), np.array([zx])), weight,
                         bias, QTensor((rows, n), "int8", np.array([s_y]), np.array([zy])))
    theirs = _run_litert(interpreter, model, xq)
    assert len(np.unique(ours)) > 40  # not a saturated output
    if not per_channel:
        np.testing.assert_array_equal(ours, theirs)
        return
    acc = (xq.astype(np.int64) - zx) @ wq.astype(np.int64).T + bias_q
    m = np.float64(S_X) * s_w.astype(np.float64) / np.float64(np.float32(s_y))
    multiplier, shift = np.array([ref_quantize_multiplier(float(v)) for v in m]).T
    double = np.clip(ref_multiply_by_quantized_multiplier(acc, multiplier, shift) + zy, -128, 127)
    single = np.clip(ref_single_rounding(acc, multiplier, shift) + zy, -128, 127)
    np.testing.assert_array_equal(ours, double)
    np.testing.assert_array_equal(theirs, single)
    assert 0 < (double != single).sum() < 0.05 * double.size  # the double-rounding cases occur, and are rare


def test_the_comparison_tells_the_profiles_apart(litert):
    """The float profiles differ from LiteRT somewhere on the same layer: the test above can fail."""
    interpreter, QTensor, one_op_model = litert
    rng = np.random.default_rng(3)
    n, cin, cout, h, w, zx, zy, s_y = 4, 32, 64, 10, 10, 3, -2, 0.07
    s_w = rng.uniform(2e-3, 3e-2, cout).astype(np.float32)
    wq = rng.integers(-127, 128, (cout, cin, 1, 1), dtype=np.int8)
    xq = rng.integers(-128, 128, (n, cin, h, w), dtype=np.int8)
    g = _core.Graph()
    q = g.add_node("quantize", [g.add_input("x", [n, cin, h, w])], "q", "q", "int8", S_X, zx)
    config = np.array([2, 1, 1, 0, 0, 1, 1, 0, 0, 1, 0], np.int64)
    y = g.add_conv2d(q, "conv", "conv", 3, config, wq, s_w, np.zeros(cout, np.int64), 0,
                     rng.standard_normal(cout).astype(np.float32), False, "int8", s_y, zy)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    ours, module = _run_qnnpy(g, (n, cin, h, w), xq, zx, "conv")
    model = one_op_model(
        "CONV_2D", QTensor((n, h, w, cin), "int8", np.array([S_X]), np.array([zx])),
        QTensor((cout, 1, 1, cin), "int8", s_w, np.zeros(cout, np.int64), 0, wq.transpose(0, 2, 3, 1)),
        QTensor((cout,), "int32", np.float32(S_X) * s_w, np.zeros(cout, np.int64), 0, module.params["conv_bias"]),
        QTensor((n, h, w, cout), "int8", np.array([s_y]), np.array([zy])))
    theirs = _run_litert(interpreter, model, xq.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    np.testing.assert_array_equal(ours, theirs)
    for profile in ("int32_bias", "fbgemm"):
        other, _ = _run_qnnpy(g, (n, cin, h, w), xq, zx, "conv", profile)
        assert (other != theirs).any(), profile

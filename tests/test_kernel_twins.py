"""Every vector kernel set (AVX2, and AVX-512 VNNI where the CPU has it) against the
scalar twins, bit for bit, on random shapes and edge values.

Graphs are built directly in the IR (no PyTorch), so shapes, qparams and weights can
be pushed to the edges: odd channel counts and tails, 1x1 to 7x7 kernels, stride 2,
dilation 2, groups and depthwise, zero points 0 and 255, tiny and huge scales, and
int32 bias saturation.
"""
from __future__ import annotations

import numpy as np
import pytest

from qnnpy import _core


def _run_both(graph: _core.Graph, x: np.ndarray, profile: str, vector_isa: str) -> None:
    outs = {}
    for isa in ("scalar", vector_isa):
        out, captured = _core.Executor(graph, profile, isa, 1 if isa == "scalar" else 2).run([x], True)
        outs[isa] = (out, captured)
    (out_s, cap_s), (out_v, cap_v) = outs["scalar"], outs[vector_isa]
    assert cap_s.keys() == cap_v.keys()
    for name in cap_s:
        np.testing.assert_array_equal(cap_s[name], cap_v[name], err_msg=f"{name} ({profile})")
    assert len(out_s) == len(out_v) == len(graph.outputs)
    for a, b in zip(out_s, out_v):
        np.testing.assert_array_equal(a, b)


def _quantized_input(g: _core.Graph, shape: tuple[int, ...], scale: float, zp: int) -> int:
    x = g.add_input("x", list(shape))
    return g.add_node("quantize", [x], "quant", "quant", "uint8", scale, zp)


def _conv(g, x, rng, cin, cout, k, stride, pad, dil, groups, relu, per_channel, out_scale, out_zp,
          bias_scale=1.0, weight_scale=None):
    w = rng.integers(-128, 128, (cout, cin // groups, k[0], k[1]), dtype=np.int8)
    if per_channel:
        scale = weight_scale if weight_scale is not None else rng.uniform(1e-3, 5e-2, cout)
        zp, axis = np.zeros(cout, np.int64), 0
    else:
        scale, zp, axis = np.array([0.02]), np.array([0]), -1
    config = np.array([2, stride, stride, pad, pad, dil, dil, 0, 0, groups, 0], np.int64)
    bias = (rng.standard_normal(cout) * bias_scale).astype(np.float32)
    return g.add_conv2d(x, "conv", "conv", 3, config, w, scale, zp, axis, bias, relu, "uint8", out_scale, out_zp)


CONV_CASES = [
    # cin, cout, kernel, stride, pad, dilation, groups, h, w
    (3, 5, (7, 7), 2, 3, 1, 1, 19, 23),
    (17, 33, (3, 3), 1, 1, 1, 1, 9, 11),
    (16, 16, (1, 1), 1, 0, 1, 1, 7, 5),
    (12, 9, (3, 3), 2, 2, 2, 3, 13, 10),
    (13, 13, (3, 3), 1, 1, 1, 13, 8, 9),      # depthwise, channel tail
    (24, 24, (5, 5), 2, 2, 1, 24, 11, 12),    # depthwise, stride 2
    (40, 40, (3, 3), 1, 2, 2, 40, 9, 10),     # depthwise, dilation 2, 16 + 16 + 8 channels
    (33, 33, (7, 7), 1, 3, 1, 33, 9, 8),      # depthwise, 49 taps (the generic window loop)
    (16, 16, (1, 3), 2, 1, 1, 16, 7, 9),      # depthwise, 3 taps
    (8, 40, (1, 3), 1, 0, 1, 2, 6, 17),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: f"c{c[0]}-{c[1]}_k{c[2][0]}x{c[2][1]}_s{c[3]}_d{c[5]}_g{c[6]}")
@pytest.mark.parametrize("input_zp", [0, 255, 131])
@pytest.mark.parametrize("profile", ["int32_bias", "fbgemm", "fixed_point"])
def test_conv_twins(case, input_zp, profile, vector_isa):
    cin, cout, k, stride, pad, dil, groups, h, w = case
    rng = np.random.default_rng(hash((case, input_zp)) % 2**32)
    g = _core.Graph()
    x = _quantized_input(g, (2, cin, h, w), 0.05, input_zp)
    for relu, per_channel in ((True, True), (False, False)):
        gg = _core.Graph.deserialize(g.serialize())
        y = _conv(gg, x, rng, cin, cout, k, stride, pad, dil, groups, relu, per_channel, 0.7, 7)
        gg.mark_output(gg.add_node("dequantize", [y], "dq", "dq", "float32"))
        _run_both(gg, rng.standard_normal((2, cin, h, w)).astype(np.float32) * 3, profile, vector_isa)


# Layers with enough work that a second worker takes part (conv_runner.cpp: at least 2^19
# multiply-adds per worker for the GEMM, 100 * 2^10 for depthwise), so that each way of
# splitting runs: rows of a 3x3 conv, rows of a grouped conv, output-column blocks of a
# 1x1 conv on 7x7 pixels and of a one-row linear, and depthwise output rows (stride 2).
SPLIT_CASES = [
    # cin, cout, kernel, stride, pad, groups, h, w
    (16, 32, 3, 1, 1, 1, 56, 56),
    (32, 64, 3, 1, 1, 4, 56, 56),
    (512, 320, 1, 1, 0, 1, 7, 7),
    (64, 64, 3, 2, 1, 64, 56, 56),
]


@pytest.mark.parametrize("case", SPLIT_CASES, ids=lambda c: f"c{c[0]}-{c[1]}_k{c[2]}_g{c[5]}_{c[6]}x{c[7]}")
@pytest.mark.parametrize("profile", ["int32_bias", "fbgemm"])
def test_convs_split_over_two_workers_equal_the_scalar_twins(case, profile, vector_isa):
    cin, cout, k, stride, pad, groups, h, w = case
    rng = np.random.default_rng(cin * cout + h)
    g = _core.Graph()
    x = _quantized_input(g, (1, cin, h, w), 0.05, 128)
    y = _conv(g, x, rng, cin, cout, (k, k), stride, pad, 1, groups, True, True, 0.1, 5)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    _run_both(g, rng.standard_normal((1, cin, h, w)).astype(np.float32) * 3, profile, vector_isa)


def test_one_row_linear_split_over_two_workers_equals_the_scalar_twin(vector_isa):
    rng = np.random.default_rng(11)
    g = _core.Graph()
    x = g.add_node("quantize", [g.add_input("x", [1, 4096])], "q", "q", "uint8", 0.03, 77)
    y = g.add_linear(x, "fc", "fc", rng.integers(-128, 128, (1100, 4096), dtype=np.int8), rng.uniform(1e-3, 1e-2, 1100),
                     np.zeros(1100, np.int64), 0, rng.standard_normal(1100).astype(np.float32), False, "uint8", 0.2, 100)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    _run_both(g, rng.standard_normal((1, 4096)).astype(np.float32), "fbgemm", vector_isa)


@pytest.mark.parametrize("dtype, input_zp", [("int8", -128), ("int8", 0), ("int8", 37), ("uint8", 255), ("uint8", 3)])
@pytest.mark.parametrize("profile", ["int32_bias", "fixed_point"])
def test_depthwise_equals_the_dense_conv_with_block_diagonal_weights(dtype, input_zp, profile, vector_isa):
    """The depthwise kernels (raw x, zx folded into the bias) against the GEMM paths."""
    rng = np.random.default_rng(input_zp + 1000)
    c, stride, pad, dil = 35, 2, 2, 2
    w = rng.integers(-128, 128, (c, 1, 3, 3), dtype=np.int8)
    dense = np.zeros((c, c, 3, 3), np.int8)
    dense[np.arange(c), np.arange(c)] = w[:, 0]
    scale, bias = rng.uniform(1e-3, 5e-2, c), rng.standard_normal(c).astype(np.float32)
    x_in = rng.standard_normal((2, c, 10, 9)).astype(np.float32) * 3
    outs = {}
    for isa in ("scalar", vector_isa):
        for groups, weight in ((c, w), (1, dense)):
            g = _core.Graph()
            x = g.add_node("quantize", [g.add_input("x", [2, c, 10, 9])], "q", "q", dtype, 0.05, input_zp)
            config = np.array([2, stride, stride, pad, pad, dil, dil, 0, 0, groups, 0], np.int64)
            y = g.add_conv2d(x, "conv", "conv", 3, config, weight, scale, np.zeros(c, np.int64), 0, bias, True,
                             "uint8", 0.7, 7)
            g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
            ex = _core.Executor(g, profile, isa, 2)
            outs[(isa, groups)] = ex.run([x_in], False)[0][0]
            if groups == c:  # stride 2: the row kernel on every set
                assert [k for k in ex.node_kernels() if k] == ["depthwise"]
    for key, out in outs.items():
        np.testing.assert_array_equal(out, outs[("scalar", 1)], err_msg=str(key))


@pytest.mark.parametrize("out_dtype, out_zp, relu", [("int8", -5, False), ("int8", 100, True), ("uint8", 250, False)])
def test_requantize_twins_on_wide_rows(out_dtype, out_zp, relu, vector_isa):
    """77 output channels: the 32-wide packing loop, the 8-wide loop and the scalar tail."""
    rng = np.random.default_rng(out_zp + 300)
    g = _core.Graph()
    x = _quantized_input(g, (1, 40, 5, 6), 0.05, 128)
    w = rng.integers(-128, 128, (77, 40, 1, 1), dtype=np.int8)
    config = np.array([2, 1, 1, 0, 0, 1, 1, 0, 0, 1, 0], np.int64)
    y = g.add_conv2d(x, "conv", "conv", 3, config, w, rng.uniform(1e-3, 5e-2, 77), np.zeros(77, np.int64), 0,
                     rng.standard_normal(77).astype(np.float32) * 50, relu, out_dtype, 0.05, out_zp)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    for profile in ("int32_bias", "fbgemm", "fixed_point"):
        _run_both(g, rng.standard_normal((1, 40, 5, 6)).astype(np.float32) * 4, profile, vector_isa)


@pytest.mark.parametrize("profile", ["int32_bias", "fbgemm"])
def test_conv_twins_with_extreme_scales_and_saturated_bias(profile, vector_isa):
    rng = np.random.default_rng(7)
    g = _core.Graph()
    x = _quantized_input(g, (1, 9, 8, 8), 1e-6, 200)
    # Tiny weight scales and huge biases: the int32 bias saturates; huge output scale.
    scales = np.array([1e-9, 1e-3, 30.0, 1e-7, 2.0, 1e-9, 0.5, 1e-8, 4e-4, 1e-9, 3.0])
    y = _conv(g, x, rng, 9, 11, (3, 3), 1, 1, 1, 1, False, True, 1e4, 255, bias_scale=1e9, weight_scale=scales)
    conv_node = g.nodes()[-1]
    assert conv_node["ints"]["bias_saturated"][0] > 0
    y2 = _conv(g, y, rng, 11, 6, (1, 1), 1, 0, 1, 1, True, True, 1e-5, 0)
    g.mark_output(g.add_node("dequantize", [y2], "dq", "dq", "float32"))
    _run_both(g, (rng.standard_normal((1, 9, 8, 8)) * 1e-4).astype(np.float32), profile, vector_isa)


@pytest.mark.parametrize("rows, k, n", [(1, 512, 1000), (13, 37, 21), (7, 1, 3), (20, 64, 16)])
@pytest.mark.parametrize("profile", ["int32_bias", "fbgemm", "fixed_point"])
def test_linear_twins(rows, k, n, profile, vector_isa):
    rng = np.random.default_rng(rows * 1000 + k)
    g = _core.Graph()
    x = g.add_input("x", [rows, k])
    q = g.add_node("quantize", [x], "q", "q", "uint8", 0.03, 77)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    zp = rng.integers(-3, 4, n)  # nonzero weight zero points
    y = g.add_linear(q, "fc", "fc", w, rng.uniform(1e-3, 1e-2, n), zp, 0, rng.standard_normal(n).astype(np.float32),
                     False, "uint8", 0.2, 100)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    _run_both(g, rng.standard_normal((rows, k)).astype(np.float32), profile, vector_isa)


# 131 channels: two whole 64-byte zmm blocks of the AVX-512 max pool and a masked rest.
@pytest.mark.parametrize("shape", [(1, 64, 56, 56), (2, 3, 5, 7), (1, 13, 9, 1), (1, 131, 6, 5)])
@pytest.mark.parametrize("relu", [0, 1])
@pytest.mark.parametrize("profile", ["int32_bias", "fbgemm"])
def test_elementwise_and_pool_twins(shape, relu, profile, vector_isa):
    rng = np.random.default_rng(sum(shape) + relu)
    g = _core.Graph()
    x = g.add_input("x", list(shape))
    a = g.add_node("quantize", [x], "a", "a", "uint8", 0.02, 255)
    b = g.add_node("quantize", [x], "b", "b", "uint8", 0.037, 0)
    s = g.add_node("add", [a, b], "add", "add", "uint8", 0.05, 128, ints={"relu": [relu]})
    r = g.add_node("relu", [s], "relu", "relu", "uint8", 0.05, 128)
    p = g.add_node("max_pool2d", [r], "mp", "mp", "uint8", 0.05, 128,
                   ints={"kernel": [3, 2], "stride": [2, 1], "padding": [1, 1], "dilation": [1, 2], "ceil_mode": [1]})
    out_hw = [max(1, (shape[2] + 1) // 3), max(1, (shape[3] + 2) // 2)]
    avg = g.add_node("adaptive_avg_pool2d", [p], "avg", "avg", "uint8", 0.05, 128, ints={"output_size": out_hw})
    avg_in = g.add_node("adaptive_avg_pool2d", [a], "avg_in", "avg_in", "uint8", 0.02, 255,
                        ints={"output_size": [2, 3]})
    flat = g.add_node("reshape", [avg], "flat", "flat", "uint8", 0.05, 128,
                      ints={"shape": [shape[0], shape[1] * out_hw[0] * out_hw[1]]})
    g.mark_output(g.add_node("dequantize", [flat], "dq", "dq", "float32"))
    g.mark_output(g.add_node("dequantize", [avg_in], "dq_in", "dq_in", "float32"))
    _run_both(g, (rng.standard_normal(shape) * 4).astype(np.float32), profile, vector_isa)


def test_quantize_twins_on_huge_values_and_tails(vector_isa):
    g = _core.Graph()
    x = g.add_input("x", [1, 1, 1, 1003])
    q = g.add_node("quantize", [x], "q", "q", "uint8", 1e-3, 3)
    g.mark_output(g.add_node("dequantize", [q], "dq", "dq", "float32"))
    values = np.concatenate([np.linspace(-1e12, 1e12, 500), np.linspace(-0.3, 0.3, 503)]).astype(np.float32)
    _run_both(g, values.reshape(1, 1, 1, 1003), "fbgemm", vector_isa)


@pytest.mark.parametrize("shape", [(1, 40, 9, 7), (2, 13, 5, 3), (1, 3, 1, 1)])
@pytest.mark.parametrize("dtype, zp", [("uint8", 0), ("uint8", 255), ("int8", -128), ("int8", 5)])
@pytest.mark.parametrize("profile", ["int32_bias", "fbgemm", "qnnpack"])
def test_table_mul_cat_and_avg_pool_twins(shape, dtype, zp, profile, vector_isa):
    """Lookup-table ops, broadcast mul, cat (copy, vector and tail channels), avg_pool2d and mean
    (qnnpack: QNNPACK's average pooling on uint8)."""
    rng = np.random.default_rng(sum(shape) + abs(zp))
    g = _core.Graph()
    x = g.add_input("x", list(shape))
    a = g.add_node("quantize", [x], "a", "a", dtype, 0.021, zp)
    b = g.add_node("quantize", [x], "b", "b", dtype, 0.3, 0)
    outs = [
        g.add_node("hardswish", [a], "hs", "hs", dtype, 0.017, 3),
        g.add_node("sigmoid", [b], "sg", "sg", dtype, 1 / 256, -128 if dtype == "int8" else 0),
        g.add_node("leaky_relu", [a], "lr", "lr", dtype, 0.02, zp, floats={"alpha": 0.1}),
        g.add_node("clamp", [a], "cl", "cl", dtype, 0.021, zp, floats={"min": -0.5, "max": 1.0}),
        g.add_node("add_scalar", [a], "as", "as", dtype, 0.03, 9, floats={"scalar": 0.4}),
        g.add_node("mul_scalar", [b], "ms", "ms", dtype, 0.15, 0, floats={"scalar": -0.5}),
    ]
    pooled = g.add_node("adaptive_avg_pool2d", [b], "gap", "gap", dtype, 0.3, 0, ints={"output_size": [1, 1]})
    outs.append(g.add_node("mul", [a, pooled], "mul", "mul", dtype, 0.05, 1))
    outs.append(g.add_node("mul", [a, b], "mul_full", "mul_full", dtype, 0.5, zp))
    outs.append(g.add_node("cat", [a, b, a], "cat", "cat", dtype, 0.021, zp, ints={"axis": [1]}))
    outs.append(g.add_node("cat", [a, b], "cat_w", "cat_w", dtype, 0.09, 2, ints={"axis": [3]}))
    for ceil, include_pad, divisor in ((1, 0, 0), (0, 1, 0), (0, 0, 5)):
        name = f"avg_{ceil}{include_pad}{divisor}"
        outs.append(g.add_node("avg_pool2d", [a], name, name, dtype, 0.021, zp, ints={
            "kernel": [3, 2], "stride": [2, 1], "padding": [1, 1], "ceil_mode": [ceil],
            "count_include_pad": [include_pad], "divisor_override": [divisor]}))
    outs.append(g.add_node("mean", [a], "mean", "mean", dtype, 0.021, zp, ints={"axes": [2, 3], "keepdim": [1]}))
    c = shape[1]
    for relu in (False, True):
        outs.append(g.add_batch_norm2d(a, f"bn{relu}", f"bn{relu}", rng.standard_normal(c).astype(np.float32),
                                       rng.standard_normal(c).astype(np.float32), rng.standard_normal(c).astype(np.float32),
                                       rng.uniform(0.1, 2.0, c).astype(np.float32), 1e-5, relu, dtype, 0.04, zp))
    for i, y in enumerate(outs):
        g.mark_output(g.add_node("dequantize", [y], f"dq{i}", f"dq{i}", "float32"))
    _run_both(g, (rng.standard_normal(shape) * 3).astype(np.float32), profile, vector_isa)


@pytest.mark.parametrize("input_zp", [0, 200])
@pytest.mark.parametrize("profile", ["int32_bias", "fbgemm", "fixed_point"])
def test_conv_transpose_twins(input_zp, profile, vector_isa):
    rng = np.random.default_rng(input_zp + 3)
    g = _core.Graph()
    x = _quantized_input(g, (2, 6, 5, 7), 0.05, input_zp)
    w = rng.integers(-128, 128, (6, 5, 3, 4), dtype=np.int8)
    # stride (2, 3), padding (1, 2), dilation (1, 2), output_padding (1, 0), groups 1, transposed
    config = np.array([2, 2, 3, 1, 2, 1, 2, 1, 0, 1, 1], np.int64)
    y = g.add_conv_transpose2d(x, "up", "up", 2, config, w, np.array([0.02]), np.array([0]), -1,
                               rng.standard_normal(5).astype(np.float32), True, "uint8", 0.3, 11)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    _run_both(g, (rng.standard_normal((2, 6, 5, 7)) * 3).astype(np.float32), profile, vector_isa)

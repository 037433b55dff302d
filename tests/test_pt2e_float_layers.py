"""The integer-accumulating path of PT2E float-output layers (dequantize -> conv / linear with an int8
weight -> float, no quantize after): the runtime accumulates (x - zx)(w - zw) exactly with the integer
kernels and scales once, y = fl(fl(float(acc) * fl(s_x * s_w[c])) + bias[c]); QNNPY_FLOAT_LAYERS=float
keeps the float32 path (dequantize, then float dot products)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import qnnpy
from qnnpy import _core
from pt2e_models import inputs, pt2e

LAYERS = ("float_conv2d", "float_linear")


def _run(module: qnnpy.QDQModule, x: torch.Tensor) -> tuple[dict[str, np.ndarray], list[str]]:
    """Every tensor of one fbgemm run and the kernel each node used (an executor made now reads
    QNNPY_FLOAT_LAYERS)."""
    executor = _core.Executor(module.graph, "fbgemm", "", 1)
    _, captured = executor.run([x.numpy()], True)
    return captured, executor.node_kernels()


def _exact(module: qnnpy.QDQModule, node: dict, captured: dict[str, np.ndarray]) -> tuple[np.ndarray, float]:
    """The layer in float64 from its 8-bit input and int8 weight (PT2E's dequantize -> op, without
    rounding), and the largest |bias|."""
    dequantize = next(n for n in module.nodes() if n["output"] == node["inputs"][0])
    x_info = next(v for v in module.graph.values() if v["name"] == dequantize["inputs"][0])
    params = module.params
    q = torch.from_numpy(captured[x_info["name"]].astype(np.float64))
    x = (q - x_info["zero_point"]) * x_info["scale"]
    w = torch.from_numpy(params[node["params"]["weight"]].astype(np.float64))
    scale = torch.from_numpy(params[node["params"]["weight"] + "_scale"].astype(np.float64))
    w = w * scale.reshape(-1, *[1] * (w.dim() - 1))  # symmetric int8 weights: zero point 0
    b = torch.from_numpy(params[node["params"]["bias_float"]].astype(np.float64))
    if node["op"] == "float_linear":
        return torch.nn.functional.linear(x, w, b).numpy(), float(b.abs().max())
    ints = node["ints"]
    y = torch.nn.functional.conv2d(x, w, b, ints["stride"], ints["padding"], ints["dilation"], ints["groups"][0])
    return y.numpy(), float(b.abs().max())


def _assert_integer_path_rounding(module: qnnpy.QDQModule, node: dict, captured: dict[str, np.ndarray]) -> None:
    """The integer path's output: float(acc) is exact (|acc| < 2^24 here), then two float32 roundings."""
    exact, bias = _exact(module, node, captured)
    ours = captured[node["output"]]
    assert ours.shape == exact.shape
    bound = 2.0 ** -22 * (np.abs(exact).max() + bias)
    assert np.abs(ours - exact).max() <= bound, (node["source"], np.abs(ours - exact).max(), bound)


def test_float_output_layers_accumulate_in_integers(monkeypatch):
    gm = pt2e("float_ops", "x86")
    x = inputs(1)[0]
    module = qnnpy.from_torch(gm, (x,))
    nodes = module.nodes()
    layers = [i for i, n in enumerate(nodes) if n["op"] in LAYERS]
    assert len(layers) == 4
    integer, integer_kernels = _run(module, x)
    monkeypatch.setenv("QNNPY_FLOAT_LAYERS", "float")
    floating, float_kernels = _run(module, x)
    for i in layers:
        node = nodes[i]
        assert integer_kernels[i] in ("gemm_u8s8", "gemm_u8s8_runs", "gemm_u8s8_columns", "gemm_s16", "depthwise",
                                      "depthwise_quads"), node
        assert float_kernels[i] == "", node
        _assert_integer_path_rounding(module, node, integer)
        # The float32 path is PT2E's arithmetic in another summation order: within float32 rounding of k terms.
        exact_f, bias = _exact(module, node, floating)
        k = np.prod(module.params[node["params"]["weight"]].shape[1:])
        assert np.abs(floating[node["output"]] - exact_f).max() <= k * 2.0 ** -23 * (np.abs(exact_f).max() + bias)


def test_float_linear_over_the_last_axis_of_a_rank4_tensor():
    """The runtime stores rank-4 tensors NHWC; a linear runs along the last axis of the logical
    (NCHW) shape, as PyTorch's does, on the integer path too."""
    shape = (1, 3, 12, 10)
    gm = pt2e("linear_on_rank4", "x86", shape=shape)
    x = inputs(1, shape=shape)[0]
    module = qnnpy.from_torch(gm, (x,))
    captured, _ = _run(module, x)
    layers = [n for n in module.nodes() if n["op"] == "float_linear" and len(n["inputs"]) == 2]
    assert layers and all(captured[n["output"]].ndim == 4 for n in layers)
    for node in layers:
        _assert_integer_path_rounding(module, node, captured)


def test_integer_accumulation_is_the_default(monkeypatch):
    """Only QNNPY_FLOAT_LAYERS=float selects the float32 path; \"integer\" (or unset) accumulates in integers."""
    gm = pt2e("float_ops", "x86")
    x = inputs(1)[0]
    module = qnnpy.from_torch(gm, (x,))
    monkeypatch.setenv("QNNPY_FLOAT_LAYERS", "integer")
    _, kernels = _run(module, x)
    assert sum(k != "" for k, n in zip(kernels, module.nodes()) if n["op"] in LAYERS) == 4


def test_integer_accumulation_keeps_each_image_of_a_batch_apart():
    """A batch of two computes each image's float-output layers as a batch of one does (NCHW planes per image)."""
    gm = pt2e("float_ops", "x86")
    a, b = inputs(2)
    module = qnnpy.from_torch(gm, (a,), dynamic_batch=True)
    both = module.run(np.concatenate([a.numpy(), b.numpy()]), capture=True).intermediates
    one, two = module.run(a.numpy(), capture=True).intermediates, module.run(b.numpy(), capture=True).intermediates
    layers = [n for n in module.nodes() if n["op"] in LAYERS]
    assert all(len(n["inputs"]) == 2 for n in layers)  # each reads its 8-bit source
    for n in layers:
        np.testing.assert_array_equal(both[n["output"]], np.concatenate([one[n["output"]], two[n["output"]]]))


@pytest.mark.parametrize("dtype, zero_point, groups", [("int8", -3, 1), ("uint8", 128, 8), ("int8", 5, 8)])
def test_float_output_conv_on_a_hand_built_graph(dtype, zero_point, groups):
    """int8 inputs (the exact int16 GEMM) and depthwise convs (the depthwise kernel), which the PT2E test models
    do not reach: quantize -> dequantize -> float_conv2d (int8 weight, per-channel scales, float bias)."""
    rng = np.random.default_rng(3)
    g = _core.Graph()
    x = g.add_input("x", [2, 8, 7, 6])
    q = g.add_node("quantize", [x], "q", "q", dtype, 0.05, zero_point)
    dq = g.add_node("dequantize", [q], "dq", "dq", "float32")
    weight = rng.integers(-127, 128, size=(8, 8 // groups, 3, 3), dtype=np.int8)
    scales = rng.uniform(0.001, 0.01, size=8).astype(np.float32)
    bias = rng.normal(size=8).astype(np.float32)
    conv = g.add_float_layer("float_conv2d", dq, "conv", "conv", weight, scales, np.zeros(8, np.int64), 0, bias,
                             {"stride": [2, 1], "padding": [1, 1], "dilation": [1, 1], "groups": [groups]})
    g.mark_output(conv)
    assert len(g.nodes()[-1]["inputs"]) == 2
    inputs_ = rng.normal(size=(2, 8, 7, 6)).astype(np.float32) * 3
    executor = _core.Executor(g, "int32_bias", "", 1)
    (out,), captured = executor.run([inputs_], True)
    if groups == 8:  # uint8 inputs run on the quads of rows where the default kernel set has them
        assert executor.node_kernels()[-1] in (("depthwise", "depthwise_quads") if dtype == "uint8" else ("depthwise",))
    else:
        assert executor.node_kernels()[-1] == ("gemm_s16" if dtype == "int8" else "gemm_u8s8")
    x_real = (torch.from_numpy(captured["q"].astype(np.float64)) - zero_point) * np.float64(np.float32(0.05))
    w_real = torch.from_numpy(weight.astype(np.float64)) * torch.from_numpy(scales.astype(np.float64)).reshape(-1, 1, 1, 1)
    exact = torch.nn.functional.conv2d(x_real, w_real, torch.from_numpy(bias.astype(np.float64)), (2, 1), 1, 1,
                                       groups).numpy()
    assert out.shape == exact.shape
    assert np.abs(out - exact).max() <= 2.0 ** -22 * (np.abs(exact).max() + np.abs(bias).max())


class _SharedConv(torch.nn.Module):
    """One conv called twice: the XNNPACK quantizer annotates its weight at the first call only, so the second
    call is an island ``dequantize -> conv (float weight) -> relu -> quantize`` that converts in float; its output
    shares its qparams with a concatenation of the raw input, whose range reaches below 0."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv(x))
        return torch.cat([torch.relu(self.conv(y)), x], 1)


def test_an_island_converted_in_float_keeps_its_relu():
    """The capture folds a ReLU after a conv / linear / add into its island; when the island converts in float
    (here: a float weight), the ReLU must stay before the quantize (RAFT-large's motion encoder lost it)."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from pt2e_models import quantizer

    torch.manual_seed(0)
    x = torch.randn(1, 4, 8, 8)
    prepared = prepare_pt2e(torch.export.export(_SharedConv().eval(), (x,), strict=True).module(), quantizer("xnnpack"))
    prepared(x)
    gm = convert_pt2e(prepared)
    module = qnnpy.from_torch(gm, (x,))
    ops = [n["op"] for n in module.nodes()]
    assert ops[ops.index("float_conv2d"):ops.index("float_conv2d") + 3] == ["float_conv2d", "float_relu", "quantize"]
    for seed in (1, 2):
        xs = torch.randn(1, 4, 8, 8, generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            np.testing.assert_array_equal(module.run(xs.numpy()).dequantized, gm(xs).numpy())

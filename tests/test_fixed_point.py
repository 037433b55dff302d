"""The fixed_point profile: TFLite / gemmlowp requantization (Q31 multiplier and shift).

Against the reference of tests/fixed_point_reference.py (the published definitions in int64
numpy; it never calls the code under test). Layers are checked one by one: each layer's int32
accumulator is derived in numpy from the int8 input the runtime captured, the int8 weights and
the int32 bias.
"""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

import qnnpy
from qnnpy import _core, zoo
from fixed_point_reference import (INT32_MAX, INT32_MIN, ref_multiply_by_quantized_multiplier,
                                   ref_quantize_multiplier, ref_requantize, wrap_int32)
from small_models import Upsampling, conv_cases, quantized


# ---- (a) the constants and the kernel twins on edge values ----

def test_quantize_multiplier_follows_tflite():
    rng = np.random.default_rng(0)
    values = [0.0, 1.0, 0.5, 0.75, 2.0**-31, 2.0**-32, 2.0**-33, 3e-10, 1 - 2.0**-40, 0.5 - 2.0**-45, 2.0**29,
              2.0**30 - 1, 123.456, 1.5]
    values += list(np.exp(rng.uniform(math.log(1e-11), math.log(1e8), 2000)))
    for m in values:
        assert _core.quantize_multiplier(float(m)) == ref_quantize_multiplier(float(m)), m
    multiplier, shift = _core.quantize_multiplier(1 - 2.0**-40)  # rounds up to 2^31: 2^30 and shift + 1
    assert (multiplier, shift) == (2**30, 1)


@pytest.mark.parametrize("m", [-1e-3, float("nan"), float("inf"), 2.0**30, 2.0**30 - 2.0**-10, 1e12])
def test_quantize_multiplier_refuses_what_it_cannot_represent(m):
    with pytest.raises(ValueError, match="quantize_multiplier"):
        _core.quantize_multiplier(m)


def _edge_case(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    """acc (9 x n), bias, multiplier and shift (n >= 16) with the extremes in the first columns."""
    acc = rng.integers(INT32_MIN, INT32_MAX, (9, n), endpoint=True, dtype=np.int64)
    acc[0, : n // 2] = rng.integers(-5000, 5000, n // 2)
    acc[1] = INT32_MIN
    acc[2] = INT32_MAX
    acc[3] = INT32_MIN + rng.integers(0, 3, n)
    acc[4] = INT32_MAX - rng.integers(0, 3, n)
    acc[5] = rng.integers(-3, 4, n)
    # Exact ties of the high multiply and of the divide: acc * 2^30 * 2 / 2^31 = acc, then halves.
    acc[6] = rng.integers(-1000, 1000, n) * 2 + 1
    bias = rng.integers(INT32_MIN, INT32_MAX, n, endpoint=True, dtype=np.int64)
    bias[: n // 2] = rng.integers(-100, 100, n // 2)
    multiplier = rng.integers(2**30, 2**31, n, dtype=np.int64)
    multiplier[:4] = [2**31 - 1, 2**30, 2**31 - 2, 0]
    multiplier[4] = INT32_MIN  # never produced by quantize_multiplier; the kernel saturates as gemmlowp
    shift = rng.integers(-31, 31, n)
    shift[:8] = [-31, 30, 0, -1, 0, 1, -30, 29]
    shift[8:16] = -1  # with multiplier 2^30: ties at every odd value
    multiplier[8:16] = 2**30
    return acc, bias, multiplier, shift


@pytest.mark.parametrize("zero_point, lo, hi", [(0, 0, 255), (255, 0, 255), (-128, -128, 127), (127, -128, 127),
                                                (37, 37, 255), (-5, -5, 127), (100, 0, 255)])
@pytest.mark.parametrize("n", [77, 35, 19, 16])
def test_requantize_twins_and_reference_on_edge_values(zero_point, lo, hi, n):
    """The AVX2 kernel's 32-wide loop, 8-wide loop and scalar tail (77 = 64 + 8 + 5, 19 = 16 + 3)."""
    if not _core.cpu_has_avx2():
        pytest.fail("this test machine is expected to have AVX2")
    rng = np.random.default_rng(n * 1000 + zero_point + 200)
    acc, bias, multiplier, shift = _edge_case(rng, n)
    args = [a.astype(np.int32) for a in (acc, bias, multiplier, shift)]
    scalar = _core.requantize_fixed_point(*args, zero_point, lo, hi, "scalar")
    avx2 = _core.requantize_fixed_point(*args, zero_point, lo, hi, "avx2")
    np.testing.assert_array_equal(scalar, avx2)
    expected = np.clip(ref_multiply_by_quantized_multiplier(wrap_int32(acc + bias), multiplier, shift) + zero_point,
                       lo, hi)
    np.testing.assert_array_equal(scalar.astype(np.int64), expected)


def test_fixed_point_requantize_binding_follows_the_reference():
    rng = np.random.default_rng(5)
    acc = rng.integers(INT32_MIN, INT32_MAX, 4000, endpoint=True, dtype=np.int64)
    acc[:1000] = rng.integers(-70000, 70000, 1000)
    acc[1000:1010] = [INT32_MIN, INT32_MAX, -1, 0, 1, 3, -3, 5, -5, 7]
    for multiplier, shift in [(2**30, -1), (2**30, 0), (2**31 - 1, -31), (1518500250, 3), (1073741825, -7),
                              (2**30, 30), (INT32_MIN, 0), (0, 0)]:
        got = _core.fixed_point_requantize(acc.astype(np.int32), multiplier, shift)
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, ref_multiply_by_quantized_multiplier(acc, multiplier, shift),
                                      err_msg=f"{multiplier} {shift}")
    # The high multiply rounds ties toward +infinity: 2.5 -> 3, -2.5 -> -2, -1.5 -> -1.
    ties = _core.fixed_point_requantize(np.array([5, -5, -3], np.int32), 2**30, 0)
    np.testing.assert_array_equal(ties, [3, -2, -1])
    # Double rounding: 5 * 0.25 = 1.25 gives 3 / 2 -> 2; the divide rounds ties away from zero: -3 / 2 -> -2.
    np.testing.assert_array_equal(_core.fixed_point_requantize(np.array([5, -6], np.int32), 2**30, -1), [2, -2])


def test_bindings_refuse_bad_arguments():
    acc = np.zeros((2, 3), np.int32)
    with pytest.raises(ValueError, match=r"fixed_point_requantize: shift must be in \[-31, 30\], got 31"):
        _core.fixed_point_requantize(acc, 2**30, 31)
    ok = [np.zeros(3, np.int32), np.full(3, 2**30, np.int32), np.zeros(3, np.int32)]
    with pytest.raises(ValueError, match="must have 3 values"):
        _core.requantize_fixed_point(acc, np.zeros(2, np.int32), ok[1], ok[2], 0, 0, 255, "scalar")
    with pytest.raises(ValueError, match="shift must be in"):
        _core.requantize_fixed_point(acc, ok[0], ok[1], np.array([0, -32, 0], np.int32), 0, 0, 255, "scalar")
    with pytest.raises(ValueError, match="not within int8 or uint8"):
        _core.requantize_fixed_point(acc, *ok, 0, -128, 255, "scalar")


# ---- (b) every conv / linear layer against the reference ----

def _value_qparams(module: qnnpy.QDQModule) -> dict[str, dict]:
    return {v["name"]: v for v in module.graph.values()}


def _weight_qparams(module: qnnpy.QDQModule, weight: str, channels: int,
                    per_tensor: dict[str, tuple[float, int]]) -> tuple[np.ndarray, np.ndarray]:
    """(scale, zero point) per output channel: per-channel ones are params, per-tensor ones come from `per_tensor`."""
    if weight in per_tensor:
        scale, zp = per_tensor[weight]
        return np.full(channels, scale, np.float32), np.full(channels, zp, np.int64)
    zp = module.params.get(f"{weight}_zero_point")
    return (module.params[f"{weight}_scale"].astype(np.float32),
            np.zeros(channels, np.int64) if zp is None else zp.astype(np.int64))


def _torch_per_tensor_weights(model: torch.nn.Module) -> dict[str, tuple[float, int]]:
    """{param name: (scale, zero point)} of the per-tensor quantized weights of a converted PyTorch model."""
    out = {}
    for path, m in model.named_modules():
        weight = getattr(m, "weight", None)
        if callable(weight) and weight().qscheme() == torch.per_tensor_affine:
            out[path.replace(".", "_") + "_weight"] = (weight().q_scale(), weight().q_zero_point())
    return out


def _conv2d_acc(x: np.ndarray, w: np.ndarray, stride, padding, dilation, groups: int) -> np.ndarray:
    """sum (x - zx)(w - zw) for NCHW x and OIHW w already offset by their zero points (int64)."""
    n, c, h, wd = x.shape
    o, cpg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding[0], padding[0]), (padding[1], padding[1])))
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    opg = o // groups
    out = np.zeros((n, o, oh, ow), np.int64)
    for ky in range(kh):
        for kx in range(kw):
            y0, x0 = ky * dilation[0], kx * dilation[1]
            tap = xp[:, :, y0:y0 + stride[0] * (oh - 1) + 1:stride[0], x0:x0 + stride[1] * (ow - 1) + 1:stride[1]]
            for g in range(groups):
                out[:, g * opg:(g + 1) * opg] += np.einsum(
                    "nchw,oc->nohw", tap[:, g * cpg:(g + 1) * cpg], w[g * opg:(g + 1) * opg, :, ky, kx])
    return out


def _conv_transpose2d_acc(x: np.ndarray, w: np.ndarray, stride, padding, dilation, output_padding,
                          groups: int) -> np.ndarray:
    """Transposed conv of offset NCHW x with offset (I, O/groups, kh, kw) w, by scattering (int64)."""
    n, c, h, wd = x.shape
    _, opg, kh, kw = w.shape
    ipg = c // groups
    oh = (h - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kh - 1) + output_padding[0] + 1
    ow = (wd - 1) * stride[1] - 2 * padding[1] + dilation[1] * (kw - 1) + output_padding[1] + 1
    full = np.zeros((n, opg * groups, oh + 2 * padding[0] + stride[0] * h, ow + 2 * padding[1] + stride[1] * wd),
                    np.int64)
    for ky in range(kh):
        for kx in range(kw):
            y0, x0 = ky * dilation[0], kx * dilation[1]
            for g in range(groups):
                contrib = np.einsum("nchw,co->nohw", x[:, g * ipg:(g + 1) * ipg], w[g * ipg:(g + 1) * ipg, :, ky, kx])
                full[:, g * opg:(g + 1) * opg, y0:y0 + stride[0] * h:stride[0], x0:x0 + stride[1] * wd:stride[1]] += contrib
    return full[:, :, padding[0]:padding[0] + oh, padding[1]:padding[1] + ow]


def check_layers_against_reference(module: qnnpy.QDQModule, x: np.ndarray,
                                   per_tensor: dict[str, tuple[float, int]] | None = None) -> int:
    """Runs `module` under fixed_point and checks every conv2d / conv_transpose2d / linear output
    against the reference requantization of its independently computed accumulator. Returns the count.
    `per_tensor` gives the qparams of per-tensor weights (they are not module params)."""
    result = module.run(x, profile="fixed_point", capture=True)
    values = _value_qparams(module)
    params = module.params
    checked = 0
    for node in module.nodes():
        if node["op"] not in ("conv2d", "conv_transpose2d", "linear"):
            continue
        xin, yv = values[node["inputs"][0]], values[node["output"]]
        xq = result.intermediates[node["inputs"][0]].astype(np.int64) - xin["zero_point"]
        wname = node["params"]["weight"]
        w8 = params[wname].astype(np.int64)
        out_channels = w8.shape[1] * node["ints"]["groups"][0] if node["op"] == "conv_transpose2d" else w8.shape[0]
        s_w, zw = _weight_qparams(module, wname, out_channels, per_tensor or {})
        ints = node["ints"]
        if node["op"] == "linear":
            acc = xq @ (w8 - zw[:, None]).T
        elif node["op"] == "conv2d":
            acc = _conv2d_acc(xq, w8 - zw[:, None, None, None], ints["stride"], ints["padding"], ints["dilation"],
                              ints["groups"][0])
        else:
            assert not zw.any()  # PyTorch: per-tensor symmetric transposed-conv weights
            acc = _conv_transpose2d_acc(xq, w8, ints["stride"], ints["padding"], ints["dilation"],
                                        ints["output_padding"], ints["groups"][0])
        if "bias" in node["params"]:
            bias = params[node["params"]["bias"]].astype(np.int64)
            acc = acc + (bias if node["op"] == "linear" else bias[:, None, None])
        assert np.abs(acc).max() < 2**31, node["source"]
        # m[c] = double(s_x) * double(s_w[c]) / double(s_y), as TFLite's PopulateConvolutionQuantizationParams.
        m = np.float64(np.float32(xin["scale"])) * s_w.astype(np.float64) / np.float64(np.float32(yv["scale"]))
        m = m if node["op"] == "linear" else m[:, None, None]
        lo, hi = (-128, 127) if yv["dtype"] == "int8" else (0, 255)
        if ints.get("relu", [0])[0]:
            lo = yv["zero_point"]
        expected = ref_requantize(acc, np.broadcast_to(m, acc.shape[1:]), yv["zero_point"], lo, hi)
        got = result.intermediates[node["output"]].astype(np.int64)
        np.testing.assert_array_equal(got, expected, err_msg=f"{node['op']} {node['source']}")
        checked += 1
    return checked


@pytest.fixture(scope="module")
def small_resnet18(resnet18) -> tuple[qnnpy.QDQModule, np.ndarray]:
    x = zoo.calibration_data(1, 1, (3, 64, 64), seed=11)[0]
    return qnnpy.from_torch(resnet18, (x,)), x.numpy()


@pytest.fixture(scope="module")
def small_mobilenet_v2() -> tuple[qnnpy.QDQModule, np.ndarray]:
    model = zoo.quantized_mobilenet_v2(engine="fbgemm", seed=0, calibration_batches=2)
    x = zoo.calibration_data(1, 1, (3, 64, 64), seed=12)[0]
    return qnnpy.from_torch(model, (x,)), x.numpy()


def _kernels(module: qnnpy.QDQModule, x: np.ndarray) -> list[str]:
    """The kernel each conv/linear ran under fixed_point."""
    executor = _core.Executor(module.graph, "fixed_point", "", 1)
    executor.run([x], False)
    # The kernel, whether or not the set fused the requantization into it (the amx set does).
    return [k.removesuffix("_requantized") for k in executor.node_kernels() if k]


def test_resnet18_every_layer_equals_the_reference(small_resnet18):
    """The u8 x s8 GEMM path: raw-x accumulators corrected through the bias must give the same int32 acc."""
    module, x = small_resnet18
    assert check_layers_against_reference(module, x) == 21  # 20 convs + fc
    # Convs read their rows in place, except the 3x3 stride-1 ones (all even sizes here) where the
    # kernel set runs integer Winograd instead (avx2); the 7x7 first conv over 3 channels reads one
    # run of window columns instead of 7 runs of 24 bytes for 21.
    winograd = 13 if _core.default_isa() == "avx2" else 0
    assert _kernels(module, x).count("winograd") == winograd
    assert _kernels(module, x).count("gemm_u8s8_columns") == 1
    assert _kernels(module, x).count("gemm_u8s8_runs") == 19 - winograd
    assert _kernels(module, x).count("gemm_u8s8") == 1  # fc


def test_mobilenet_v2_every_layer_equals_the_reference(small_mobilenet_v2):
    """The depthwise path, whose raw-x accumulators are corrected through the bias too."""
    module, x = small_mobilenet_v2
    assert check_layers_against_reference(module, x) == 53  # 52 convs + classifier
    # x86 kernel sets run the 13 stride-1 depthwise convs on quads of interleaved rows (their ReLU6
    # inputs have zero point 0, within AVX2's clamp bound); the 4 of stride 2 on the row kernel.
    quads = 13 if _core.default_isa() in ("avx2", "avxvnni", "avx512vnni", "amx") else 0
    assert _kernels(module, x).count("depthwise_quads") == quads
    assert _kernels(module, x).count("depthwise") == 17 - quads


@pytest.mark.parametrize("name", sorted(conv_cases()))
def test_conv_cases_equal_the_reference(name):
    body, shape, per_channel, fuse = conv_cases()[name]
    model, x = quantized(body, shape, per_channel, fuse)
    module = qnnpy.from_torch(model, (x,))
    assert check_layers_against_reference(module, x.numpy(), _torch_per_tensor_weights(model)) == 1


def test_conv_transpose_equals_the_reference():
    model, x = quantized(Upsampling(), (3, 7, 9))
    module = qnnpy.from_torch(model, (x,))
    assert check_layers_against_reference(module, x.numpy(), _torch_per_tensor_weights(model)) == 3


def test_int8_input_and_weight_zero_points_equal_the_reference():
    """Signed input (the int16 GEMM path), nonzero weight zero points, int8 output with ReLU."""
    rng = np.random.default_rng(21)
    g = _core.Graph()
    q = g.add_node("quantize", [g.add_input("x", [2, 6, 9, 8])], "q", "q", "int8", 0.04, -7)
    w = rng.integers(-128, 128, (10, 6, 3, 3), dtype=np.int8)
    config = np.array([2, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0], np.int64)
    c1 = g.add_conv2d(q, "c1", "c1", 3, config, w, rng.uniform(1e-3, 2e-2, 10), rng.integers(-4, 5, 10), 0,
                      rng.standard_normal(10).astype(np.float32), True, "int8", 0.09, -20)
    fc = g.add_linear(g.add_node("reshape", [c1], "flat", "flat", "int8", 0.09, -20, ints={"shape": [2, 720]}),
                      "fc", "fc", rng.integers(-128, 128, (5, 720), dtype=np.int8), np.array([0.003]), np.array([2]),
                      -1, rng.standard_normal(5).astype(np.float32), False, "int8", 0.3, 4)
    g.mark_output(g.add_node("dequantize", [fc], "dq", "dq", "float32"))
    module = qnnpy.QDQModule(g)
    x = (rng.standard_normal((2, 6, 9, 8)) * 2).astype(np.float32)
    assert check_layers_against_reference(module, x, {"fc_weight": (0.003, 2)}) == 2


def test_too_large_a_multiplier_is_refused_naming_the_layer():
    g = _core.Graph()
    q = g.add_node("quantize", [g.add_input("x", [1, 4])], "q", "q", "uint8", 1e4, 0)
    y = g.add_linear(q, "classifier.fc", "fc", np.ones((2, 4), np.int8), np.array([30.0, 1e-3]), np.array([0, 0]), 0,
                     None, False, "uint8", 1e-5, 0)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    with pytest.raises(ValueError, match=r"linear \(classifier\.fc\), output channel 0, profile fixed_point: .*too large"):
        _core.Executor(g, "fixed_point", "scalar", 1)
    _core.Executor(g, "int32_bias", "scalar", 1)  # the float profiles take it


# ---- (c) whole models: scalar and AVX2 identical ----

@pytest.mark.parametrize("which", ["small_resnet18", "small_mobilenet_v2"])
def test_scalar_and_avx2_agree_on_whole_models(which, request):
    if not _core.cpu_has_avx2():
        pytest.fail("this test machine is expected to have AVX2")
    module, x = request.getfixturevalue(which)
    scalar = module.run(x, profile="fixed_point", isa="scalar", capture=True)
    avx2 = module.run(x, profile="fixed_point", capture=True, threads=2)
    assert scalar.intermediates.keys() == avx2.intermediates.keys()
    for name, a in scalar.intermediates.items():
        np.testing.assert_array_equal(a, avx2.intermediates[name], err_msg=name)


# ---- (d) how far fixed_point is from PyTorch's engines on ResNet-18 (measured, printed) ----

def test_distance_from_pytorch_engines_on_resnet18(resnet18, resnet18_inputs, capsys):
    module = qnnpy.from_torch(resnet18, (resnet18_inputs[0],))
    inputs = resnet18_inputs[:3]
    torch.backends.quantized.engine = "fbgemm"
    fbgemm = qnnpy.compare(resnet18, module, inputs, profiles=["fixed_point"])
    torch.backends.quantized.engine = "qnnpack"
    qnnpack = qnnpy.compare(copy.deepcopy(resnet18), module, inputs, profiles=["fixed_point"])
    with capsys.disabled():
        for engine, report in (("fbgemm", fbgemm), ("qnnpack", qnnpack)):
            first, final = report.layers["fixed_point"][1], report.final("fixed_point")
            print(f"\nResNet-18, PyTorch {engine} engine vs runtime profile fixed_point: first conv "
                  f"{first.identical}/{first.total} identical ({first.fraction:.4%}, max {first.max_lsb} LSB), "
                  f"final output "
                  f"{final.identical}/{final.total} ({final.fraction:.2%}), max {final.max_lsb} LSB")
    # The first conv sees the same input in both: Q31 fixed point and qnnpack's float multiplier
    # round the same real product, so they differ by at most one step.
    first = qnnpack.layers["fixed_point"][1]
    assert first.op == "conv2d" and first.max_lsb <= 1


# ---- the other ops: fixed_point takes the int32_bias formulas ----

def _other_ops_graph(ops: list[str]) -> _core.Graph:
    g = _core.Graph()
    x = g.add_input("x", [1, 19, 8, 9])
    a = g.add_node("quantize", [x], "a", "a", "uint8", 0.021, 131)
    b = g.add_node("quantize", [x], "b", "b", "uint8", 0.3, 0)
    make = {
        "add": lambda: g.add_node("add", [a, b], "add", "add", "uint8", 0.05, 128, ints={"relu": [0]}),
        "mul": lambda: g.add_node("mul", [a, b], "mul", "mul", "uint8", 0.5, 3),
        "cat": lambda: g.add_node("cat", [a, b], "cat", "cat", "uint8", 0.09, 2, ints={"axis": [1]}),
        "relu": lambda: g.add_node("relu", [a], "relu", "relu", "uint8", 0.021, 131),
        "leaky_relu": lambda: g.add_node("leaky_relu", [a], "lr", "lr", "uint8", 0.02, 100, floats={"alpha": 0.1}),
        "max_pool2d": lambda: g.add_node("max_pool2d", [a], "mp", "mp", "uint8", 0.021, 131, ints={
            "kernel": [3, 3], "stride": [2, 2], "padding": [1, 1], "dilation": [1, 1], "ceil_mode": [0]}),
        "avg_pool2d": lambda: g.add_node("avg_pool2d", [a], "ap", "ap", "uint8", 0.021, 131, ints={
            "kernel": [3, 2], "stride": [2, 1], "padding": [1, 1], "ceil_mode": [0], "count_include_pad": [1],
            "divisor_override": [0]}),
        "adaptive_avg_pool2d": lambda: g.add_node("adaptive_avg_pool2d", [a], "gap", "gap", "uint8", 0.021, 131,
                                                  ints={"output_size": [2, 3]}),
    }
    for i, op in enumerate(ops):
        g.mark_output(g.add_node("dequantize", [make[op]()], f"dq{i}", f"dq{i}", "float32"))
    return g


def _assert_fixed_point_runs_int32_bias(ops: list[str]) -> None:
    g = _other_ops_graph(ops)
    x = (np.random.default_rng(4).standard_normal((1, 19, 8, 9)) * 3).astype(np.float32)
    _, int32_bias = _core.Executor(g, "int32_bias", "", 1).run([x], True)
    _, fixed_point = _core.Executor(g, "fixed_point", "", 1).run([x], True)
    for name, value in int32_bias.items():
        np.testing.assert_array_equal(fixed_point[name], value, err_msg=name)


def test_other_ops_take_the_int32_bias_formulas():
    _assert_fixed_point_runs_int32_bias(["add", "mul", "cat", "relu", "leaky_relu", "max_pool2d", "avg_pool2d"])
    # The comparison can fail: fbgemm's add differs from QNNPACK's fixed-point add.
    g = _other_ops_graph(["add"])
    x = (np.random.default_rng(4).standard_normal((1, 19, 8, 9)) * 3).astype(np.float32)
    fbgemm, fixed_point = (_core.Executor(g, p, "", 1).run([x])[0][0] for p in ("fbgemm", "fixed_point"))
    assert (fbgemm != fixed_point).any()


def test_adaptive_avg_pool_takes_the_int32_bias_formula():
    """fixed_point must take QNNPACK's average (int32_bias), not fbgemm's: they differ on this pool."""
    g = _other_ops_graph(["adaptive_avg_pool2d"])
    x = (np.random.default_rng(4).standard_normal((1, 19, 8, 9)) * 3).astype(np.float32)
    int32_bias, fbgemm = (_core.Executor(g, p, "", 1).run([x])[0][0] for p in ("int32_bias", "fbgemm"))
    if not (int32_bias != fbgemm).any():
        raise RuntimeError("the profiles agree on this input: the test cannot tell them apart")
    _assert_fixed_point_runs_int32_bias(["adaptive_avg_pool2d"])

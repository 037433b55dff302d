"""The one validator: every node of a graph file is checked (dtypes, ranks, qparam lengths,
attribute ranges, sizes) when the file is read, before the runtime or the emitter sees it.

Each case is a file a tampered or damaged save could hold; each must be refused with an
error naming the node (op and source), never crash or allocate without bound.
"""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from graph_file_writer import FileParam, FileValue, conv_value, graph_file, int8_weight, quantize_value
from qnnpy import _core

X = [1, 3, 4, 4]


def conv_file(weight: FileParam | None = None, extra_params: list[FileParam] | None = None,
              out_shape: list[int] | None = None, params: dict[str, int] | None = None, **ints: list[int]) -> bytes:
    node = conv_value([1], out_shape or [1, 2, 4, 4], **ints)
    node.params.update(params or {})
    return graph_file([weight or int8_weight([2, 3, 1, 1])] + (extra_params or []), quantize_value(X) + [node], [2])


def refused(data: bytes, *fragments: str) -> str:
    with pytest.raises(ValueError) as info:
        _core.Graph.deserialize(data)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_a_well_formed_file_loads_and_runs():
    g = _core.Graph.deserialize(conv_file())
    outputs, _ = _core.Executor(g).run([np.ones(X, np.float32)], False)
    assert outputs[0].shape == (1, 2, 4, 4)


# --- weight qparams and bias lengths against the channel count ---------------------

def test_per_channel_weight_with_too_few_scales():
    weight = int8_weight([2, 3, 1, 1], scale=[0.1], zero_point=[0], axis=0)
    refused(conv_file(weight), "param 'w'", "1 per-channel scales for 2 channels")


def test_weight_scale_and_zero_point_counts_differ():
    weight = int8_weight([2, 3, 1, 1], scale=[0.1, 0.1], zero_point=[0], axis=0)
    refused(conv_file(weight), "scale and zero point counts differ")


def bias(channels: int, scale: list[float], axis: int = -1) -> list[FileParam]:
    return [FileParam("b", "int32", [channels], np.zeros(channels, np.int32).tobytes(), scale, [0] * len(scale), axis),
            FileParam("bf", "float32", [channels], np.zeros(channels, np.float32).tobytes())]


def test_bias_with_fewer_values_than_channels():
    refused(conv_file(extra_params=bias(1, [0.005]), params={"bias": 1, "bias_float": 2}),
            "conv2d (body.conv)", "bias must be int32 with one value per output channel")


def test_bias_quantized_unlike_the_weight():
    weight = int8_weight([2, 3, 1, 1], scale=[0.1, 0.1], zero_point=[0, 0], axis=0)
    refused(conv_file(weight, extra_params=bias(2, [0.005]), params={"bias": 1, "bias_float": 2}),
            "bias must be quantized like the weight")


def test_param_with_a_nan_value_is_refused():
    params = bias(2, [0.005])
    params[1].data = np.array([0.0, np.nan], np.float32).tobytes()
    refused(conv_file(extra_params=params, params={"bias": 1, "bias_float": 2}), "param 'bf'", "not finite")


@pytest.mark.parametrize("scale", [float("inf"), float("nan"), 0.0, -1.0])
def test_weight_scale_must_be_finite_and_positive(scale):
    refused(conv_file(int8_weight([2, 3, 1, 1], scale=[scale])), "param 'w'", "not a finite positive number")


def test_weight_zero_point_must_fit_int8():
    refused(conv_file(int8_weight([2, 3, 1, 1], zero_point=[300])), "zero point 300 outside the range of int8")


# --- attribute ranges and sizes ---------------------------------------------------

# The output shapes are the ones the shape rule computed from the attributes before they were checked.
@pytest.mark.parametrize("key,value,out_shape,fragment", [
    ("padding", [-1, -1], [1, 2, 2, 2], "attribute 'padding' must be >= 0"),
    ("padding", [1 << 40, 0], [1, 2, 4 + (1 << 41), 4], "is outside [-16777216, 16777216]"),
    ("stride", [0, 1], [1, 2, 4, 4], "attribute 'stride' must be >= 1"),
    ("dilation", [1 << 30, 1], [1, 2, 4, 4], "is outside"),
])
def test_conv_attributes_out_of_range(key, value, out_shape, fragment):
    refused(conv_file(out_shape=out_shape, **{key: value}), "conv2d (body.conv)", fragment)


def test_conv_kernel_larger_than_the_input():
    refused(conv_file(int8_weight([2, 3, 9, 9])), "conv2d (body.conv)", "kernel larger than padded input")


@pytest.mark.parametrize("op", ["conv", "max_pool2d"])
def test_dilated_window_beyond_the_input_is_refused_whatever_the_stride(op):
    """A 3-tap window of dilation 4 spans 9 columns of a 4-column input: the output size rounds toward minus
    infinity (as PyTorch's), so a stride larger than the shortfall does not make it 1 (C++'s division did; the
    depthwise quads then read past their rows: fuzz/regressions/packed_state/dilated-window-beyond-input)."""
    if op == "conv":
        data = conv_file(int8_weight([2, 3, 3, 3]), out_shape=[1, 2, 4, 1], stride=[1, 100], dilation=[1, 4])
        refused(data, "conv2d (body.conv)", "kernel larger than padded input")
    else:
        ints = max_pool(kernel=[1, 3], stride=[1, 100], dilation=[1, 4])
        refused(pool_file("max_pool2d", [1, 3, 4, 1], ints), "kernel larger than padded input")


def test_huge_param_shape_is_refused_before_any_allocation():
    weight = FileParam("w", "int8", [1 << 25, 3, 1, 1], b"", [0.05], [0])
    refused(conv_file(weight), "param 'w'", "has an axis outside")


def test_param_shape_whose_product_overflows_int64():
    weight = FileParam("w", "int8", [1 << 16] * 4 + [1 << 2], b"", [0.05], [0])
    refused(conv_file(weight), "param 'w'", "more than 268435456 elements")


@pytest.mark.parametrize("shape", [[1, -3, 4, 4], [0, 3, 4, 4], [1 << 30, 3, 4, 4], [1 << 12] * 4])
def test_graph_input_shapes_are_bounded(shape):
    values = [FileValue("x", "float32", shape)]
    refused(graph_file([], values, []), "input 'x'")


def pool_file(op: str, out_shape: list[int], ints: dict[str, list[int]], floats: dict[str, float] | None = None,
              in_shape: list[int] | None = None) -> bytes:
    node = FileValue("y", "uint8", out_shape, [0.1], [128], op=op, inputs=[1], ints=ints, floats=floats or {},
                     source="body.pool")
    return graph_file([], quantize_value(in_shape or X) + [node], [2])


def max_pool(**ints: list[int]) -> dict[str, list[int]]:
    return {"kernel": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1], "ceil_mode": [0]} | ints


def avg_pool(**ints: list[int]) -> dict[str, list[int]]:
    return {"kernel": [2, 2], "stride": [2, 2], "padding": [0, 0], "ceil_mode": [0], "count_include_pad": [1],
            "divisor_override": [0]} | ints


@pytest.mark.parametrize("op,ints,out_shape,fragment", [
    ("max_pool2d", max_pool(kernel=[9, 9]), [1, 3, -1, -1], "kernel larger than padded input"),
    ("max_pool2d", max_pool(padding=[-1, -1]), [1, 3, 1, 1], "attribute 'padding' must be >= 0"),
    ("avg_pool2d", avg_pool(kernel=[9, 9]), [1, 3, -1, -1], "kernel larger than padded input"),
    ("avg_pool2d", avg_pool(padding=[-1, 0]), [1, 3, 1, 2], "attribute 'padding' must be >= 0"),
])
def test_pooling_output_and_padding_checks(op, ints, out_shape, fragment):
    refused(pool_file(op, out_shape, ints), f"{op} (body.pool)", fragment)


def test_adaptive_pool_output_size_is_bounded():
    refused(pool_file("adaptive_avg_pool2d", [1, 3, 1 << 14, 1 << 14], {"output_size": [1 << 14, 1 << 14]}),
            "adaptive_avg_pool2d (body.pool)", "more than 268435456 elements")


def test_adaptive_pool_windows_that_overflow_the_int32_sums():
    big = [1, 1, 1 << 12, 1 << 12]  # a 4096 x 4096 window of 255s does not fit int32
    refused(pool_file("adaptive_avg_pool2d", [1, 1, 1, 1], {"output_size": [1, 1]}, in_shape=big),
            "overflow the int32 sums")


@pytest.mark.parametrize("op,ints,out_shape,fragment", [
    ("adaptive_avg_pool2d", {"output_size": [1, 1], "float_mean": [2]}, [1, 3, 1, 1], "float_mean must be 0 or 1, got 2"),
    ("mean", {"axes": [2, 3], "keepdim": [1], "float_mean": [-1]}, [1, 3, 1, 1], "float_mean must be 0 or 1, got -1"),
])
def test_the_float_mean_flag_is_checked(op, ints, out_shape, fragment):
    refused(pool_file(op, out_shape, ints), f"{op} (body.pool)", fragment)


@pytest.mark.parametrize("scale,fragment", [
    (float("nan"), "is not finite"), (float("inf"), "is not finite"),
    (-2.0, "must be 0 (none) or at least"), (1e-30, "must be 0 (none) or at least"),
])
def test_nearest_upsampling_scale_must_be_none_or_positive_and_finite(scale, fragment):
    # 7 rows: not an exact doubling of 4, so the scale picks the source rows.
    data = pool_file("upsample_nearest2d", [1, 3, 7, 8], {"output_size": [7, 8]}, {"scale_h": scale, "scale_w": 2.0})
    refused(data, "upsample_nearest2d (body.pool)", fragment)


@pytest.mark.parametrize("shape,fragment", [
    ([-1, -48], "has an axis outside"),
    ([1 << 32, 1 << 32, 1 << 32, 1 << 32], "outside [-16777216, 16777216]"),
    ([48, 0], "has an axis outside"),
])
def test_reshape_shapes_must_be_positive_and_bounded(shape, fragment):
    refused(pool_file("reshape", shape, {"shape": shape}), "reshape (body.pool)", fragment)


def test_int32_activations_are_refused():
    values = quantize_value(X, dtype="int32")
    refused(graph_file([], values, [1]), "quantize (quant)", "output must be uint8 or int8")


@pytest.mark.parametrize("scale", [float("inf"), float("nan")])
def test_activation_scale_must_be_finite(scale):
    values = quantize_value(X, scale=scale)
    refused(graph_file([], values, [1]), "quantize (quant)", "output scale must be finite and positive")


def test_node_referring_to_a_missing_param_names_the_node():
    data = conv_file(params={"weight": 7})
    refused(data, "conv2d (body.conv): param 'weight': no param with id 7")


def test_a_padding_that_makes_the_padded_image_too_large_is_refused():
    """A 4x4 input with 8192 rows of padding on each side and a stride that keeps the output small: the runners
    pad the image before reading it, 3 x 16388 x 16388 bytes (fuzz_packed_state allocated 35 GB on a depthwise
    conv with such a padding before the check; fuzz/regressions/packed_state/depthwise-huge-padding-allocation)."""
    refused(conv_file(padding=[8192, 8192], stride=[16384, 16384], out_shape=[1, 2, 2, 2]),
            "conv2d (body.conv): padded input image")


def test_a_name_with_a_control_character_is_refused_and_shown_escaped():
    """A NUL in a param role used to cut the validator's message short (what() is a C string)."""
    message = refused(conv_file(params={"weight\x00evil": 0}), "param role 'weight\\x00evil' holds a control character")
    assert "\x00" not in message
    node = conv_value([1], [1, 2, 4, 4])
    node.source = "body\x1b[2J"
    refused(graph_file([int8_weight([2, 3, 1, 1])], quantize_value(X) + [node], [2]),
            "source 'body\\x1b[2J' holds a control character")


# --- the int32 accumulator limit of the GEMM kernels -------------------------------

def linear_file(k: int) -> bytes:
    weight = FileParam("w", "int8", [1, k], np.full(k, -128, np.int8).tobytes(), [1.0], [127])
    node = FileValue("y", "uint8", [1, 1], [1.0], [0], op="linear", inputs=[1], params={"weight": 0},
                     ints={"relu": [0]}, source="fc")
    return graph_file([weight], quantize_value([1, k], scale=1.0, zero_point=0) + [node], [2])


def test_reductions_past_the_int32_limit_are_refused():
    limit = 2**31 // (255 * 255)  # 33025 products of magnitude 255 * 255 fit int32
    refused(linear_file(limit + 1), "linear (fc)", "exceeds the int32 accumulator limit of 33025")


def test_scalar_and_avx2_agree_at_the_reduction_limit():
    if not _core.cpu_has_avx2():
        pytest.skip("needs an AVX2 CPU for the AVX2 kernels")
    k = 2**31 // (255 * 255)
    g = _core.Graph.deserialize(linear_file(k))
    x = np.full((1, k), 255.0, np.float32)  # quantized to 255 with zero point 0; weights -128 - 127 = -255
    results = [_core.Executor(g, "int32_bias", isa, 1).run([x], True)[1] for isa in ("scalar", "avx2")]
    assert results[0].keys() == results[1].keys()
    for name in results[0]:
        np.testing.assert_array_equal(results[0][name], results[1][name])
    assert results[0]["y"].item() == 0  # -255 * 255 * k, requantized with scale 1, clamps to 0


# --- the format version --------------------------------------------------------

def test_other_format_versions_are_refused_clearly():
    refused(conv_file()[:6] + b"07" + conv_file()[8:], "graph file format version 7; this qnnpy reads version 1",
            "upgrade qnnpy")


def test_saved_files_carry_version_1():
    g = _core.Graph.deserialize(conv_file())
    assert g.serialize()[:8] == b"QNNPYG01"
    assert struct.unpack("<Q", g.serialize()[8:16])[0] == 1  # one param follows the header


def test_a_node_with_fewer_inputs_than_its_rule_reads_is_refused():
    """The campaign's graph file whose float_conv2d has no input (fuzz/regressions/graph_file): refused by name,
    where the rule's read of input 0 escaped as an IndexError."""
    data = (Path(__file__).resolve().parent.parent / "fuzz/regressions/graph_file/float-conv-without-inputs").read_bytes()
    with pytest.raises(ValueError, match=r"float_conv2d \(conv3\.conv2d_2\): expects at least 1 input\(s\), got 0"):
        _core.Graph.deserialize(data)

"""Pools and mean.

max_pool2d: the integer max pool (padding holds the dtype's minimum, so it never
wins: the max over the in-bounds taps, as PyTorch's quantized max pool). Profiles with
QNNPACK's kernels, uint8 input, no ceil_mode, dilation and padding: QNNPACK's max pool, whose
taps outside the image read the nearest edge pixel (pool_ops.cpp run_max_pool2d): the pool
runs unpadded over the input padded with edge copies (two takes of clamped indices).
adaptive_avg_pool2d (windows that tile the input): acc = sum over the window, then
the runtime's rule (kernels.h AvgPoolRule, pool_ops.cpp): int32_bias or fixed_point, uint8 input
-> QNNPACK's y = cvtps(fl((sum - zp n) m)) + zp, m = fl(s_in / fl(s_out n));
channels_last input -> fbgemm's NHWC rule, m = fl(1 / fl(1 / fl(fl(s_in/s_out) / n)));
contiguous input -> y = cvtps(fl(sum fl(fl(1/kh)/kw))) (raw values). Multipliers come
from the runtime (lowering_adaptive_multiplier). Without hints: QNNPACK's rule
(layout-free).
mean over H, W (pool_ops.cpp run_mean): contiguous input -> nearbyint(fl(float(sum) /
float(n))); otherwise PyTorch's float mean: d = fl(s float(q - zp)), added one after another
in (h, w) order, y = rne(fl(fl(sum / n) fl(1/s))) + zp. Without hints: the float rule. Profiles with QNNPACK's pools (_core.follows_qnnpack_kernels: qnnpack),
uint8 input: QNNPACK's global average pool, y = cvtps(fl((sum - zp n) m)) + zp,
m = fl(s_in / fl(s_out n)).
A mean or adaptive pool to 1x1 whose node carries float_mean (a PT2E island): the float
mean rule in every profile, the d added in ATen's order for a contiguous row (aten_sum.py),
with PT2E's fl(1.0 / s) taken in double. A PT2E adaptive pool island to another size stays in float.
avg_pool2d (hints only: PyTorch's kernel depends on the memory layout), the runtime's
rule (kernels.h AvgPool2dRule, scalar/avg_pool.cpp): per output pixel, taps = the
in-bounds window, divisor = divisor_override, else the window clipped to the padded
input (count_include_pad) or the taps; acc = sum - zp taps;
  channels_last input: y = cvtps(fl(acc m)) + zp, m = the vector multiplier in the first
    8 floor(C/8) channels and the tail multiplier in the others;
  contiguous input:    y = nearbyint(fl(fl(acc m) + zp)) (the product is computed exactly in
    float64 and rounded once, so it cannot be fused with the add).
A PT2E avg_pool2d island (float_mean) stays in float: PyTorch pools the dequantized tensor in float.
Multipliers come from the runtime (lowering_avg_pool2d_multipliers). Profiles with
QNNPACK's pools, uint8 input, no ceil_mode: QNNPACK's average pool, y = cvtps(fl(acc m)) + zp
with one m = fl(s_in / fl(s_out kh kw)) for every window (count_include_pad and
divisor_override ignored). The window sums are a depthwise int32 conv2d with a ones
kernel over the zero-padded input.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from tvm.relax import op as R

from qnnpy import _core
from qnnpy.tvm_bridge.lowering.arith import apart, const, dtype_range, round_to_output
from qnnpy.tvm_bridge.lowering.aten_sum import contiguous_sum
from qnnpy.tvm_bridge.lowering.island import Island, NotLowerable, op_name
from qnnpy.tvm_bridge.lowering.rules.context import Context
from qnnpy.tvm_bridge.lowering.rules.leaves import name_of, single_input


def same_qparams(island: Island, x: Any) -> tuple[np.float32, int]:
    """(s_in, z_in) of a pool whose input ``x`` and output share a per-tensor dtype, else NotLowerable."""
    if not (x.q.per_tensor and island.out.per_tensor):
        raise NotLowerable("per-channel qparams")
    if str(x.data.ty.dtype) != island.out_dtype:
        raise NotLowerable(f"input {x.data.ty.dtype} and output {island.out_dtype} differ")
    return x.q.scalar("in")


def lower_max_pool2d(ctx: Context, island: Island) -> Any:
    x = single_input(island)
    if same_qparams(island, x) != island.out.scalar("out"):
        raise NotLowerable("input and output qparams differ")
    p = island.call(island.root)
    a = p.attrs
    if str(a.layout) != "NCHW" or op_name(island.call(p.args[0])) != "dequantize":
        raise NotLowerable("max_pool2d not on a dequantized NCHW tensor")
    data, padding = x.data, [int(v) for v in a.padding]
    if (_core.follows_qnnpack_kernels(ctx.profile) and island.out_dtype == "uint8" and not a.ceil_mode
            and any(int(d) > 1 for d in a.dilation) and any(padding)):
        shape = tuple(int(d) for d in x.data.ty.shape)
        for axis, (before, after) in ((2, (padding[0], padding[2])), (3, (padding[1], padding[3]))):
            index = np.clip(np.arange(-before, shape[axis] + after), 0, shape[axis] - 1).astype(np.int64)
            data = R.take(data, const(index, "int64"), axis=axis)
        padding = [0, 0, 0, 0]
    elif any(padding) and not a.ceil_mode:
        # The padding as values that never win (the dtype's minimum), written before the pool: the pool's loops
        # then read in bounds without a condition per tap (the pad fuses into the producer's function).
        top, left, bottom, right = padding
        data = R.nn.pad(data, [0, 0, 0, 0, top, bottom, left, right], pad_value=float(dtype_range(island.out_dtype)[0]))
        padding = [0, 0, 0, 0]
    return R.nn.max_pool2d(data, pool_size=a.pool_size, strides=a.strides, padding=padding, dilation=a.dilation,
                           ceil_mode=bool(a.ceil_mode))


def _window_sums(x: Any, shape: tuple[int, ...], oh: int, ow: int) -> Any:
    n, c, h, w = shape
    blocks = R.reshape(R.astype(x, "int32"), [n, c, oh, h // oh, ow, w // ow])
    return R.sum(blocks, axis=[3, 5])


def lower_adaptive_avg_pool2d(ctx: Context, island: Island) -> Any:
    x = single_input(island)
    s_in, zp_in = same_qparams(island, x)
    s_out, zp = island.out.scalar("the output")
    shape = tuple(int(d) for d in x.data.ty.shape)
    n, c, h, w = shape
    oh, ow = island.out_shape[2], island.out_shape[3]
    if h % oh or w % ow:
        raise NotLowerable("adaptive windows that do not tile the input")
    if zp != zp_in:
        raise NotLowerable("input and output zero points differ")
    if ctx.float_mean(island.name) and (oh, ow) != (1, 1):
        raise NotLowerable(f"a PT2E adaptive_avg_pool2d island to {oh}x{ow}: PyTorch pools the dequantized tensor "
                           "in float; the island stays in float")
    if ctx.float_mean(island.name):
        return _float_mean(x.data, shape, float(s_in), zp, True, _pt2e_inverse_scale(s_in), island.out_dtype,
                           aten_order=True)
    kh, kw = h // oh, w // ow
    signed = island.out_dtype == "int8"
    rule = "qnnpack"
    if ctx.node(island.name, "adaptive_avg_pool2d") is not None and not (_core.follows_int32_bias_rules(ctx.profile) and not signed):
        rule = "fbgemm_nhwc" if ctx.hints.channels_last(name_of(x.data)) else "fbgemm_nchw"
    mult = np.float32(_core.lowering_adaptive_multiplier(rule, float(s_in), float(s_out), kh, kw))
    sums = _window_sums(x.data, shape, oh, ow)
    acc = sums if rule == "fbgemm_nchw" else R.subtract(sums, const(zp * kh * kw, "int32"))
    lo, hi = dtype_range(island.out_dtype)
    return round_to_output(R.multiply(R.astype(acc, "float32"), const(mult, "float32")),
                           0 if rule == "fbgemm_nchw" else zp, lo, hi, island.out_dtype)


def lower_mean(ctx: Context, island: Island) -> Any:
    x = single_input(island)
    if same_qparams(island, x) != island.out.scalar("out"):
        raise NotLowerable("input and output qparams differ")
    m = island.call(island.root)
    shape = tuple(int(d) for d in x.data.ty.shape)
    axes = sorted(int(a) % len(shape) for a in m.attrs.axis)
    if len(shape) != 4 or axes != [2, 3]:
        raise NotLowerable(f"mean over axes {axes} of a rank-{len(shape)} tensor")
    keep = bool(m.attrs.keepdims)
    count = shape[2] * shape[3]
    s_out, zp = island.out.scalar("out")
    lo, hi = dtype_range(island.out_dtype)
    if ctx.float_mean(island.name):
        return _float_mean(x.data, shape, float(s_out), zp, keep, _pt2e_inverse_scale(s_out), island.out_dtype,
                           aten_order=True)
    total = R.sum(R.astype(x.data, "int32"), axis=[2, 3], keepdims=keep)
    if _core.follows_qnnpack_kernels(ctx.profile) and island.out_dtype == "uint8":
        mult = np.float32(_core.lowering_adaptive_multiplier("qnnpack", float(s_out), float(s_out), shape[2], shape[3]))
        acc = R.subtract(total, const(zp * count, "int32"))
        scaled = R.multiply(R.astype(acc, "float32"), const(mult, "float32"))
        return round_to_output(scaled, zp, lo, hi, island.out_dtype)
    name = name_of(x.data)
    contiguous = ctx.hints is not None and not ctx.hints.channels_last(name) and ctx.hints.dense(name)
    if contiguous:
        q = R.round(R.divide(R.astype(total, "float32"), const(np.float32(count), "float32")))
        return R.astype(R.clip(q, lo, hi), island.out_dtype)
    return _float_mean(x.data, shape, float(s_out), zp, keep, np.float32(1) / np.float32(s_out), island.out_dtype)


def _float_mean(x: Any, shape: tuple[int, ...], scale: float, zp: int, keep: bool, inv_scale: np.float32,
                out_dtype: str, aten_order: bool = False) -> Any:
    """PyTorch's float mean over H, W of a dequantized tensor, quantized with the same qparams:
    d = fl(s float(q - zp)), their float sum, y = rne(fl(fl(sum / n) inv_scale)) + zp. The sum adds the d
    one after another in (h, w) order, or in ATen's order for a contiguous row (``aten_order``: aten_sum.py)."""
    count = shape[2] * shape[3]
    s = np.float32(scale)
    d = R.reshape(apart(R.multiply(const(s, "float32"), R.astype(R.subtract(R.astype(x, "int32"), const(zp, "int32")),
                                                                "float32"))), [shape[0], shape[1], count])
    if aten_order:
        float_sum = contiguous_sum(d, count)
    else:
        float_sum = None
        for p in range(count):  # one add after another, in PyTorch's order
            term = R.strided_slice(d, axes=[2], begin=[p], end=[p + 1])
            float_sum = term if float_sum is None else R.add(float_sum, term)
    mean = R.divide(float_sum, const(np.float32(count), "float32"))
    out_shape = [shape[0], shape[1], 1, 1] if keep else [shape[0], shape[1]]
    scaled = R.reshape(R.multiply(mean, const(inv_scale, "float32")), out_shape)
    lo, hi = dtype_range(out_dtype)
    return round_to_output(scaled, zp, lo, hi, out_dtype)


def _pt2e_inverse_scale(scale: float) -> np.float32:
    """PT2E's quantize multiplies by 1.0 / scale in double, rounded to float32 (pool_ops.cpp)."""
    return np.float32(1.0 / float(np.float32(scale)))


def _window(o: int, size: int, kernel: int, stride: int, pad: int) -> tuple[int, int, int]:
    """[start, end) of the window clipped to the input, and its size clipped to the padded input
    (kernels.h avg_pool_window)."""
    start = o * stride - pad
    end = min(start + kernel, size + pad)
    return max(start, 0), min(end, size), end - start


def _window_sums_conv(x: Any, shape: tuple[int, ...], out_hw: tuple[int, int], kernel: list[int], stride: list[int],
                      pad: list[int]) -> Any:
    n, c, h, w = shape
    oh, ow = out_hw
    bottom = max(0, (oh - 1) * stride[0] + kernel[0] - h - pad[0])
    right = max(0, (ow - 1) * stride[1] + kernel[1] - w - pad[1])
    ones = const(np.ones((c, 1, kernel[0], kernel[1]), np.int32), "int32")
    sums = R.nn.conv2d(R.astype(x, "int32"), ones, strides=stride, padding=[pad[0], pad[1], bottom, right], groups=c,
                       out_dtype="int32")
    return R.strided_slice(sums, axes=[2, 3], begin=[0, 0], end=[oh, ow])


def _qnnpack_avg_pool2d(x: Any, shape: tuple[int, ...], out_hw: tuple[int, int], kernel: list[int], stride: list[int],
                        pad: list[int], s_in: float, s_out: float, zp: int) -> Any:
    """QNNPACK's average pool of a uint8 tensor (pool_ops.cpp run_avg_pool2d, AvgPool2dRule::Qnnpack)."""
    oh, ow = out_hw

    def in_bounds(o: int, axis: int) -> int:
        start, end, _ = _window(o, shape[2 + axis], kernel[axis], stride[axis], pad[axis])
        return end - start

    taps = np.outer([in_bounds(oy, 0) for oy in range(oh)], [in_bounds(ox, 1) for ox in range(ow)]).astype(np.int32)
    mult = np.float32(_core.lowering_adaptive_multiplier("qnnpack", s_in, s_out, kernel[0], kernel[1]))
    sums = _window_sums_conv(x, shape, out_hw, kernel, stride, pad)
    acc = R.subtract(sums, const((zp * taps).reshape(1, 1, oh, ow), "int32"))
    return round_to_output(R.multiply(R.astype(acc, "float32"), const(mult, "float32")), zp, 0, 255, "uint8")


def lower_avg_pool2d(ctx: Context, island: Island) -> Any:
    index = ctx.node(island.name, "avg_pool2d")
    if index is None:
        raise NotLowerable("avg_pool2d depends on PyTorch's memory layout: it needs the module's hints")
    if ctx.float_mean(island.name):
        raise NotLowerable("a PT2E avg_pool2d island: PyTorch pools the dequantized tensor in float; the island "
                           "stays in float")
    x = single_input(island)
    s_in, zp_in = same_qparams(island, x)
    s_out, zp = island.out.scalar("the output")
    if zp != zp_in:
        raise NotLowerable("input and output zero points differ")
    ints = ctx.hints.node(island.name)[1]["ints"]
    kernel, stride, pad = list(ints["kernel"]), list(ints["stride"]), list(ints["padding"])
    include_pad, override = bool(ints["count_include_pad"][0]), int(ints["divisor_override"][0])
    shape = tuple(int(d) for d in x.data.ty.shape)
    n, c, h, w = shape
    oh, ow = island.out_shape[2], island.out_shape[3]
    lo, hi = dtype_range(island.out_dtype)
    if _core.follows_qnnpack_kernels(ctx.profile) and island.out_dtype == "uint8" and not ints["ceil_mode"][0]:
        return _qnnpack_avg_pool2d(x.data, shape, (oh, ow), kernel, stride, pad, float(s_in), float(s_out), zp)
    name = name_of(x.data)
    nhwc = ctx.hints.channels_last(name) and ctx.hints.dense(name)
    taps = np.zeros((oh, ow), np.int32)
    mult = np.zeros((c, oh, ow), np.float32)
    vector_channels = np.arange(c) < c // 8 * 8
    for oy in range(oh):
        y0, y1, ysize = _window(oy, h, kernel[0], stride[0], pad[0])
        for ox in range(ow):
            x0, x1, xsize = _window(ox, w, kernel[1], stride[1], pad[1])
            taps[oy, ox] = (y1 - y0) * (x1 - x0)
            divisor = override or (ysize * xsize if include_pad else int(taps[oy, ox]))
            vector, tail = _core.lowering_avg_pool2d_multipliers(nhwc, divisor)
            mult[:, oy, ox] = np.where(vector_channels, np.float32(vector), np.float32(tail))
    sums = _window_sums_conv(x.data, shape, (oh, ow), kernel, stride, pad)
    acc = R.subtract(sums, const((zp * taps).reshape(1, 1, oh, ow), "int32"))
    if nhwc:
        m = const(mult.reshape(1, c, oh, ow), "float32")
        return round_to_output(R.multiply(R.astype(acc, "float32"), m), zp, lo, hi, island.out_dtype)
    product = R.astype(R.multiply(R.astype(acc, "float64"), const(mult.reshape(1, c, oh, ow), "float64")), "float32")
    y = R.round(R.add(product, const(np.float32(zp), "float32")))
    return R.astype(R.clip(y, lo, hi), island.out_dtype)

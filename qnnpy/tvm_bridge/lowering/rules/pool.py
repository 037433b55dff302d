"""Pools and mean.

max_pool2d: the integer max pool (padding holds the dtype's minimum, so it never
wins: the max over the in-bounds taps, as PyTorch's quantized max pool).
adaptive_avg_pool2d (windows that tile the input): acc = sum over the window, then
the runtime's rule (kernels.h AvgPoolRule, pool_ops.cpp): int32_bias, uint8 input
-> QNNPACK's y = cvtps(fl((sum - zp n) m)) + zp, m = fl(s_in / fl(s_out n));
channels_last input -> fbgemm's NHWC rule, m = fl(1 / fl(1 / fl(fl(s_in/s_out) / n)));
contiguous input -> y = cvtps(fl(sum fl(fl(1/kh)/kw))) (raw values). Multipliers come
from the runtime (lowering_adaptive_multiplier). Without hints: QNNPACK's rule
(layout-free).
mean over H, W (pool_ops.cpp run_mean): contiguous input -> nearbyint(fl(float(sum) /
float(n))); otherwise zp + the exact round-half-even of (sum - zp n) / n. Without
hints: the exact rule.
avg_pool2d: stays in float unless hints are given (see lower_avg_pool2d).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from tvm.relax import op as R

from qnnpy import _core
from qnnpy.tvm_bridge.lowering.arith import const, dtype_range, round_to_output
from qnnpy.tvm_bridge.lowering.island import Island, NotLowerable, op_name
from qnnpy.tvm_bridge.lowering.rules.context import Context
from qnnpy.tvm_bridge.lowering.rules.leaves import name_of, single_input


def _same_qparams(island: Island, x: Any) -> tuple[np.float32, int]:
    if not (x.q.per_tensor and island.out.per_tensor):
        raise NotLowerable("per-channel qparams")
    if str(x.data.ty.dtype) != island.out_dtype:
        raise NotLowerable(f"input {x.data.ty.dtype} and output {island.out_dtype} differ")
    return x.q.scalar("in")


def lower_max_pool2d(ctx: Context, island: Island) -> Any:
    x = single_input(island)
    if _same_qparams(island, x) != island.out.scalar("out"):
        raise NotLowerable("input and output qparams differ")
    p = island.call(island.root)
    a = p.attrs
    if str(a.layout) != "NCHW" or op_name(island.call(p.args[0])) != "dequantize":
        raise NotLowerable("max_pool2d not on a dequantized NCHW tensor")
    return R.nn.max_pool2d(x.data, pool_size=a.pool_size, strides=a.strides, padding=a.padding, dilation=a.dilation,
                           ceil_mode=bool(a.ceil_mode))


def _window_sums(x: Any, shape: tuple[int, ...], oh: int, ow: int) -> Any:
    n, c, h, w = shape
    blocks = R.reshape(R.astype(x, "int32"), [n, c, oh, h // oh, ow, w // ow])
    return R.sum(blocks, axis=[3, 5])


def lower_adaptive_avg_pool2d(ctx: Context, island: Island) -> Any:
    x = single_input(island)
    s_in, zp_in = _same_qparams(island, x)
    s_out, zp = island.out.scalar("the output")
    shape = tuple(int(d) for d in x.data.ty.shape)
    n, c, h, w = shape
    oh, ow = island.out_shape[2], island.out_shape[3]
    if h % oh or w % ow:
        raise NotLowerable("adaptive windows that do not tile the input")
    if zp != zp_in:
        raise NotLowerable("input and output zero points differ")
    kh, kw = h // oh, w // ow
    signed = island.out_dtype == "int8"
    rule = "qnnpack"
    if ctx.node(island.name, "adaptive_avg_pool2d") is not None and not (ctx.profile == "int32_bias" and not signed):
        rule = "fbgemm_nhwc" if ctx.hints.channels_last(name_of(x.data)) else "fbgemm_nchw"
    mult = np.float32(_core.lowering_adaptive_multiplier(rule, float(s_in), float(s_out), kh, kw))
    sums = _window_sums(x.data, shape, oh, ow)
    acc = sums if rule == "fbgemm_nchw" else R.subtract(sums, const(zp * kh * kw, "int32"))
    lo, hi = dtype_range(island.out_dtype)
    return round_to_output(R.multiply(R.astype(acc, "float32"), const(mult, "float32")),
                           0 if rule == "fbgemm_nchw" else zp, lo, hi, island.out_dtype)


def lower_mean(ctx: Context, island: Island) -> Any:
    x = single_input(island)
    if _same_qparams(island, x) != island.out.scalar("out"):
        raise NotLowerable("input and output qparams differ")
    m = island.call(island.root)
    shape = tuple(int(d) for d in x.data.ty.shape)
    axes = sorted(int(a) % len(shape) for a in m.attrs.axis)
    if len(shape) != 4 or axes != [2, 3]:
        raise NotLowerable(f"mean over axes {axes} of a rank-{len(shape)} tensor")
    keep = bool(m.attrs.keepdims)
    count = shape[2] * shape[3]
    _, zp = island.out.scalar("out")
    lo, hi = dtype_range(island.out_dtype)
    total = R.sum(R.astype(x.data, "int32"), axis=[2, 3], keepdims=keep)
    name = name_of(x.data)
    contiguous = ctx.hints is not None and not ctx.hints.channels_last(name) and ctx.hints.dense(name)
    if contiguous:
        q = R.round(R.divide(R.astype(total, "float32"), const(np.float32(count), "float32")))
        return R.astype(R.clip(q, lo, hi), island.out_dtype)
    acc = R.subtract(total, const(zp * count, "int32"))
    quot = R.floor_divide(acc, const(count, "int32"))
    rem = R.subtract(acc, R.multiply(quot, const(count, "int32")))
    twice = R.multiply(rem, const(2, "int32"))
    up = R.logical_or(R.greater(twice, const(count, "int32")),
                      R.logical_and(R.equal(twice, const(count, "int32")),
                                    R.equal(R.bitwise_and(quot, const(1, "int32")), const(1, "int32"))))
    q = R.add(R.add(quot, R.astype(up, "int32")), const(zp, "int32"))
    return R.astype(R.clip(q, lo, hi), island.out_dtype)


def lower_avg_pool2d(ctx: Context, island: Island) -> Any:
    raise NotLowerable("avg_pool2d is not lowered yet")

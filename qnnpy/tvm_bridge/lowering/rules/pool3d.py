"""The 3-D average pools (avg_pool3d, adaptive_avg_pool3d) in integers, as the runtime computes them
(kernels/scalar/pool3d.cpp, runtime/ops/pool3d_ops.cpp).

A window's sum of integers is exact in any order, so the sums are separable: along each of D, H and W an inclusive
prefix sum with a leading zero, S, gives the sum over [start, end) as S[end] - S[start] (two takes), for windows
clipped at the borders (avg_pool3d: padding adds zeros, which no sum sees) and for adaptive windows alike. Then:
avg_pool3d (PyTorch's NDHWC kernel, every profile): acc = sum - zp taps, y = cvtps(fl(acc m)) + zp, m the vector
multiplier in the first 8 floor(C/8) channels and the tail multiplier in the others (lowering_avg_pool2d_multipliers
of the window's divisor); adaptive_avg_pool3d: channels_last_3d input (the hints) -> acc = sum - zp n,
y = cvtps(fl(acc m)) + zp, m = fl(1 / fl(1 / fl(fl(s_in / s_out) / n))); contiguous input -> y = cvtps(fl(sum m)),
m = fl(fl(fl(1.0 / kd) / kh) / kw) (lowering_adaptive_multiplier). Both need the module's hints (the layout, the
attributes).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from tvm.relax import op as R

from qnnpy import _core
from qnnpy.tvm_bridge.lowering.arith import const, dtype_range, round_to_output
from qnnpy.tvm_bridge.lowering.island import Island, NotLowerable
from qnnpy.tvm_bridge.lowering.rules.context import Context
from qnnpy.tvm_bridge.lowering.rules.leaves import name_of, single_input
from qnnpy.tvm_bridge.lowering.rules.pool import same_qparams


def _input_and_zero_point(island: Island) -> tuple[Any, int]:
    """The pool's input and the zero point it shares with the output, else NotLowerable."""
    x = single_input(island)
    _, zp_in = same_qparams(island, x)
    if island.out.scalar("the output")[1] != zp_in:
        raise NotLowerable("input and output zero points differ")
    return x, zp_in


def _window_sums(x: Any, windows: list[tuple[np.ndarray, np.ndarray]]) -> Any:
    """Sums of ``x`` (N, C, D, H, W) over [start, end) along D, H and W (``windows`` holds (starts, ends)), int32.
    The prefix sums run over whole axes, past the window sums' int32 bound on long ones: they are int64."""
    total = R.astype(x, "int64")
    for axis, (starts, ends) in zip((2, 3, 4), windows):
        pad = [0] * 10
        pad[2 * axis] = 1  # a leading zero: S[0] = 0, S[i] = the sum of the first i values
        prefix = R.nn.pad(R.cumsum(total, axis=axis, dtype="int64"), pad)
        total = R.subtract(R.take(prefix, const(ends, "int64"), axis=axis), R.take(prefix, const(starts, "int64"), axis=axis))
    return R.astype(total, "int32")


def _pool_windows(size: int, out: int, kernel: int, stride: int, pad: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(starts, ends, padded sizes) of avg_pool3d's windows along one axis (kernels.h avg_pool_window)."""
    start = np.arange(out) * stride - pad
    end = np.minimum(start + kernel, size + pad)
    return np.maximum(start, 0), np.minimum(end, size), end - start


def _adaptive_windows(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's adaptive windows, computed in float32 as it does (kernels.h adaptive_start / adaptive_end)."""
    o = np.arange(out)
    starts = np.floor((o * size).astype(np.float32) / np.float32(out)).astype(np.int64)
    ends = np.ceil(((o + 1) * size).astype(np.float32) / np.float32(out)).astype(np.int64)
    return starts, ends


def lower_avg_pool3d(ctx: Context, island: Island) -> Any:
    if ctx.node(island.name, "avg_pool3d") is None:
        raise NotLowerable("avg_pool3d needs the module's hints (its attributes)")
    x, zp = _input_and_zero_point(island)
    ints = ctx.hints.node(island.name)[1]["ints"]
    n, c, *size = (int(d) for d in x.data.ty.shape)
    out = island.out_shape[2:]
    axes = [_pool_windows(size[i], out[i], ints["kernel"][i], ints["stride"][i], ints["padding"][i]) for i in range(3)]
    taps = np.einsum("i,j,k->ijk", *[(e - s) for s, e, _ in axes]).astype(np.int64)
    override = int(ints["divisor_override"][0])
    divisors = override * np.ones_like(taps) if override else (
        np.einsum("i,j,k->ijk", *[p for _, _, p in axes]) if ints["count_include_pad"][0] else taps)
    vector_channels = np.arange(c) < c // 8 * 8
    mult = np.zeros((c, *out), np.float32)
    for index, divisor in np.ndenumerate(divisors):
        vector, tail = _core.lowering_avg_pool2d_multipliers(True, int(divisor))
        mult[(slice(None), *index)] = np.where(vector_channels, np.float32(vector), np.float32(tail))
    sums = _window_sums(x.data, [(s, e) for s, e, _ in axes])
    acc = R.subtract(sums, const((zp * taps).reshape(1, 1, *out), "int32"))
    lo, hi = dtype_range(island.out_dtype)
    return round_to_output(R.multiply(R.astype(acc, "float32"), const(mult.reshape(1, c, *out), "float32")), zp, lo, hi,
                           island.out_dtype)


def lower_adaptive_avg_pool3d(ctx: Context, island: Island) -> Any:
    if ctx.node(island.name, "adaptive_avg_pool3d") is None:
        raise NotLowerable("adaptive_avg_pool3d depends on PyTorch's memory layout: it needs the module's hints")
    x, zp = _input_and_zero_point(island)
    s_in, s_out = x.q.scalar("in")[0], island.out.scalar("the output")[0]
    _, _, *size = (int(d) for d in x.data.ty.shape)
    out = island.out_shape[2:]
    windows = [_adaptive_windows(size[i], out[i]) for i in range(3)]
    kd, kh, kw = [(e - s) for s, e in windows]
    rule = "fbgemm_nhwc" if ctx.hints.channels_last(name_of(x.data)) else "fbgemm_nchw"
    count = np.einsum("i,j,k->ijk", kd, kh, kw)
    mult = np.zeros(out, np.float32)
    for (i, j, k), _ in np.ndenumerate(count):
        mult[i, j, k] = _core.lowering_adaptive_multiplier(rule, float(s_in), float(s_out), int(kh[j]), int(kw[k]),
                                                           kd=int(kd[i]))
    sums = _window_sums(x.data, windows)
    zero = 0 if rule == "fbgemm_nchw" else zp  # the contiguous rule averages the raw values
    acc = R.subtract(sums, const((zero * count).reshape(1, 1, *out), "int32"))
    lo, hi = dtype_range(island.out_dtype)
    return round_to_output(R.multiply(R.astype(acc, "float32"), const(mult.reshape(1, 1, *out), "float32")), zero, lo, hi,
                           island.out_dtype)

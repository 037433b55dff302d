"""Integer (and exactly-rounded float) Relax arithmetic shared by the lowering rules.

Every float formula here is one IEEE single-precision operation per step, and no multiply feeds an add
directly: between them stands a rounding, a cast or ``apart``. TVM's LLVM backend compiles with
floating-point op fusion "fast" (src/target/llvm/llvm_instance.cc: AllowFPOpFusion), so a multiply whose
result an add reads in the same loop becomes one FMA, rounded once where the runtime rounds twice. So the
results equal the C++ runtime's bit for bit.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from tvm import relax
from tvm.relax import op as R

_RANGE = {"uint8": (0, 255), "int8": (-128, 127), "uint16": (0, 65535), "int16": (-32768, 32767)}


def dtype_range(dtype: str) -> tuple[int, int]:
    """(min, max) of an 8/16-bit quantized dtype."""
    if dtype not in _RANGE:
        raise ValueError(f"no quantized range for dtype {dtype}")
    return _RANGE[dtype]


def apart(product: Any) -> Any:
    """``product`` (float32), in a form no backend fuses with the add that reads it: max(product, -FLT_MAX), which
    is ``product`` for every finite value (these products of int32 sums and finite scales are finite) and which
    LLVM may not drop without assuming that no value is infinite (TVM does not set that flag)."""
    return R.maximum(product, const(np.finfo(np.float32).min, "float32"))


def const(value: Any, dtype: str) -> Any:
    return relax.const(np.asarray(value, dtype=dtype), dtype)


def centered(x: Any, zero_point: int) -> Any:
    """x - zero_point, widened to int16 (8-bit x) or int32 (an activation, never a weight)."""
    dtype = "int16" if str(x.ty.dtype) in ("int8", "uint8") else "int32"
    return R.subtract(R.astype(x, dtype), const(zero_point, dtype))


def per_channel(values: np.ndarray, rank: int, axis: int, dtype: str) -> Any:
    """A per-channel constant shaped to broadcast along ``axis`` of a rank-``rank`` tensor."""
    shape = [1] * rank
    shape[axis] = values.size
    return const(np.asarray(values, dtype=dtype).reshape(shape), dtype)


def round_to_output(scaled: Any, zero_point: int, lo: int, hi: int, out_dtype: str) -> Any:
    """clamp(rne(scaled) + zero_point, lo, hi) as ``out_dtype``; ``scaled`` is float32.

    Adding the zero point in float is exact below 2^24 and beyond it the clamp
    saturates either way. (The runtime's cvtps gives INT32_MIN for |x| >= 2^31,
    which saturates to ``lo``; values that large do not arise from 8-bit inputs
    with the multipliers the rules compute, see the rules' bounds.)
    """
    y = R.add(R.round(scaled), const(zero_point, "float32"))
    return R.astype(R.clip(y, lo, hi), out_dtype)


def requantize(acc: Any, mult: Any, zero_point: int, lo: int, hi: int, out_dtype: str, fbias: Any = None) -> Any:
    """y = clamp(rne(fl(fl(float(acc) [+ fbias]) * mult)) + zero_point, lo, hi)."""
    f = R.astype(acc, "float32")
    if fbias is not None:
        f = R.add(f, fbias)
    return round_to_output(R.multiply(f, mult), zero_point, lo, hi, out_dtype)


def onednn_requantize(acc: Any, src_scale: np.float32, w_scale: Any, fbias: Any, mult: Any, zero_point: int, lo: int,
                      hi: int, out_dtype: str) -> Any:
    """oneDNN's order (src/kernels/kernels.h, RequantParams): y = rne(clamp(fl(fl(fl(fl(fl(float(acc) * src_scale) *
    w_scale) [+ fbias]) * mult) + zero_point), lo, hi)). Each multiply that an add reads is kept ``apart``."""
    f = apart(R.multiply(R.multiply(R.astype(acc, "float32"), const(src_scale, "float32")), w_scale))
    if fbias is not None:
        f = R.add(f, fbias)
    f = R.add(apart(R.multiply(f, mult)), const(zero_point, "float32"))
    return R.astype(R.round(R.clip(f, lo, hi)), out_dtype)


def lookup(table: np.ndarray, x: Any, dtype: str) -> Any:
    """table[x] for an 8-bit x of ``dtype``: a 256-entry constant (or (n, 256) flattened by
    the caller) indexed by the raw byte (int8 values -128..-1 are bytes 128..255)."""
    index = R.astype(x, "int32")
    if dtype == "int8":
        index = R.bitwise_and(index, const(255, "int32"))
    return R.take(const(table.reshape(-1), str(table.dtype)), index, axis=0)


def fixed_point_requantize(acc: Any, multiplier: np.ndarray, shift: np.ndarray, rank: int, axis: int,
                           zero_point: int, lo: int, hi: int, out_dtype: str) -> Any:
    """clamp(MultiplyByQuantizedMultiplier(acc, M0[c], shift[c]) + zero_point, lo, hi) in int64
    Relax (src/kernels/fixed_point.h, TFLite's double-rounding variant):
      x' = acc * 2^max(shift, 0)            wrapped to int32
      h  = (x' M0 + nudge) / 2^31            truncated toward zero, nudge = 2^30 (x' M0 >= 0) or 1 - 2^30
      y  = (h >> e) + ((h & (2^e - 1)) > ((2^e - 1) >> 1) + (h < 0)),  e = max(-shift, 0)
    (M0 is never INT32_MIN, so the saturating case of the doubling high multiply cannot occur.)"""
    left = np.maximum(shift, 0).astype(np.int64)
    right = np.maximum(-shift, 0).astype(np.int64)
    i64 = "int64"
    x = R.astype(R.astype(R.multiply(R.astype(acc, i64), per_channel(2**left, rank, axis, i64)), "int32"), i64)
    ab = R.multiply(x, per_channel(multiplier.astype(np.int64), rank, axis, i64))
    negative = R.less(ab, const(0, i64))
    v = R.add(ab, R.where(negative, const(1 - 2**30, i64), const(2**30, i64)))
    floor = R.right_shift(v, const(31, i64))
    inexact = R.not_equal(R.bitwise_and(v, const(2**31 - 1, i64)), const(0, i64))
    h = R.add(floor, R.astype(R.logical_and(R.less(v, const(0, i64)), inexact), i64))
    mask = (np.int64(1) << right) - 1
    threshold = R.add(per_channel(mask >> 1, rank, axis, i64), R.astype(R.less(h, const(0, i64)), i64))
    remainder = R.bitwise_and(h, per_channel(mask, rank, axis, i64))
    y = R.add(R.right_shift(h, per_channel(right, rank, axis, i64)), R.astype(R.greater(remainder, threshold), i64))
    return R.astype(R.clip(R.add(y, const(zero_point, i64)), lo, hi), out_dtype)

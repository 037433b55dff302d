"""Integer (and exactly-rounded float) Relax arithmetic shared by the lowering rules.

Every float formula here is one IEEE single-precision operation per step followed
by a rounding or a cast, so no backend can contract two of them into a fused
multiply-add: the results equal the C++ runtime's bit for bit.
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


def const(value: Any, dtype: str) -> Any:
    return relax.const(np.asarray(value, dtype=dtype), dtype)


def centered(x: Any, zero_point: int, dtype: str = "int16") -> Any:
    """x - zero_point, widened (an activation, never a weight)."""
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


def lookup(table: np.ndarray, x: Any, dtype: str) -> Any:
    """table[x] for an 8-bit x of ``dtype``: a 256-entry constant (or (n, 256) flattened by
    the caller) indexed by the raw byte (int8 values -128..-1 are bytes 128..255)."""
    index = R.astype(x, "int32")
    if dtype == "int8":
        index = R.bitwise_and(index, const(255, "int32"))
    return R.take(const(table.reshape(-1), str(table.dtype)), index, axis=0)

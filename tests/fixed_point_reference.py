"""The fixed-point requantization written from its published definitions, in plain Python and
int64 numpy, for the tests (it never calls qnnpy): TFLite's QuantizeMultiplier
(tensorflow/lite/kernels/internal/quantization_util.cc), MultiplyByQuantizedMultiplier
(kernels/internal/common.h; the classic double-rounding variant, and the single-rounding one of
TFLITE_SINGLE_ROUNDING for comparison) and gemmlowp's SaturatingRoundingDoublingHighMul and
RoundingDivideByPOT (fixedpoint/fixedpoint.h).
"""
from __future__ import annotations

import math

import numpy as np

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def ref_quantize_multiplier(m: float) -> tuple[int, int]:
    """QuantizeMultiplier: frexp, round half away from zero, 2^31 -> 2^30 with shift + 1, flush below 2^-31."""
    if m == 0.0:
        return 0, 0
    q, shift = math.frexp(m)
    q_fixed = math.floor(q * 2.0**31 + 0.5)  # q > 0: half away from zero; q * 2^31 + 0.5 is exact in double
    if q_fixed == 2**31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q_fixed, shift


def wrap_int32(v: np.ndarray) -> np.ndarray:
    return ((v.astype(np.int64) + 2**31) % 2**32) - 2**31


def ref_multiply_by_quantized_multiplier(x: np.ndarray, multiplier: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """Elementwise, int64; x, multiplier and shift broadcast."""
    x, multiplier, shift = (np.asarray(v, np.int64) for v in (x, multiplier, shift))
    left, right = np.maximum(shift, 0), np.maximum(-shift, 0)
    a = wrap_int32(x << left)
    # SaturatingRoundingDoublingHighMul: nudge, then a division truncating toward zero.
    ab = a * multiplier
    nudged = ab + np.where(ab >= 0, 2**30, 1 - 2**30)
    high = np.where(nudged >= 0, nudged // 2**31, -((-nudged) // 2**31))
    high = np.where((a == INT32_MIN) & (multiplier == INT32_MIN), INT32_MAX, high)
    # RoundingDivideByPOT.
    mask = (np.int64(1) << right) - 1
    remainder = high & mask
    threshold = (mask >> 1) + (high < 0)
    return (high >> right) + (remainder > threshold)


def ref_requantize(acc: np.ndarray, m: np.ndarray, zero_point: int, lo: int, hi: int) -> np.ndarray:
    """acc (..., channels, ...) already broadcast against the per-channel real multipliers m."""
    q = np.array([ref_quantize_multiplier(float(v)) for v in np.ravel(m)], np.int64).reshape(np.shape(m) + (2,))
    y = ref_multiply_by_quantized_multiplier(acc, q[..., 0], q[..., 1])
    return np.clip(y + zero_point, lo, hi)


def ref_single_rounding(x: np.ndarray, multiplier: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """TFLITE_SINGLE_ROUNDING's MultiplyByQuantizedMultiplier: one rounding (half up) of x * M0 / 2^(31 - shift)."""
    x, multiplier, shift = (np.asarray(v, np.int64) for v in (x, multiplier, shift))
    total = 31 - shift
    return (x * multiplier + (np.int64(1) << (total - 1))) >> total

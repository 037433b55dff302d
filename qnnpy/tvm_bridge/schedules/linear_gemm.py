"""The integer linear layer (matmul) as TVM tensor expressions: rows of activation bytes times packed weights.

    acc[m, n] = sum_k (x[m, k] - z_x) w[n, k] = sum_k x'[m, k] w[n, k] - z_x' colsum[n]

as in conv_gemm.py (x' = x + 128 for int8 x; x - 128 for uint8 x where the bytes are ``signed``), with the 16
output channels of one instruction as the vector: the weights are packed (N/16, K/4, 16, 4), each 64-byte block
the 16 channels' next four weights, and four activation bytes of a row are broadcast to them. A row may be a
single token.
"""
from __future__ import annotations

from typing import Any

from tvm import te, tirx

from qnnpy.tvm_bridge.schedules.conv_gemm import activation_byte, byte_dtype, clamped_index, reduced, shifted_zero_point
from qnnpy.tvm_bridge.schedules.intrinsics import LANES


def pack_rows(x: te.Tensor, zero_point: int, rows: int, depth: int, signed: bool = False) -> te.Tensor:
    """x (..., K) int8/uint8 -> (rows, depth / 4, 4) bytes holding x', the K tail (up to ``depth``) z_x'."""
    shape = [int(d) for d in x.shape]
    k = shape[-1]
    fill = tirx.const(shifted_zero_point(x.dtype, zero_point, signed), byte_dtype(signed))

    def value(m: Any, k4: Any, j: Any) -> Any:
        index, rest = [], m
        for extent in reversed(shape[:-1]):
            index.append(rest % extent)
            rest = rest // extent
        col = k4 * 4 + j
        v = x[(*reversed(index), clamped_index(col, k))]
        return tirx.if_then_else(col < k, activation_byte(v, signed), fill)

    return te.compute((rows, depth // 4, 4), value, name="packed_rows")


def gemm_channels(rows: te.Tensor, weight: te.Tensor, pairs: bool = False) -> te.Tensor:
    """acc[m, n16, i] = sum_{k4, j} rows[m, k4, j] * weight[n16, k4, i, j] in int32 (weight (N/16, K4, 16, 4)); with
    ``pairs`` (the AVX2 form) the sums of bytes (0, 1) and (2, 3) stay apart in a last axis of 2, to be added by
    the caller (conv_gemm.reduced)."""
    m, k4, _ = (int(d) for d in rows.shape)
    blocks = int(weight.shape[0])
    rk = te.reduce_axis((0, k4), "k4")

    def value(index: tuple[Any, ...], j: Any, rj: Any) -> Any:
        r, b, i = index
        return te.sum(rows[r, rk, j].astype("int32") * weight[b, rk, i, j].astype("int32"), axis=[rk, rj])

    return reduced((m, blocks, LANES), value, pairs, "int8_linear")

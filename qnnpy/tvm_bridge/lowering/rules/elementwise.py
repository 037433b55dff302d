"""add and multiply of two quantized tensors (and of a tensor and a scalar).

add, int32_bias: QNNPACK's fixed-point add (src/kernels/scalar/elementwise.cpp):
    acc = zp_term + qa a_mult + qb b_mult        (int32, wrapping: computed in int64, truncated)
    y = (acc >> shift) + ((acc & mask) - (acc < 0) > mask >> 1) + zy, clamped
  with shift = 21 - exponent(max(s_a/s_y, s_b/s_y)) and a_mult = lrintf(fl(s_a/s_y) 2^shift)
  (QNNPACK's pytorch_qnnp_compute_add_quantization_params; runtime elementwise_ops.cpp).
add, fbgemm: y = clamp(rne(fl(fl(da + db) * fl(1/s_y))) + zy) with da = fl(s_a float(qa - za)),
  except in PyTorch's vector lanes (every element before the last n % 64 of the
  runtime's storage order, NHWC for rank 4) where da = fma(s_a, float(qa), fl(s_a * -za)):
  both are computed exactly in float64 (the products have at most 33 significant bits)
  and rounded once to float32.
multiply (PyTorch's qmul, binary_ops.cpp): y = clamp(rne(fl(float((qa-za)(qb-zb)) * m)) + zy),
  m = fl(fl(s_a s_b) fl(1/s_y)), with broadcasting.
Scalar add / multiply (a constant operand) are tables of the runtime (unary.py).
"""
from __future__ import annotations

import struct
from typing import Any

import numpy as np
from tvm.relax import op as R

from qnnpy import _core
from qnnpy.tvm_bridge.lowering.arith import const, dtype_range, round_to_output
from qnnpy.tvm_bridge.lowering.island import Dequantized, Island, NotLowerable, op_name, shape_of
from qnnpy.tvm_bridge.lowering.rules import unary
from qnnpy.tvm_bridge.lowering.rules.context import Context
from qnnpy.tvm_bridge.lowering.rules.leaves import dequantized_leaves
from qnnpy.tvm_bridge.lowering.rules.positions import tail_mask


def _operands(island: Island) -> tuple[Dequantized, Dequantized, bool] | None:
    """(a, b, relu) for a binary island op(dq(a), dq(b)) [-> relu]; None for a scalar operand."""
    e = island.call(island.root)
    relu = False
    if op_name(e) == "nn.relu":
        relu, e = True, island.call(e.args[0])
    leaves = dequantized_leaves(island)
    if len(leaves) == 1:
        return None
    if len(leaves) != 2:
        raise NotLowerable(f"{len(leaves)} dequantized inputs, expected 2")
    order = {leaf.data: leaf for leaf in leaves}
    a = island.bindings.dequantized(e.args[0], "operand a")
    b = island.bindings.dequantized(e.args[1], "operand b")
    return order[a.data], order[b.data], relu


def _float_bits_exponent(x: np.float32) -> int:
    return ((struct.unpack("<I", struct.pack("<f", float(x)))[0] >> 23) & 0xFF) - 127


def _fixed_add(island: Island, a: Dequantized, b: Dequantized, relu: bool) -> Any:
    s_a, z_a = a.q.scalar("operand a")
    s_b, z_b = b.q.scalar("operand b")
    s_y, z_y = island.out.scalar("the output")
    a_ratio, b_ratio = np.float32(s_a / s_y), np.float32(s_b / s_y)
    shift = 21 - _float_bits_exponent(max(a_ratio, b_ratio))
    if not 13 <= shift <= 31:
        raise NotLowerable(f"input/output scale ratio {max(a_ratio, b_ratio)} outside QNNPACK's range")
    two_shift = np.float32(2.0**shift)
    a_mult = int(np.rint(np.float32(a_ratio * two_shift)))
    b_mult = int(np.rint(np.float32(b_ratio * two_shift)))
    zp_term = -(a_mult * z_a + b_mult * z_b)
    lo, hi = dtype_range(island.out_dtype)
    lo = z_y if relu else lo
    acc = R.add(R.add(R.multiply(R.astype(a.data, "int64"), const(a_mult, "int64")),
                      R.multiply(R.astype(b.data, "int64"), const(b_mult, "int64"))), const(zp_term, "int64"))
    acc = R.astype(R.astype(acc, "int32"), "int64")  # int32 wrap-around, as the runtime's add
    mask = (1 << shift) - 1
    remainder = R.subtract(R.bitwise_and(acc, const(mask, "int64")),
                           R.astype(R.less(acc, const(0, "int64")), "int64"))
    y = R.add(R.right_shift(acc, const(shift, "int64")),
              R.astype(R.greater(remainder, const(mask >> 1, "int64")), "int64"))
    y = R.add(y, const(z_y, "int64"))
    return R.astype(R.clip(y, lo, hi), island.out_dtype)


def _dequantize_exact(d: Dequantized, vector_lane: bool) -> Any:
    s, z = d.q.scalar("an operand")
    if vector_lane:
        premul = np.float32(s * np.float32(-z))
        f = R.add(R.multiply(R.astype(d.data, "float64"), const(np.float64(s), "float64")),
                  const(np.float64(premul), "float64"))
    else:
        f = R.multiply(R.astype(R.subtract(R.astype(d.data, "int32"), const(z, "int32")), "float64"),
                       const(np.float64(s), "float64"))
    return R.astype(f, "float32")


def _float_add(island: Island, a: Dequantized, b: Dequantized, relu: bool) -> Any:
    s_y, z_y = island.out.scalar("the output")
    lo, hi = dtype_range(island.out_dtype)
    lo = z_y if relu else lo
    inv = const(np.float32(1) / s_y, "float32")

    def lanes(vector: bool) -> Any:
        c = R.add(_dequantize_exact(a, vector), _dequantize_exact(b, vector))
        if relu:
            c = R.maximum(c, const(0, "float32"))
        return round_to_output(R.multiply(c, inv), z_y, lo, hi, island.out_dtype)

    mask = tail_mask(island.out_shape, nhwc=len(island.out_shape) == 4)
    if mask is None:
        return lanes(True)
    return R.where(const(mask, "bool"), lanes(False), lanes(True))


def lower_add(ctx: Context, island: Island) -> Any:
    operands = _operands(island)
    if operands is None:
        return unary.lower_unary(ctx, island)
    a, b, relu = operands
    if shape_of(a.data) != island.out_shape or shape_of(b.data) != island.out_shape:
        raise NotLowerable("add with broadcasting")
    if not _core.follows_int32_bias_rules(ctx.profile):  # fbgemm, and the oneDNN / x86 profiles
        return _float_add(island, a, b, relu)
    return _fixed_add(island, a, b, relu)


def lower_multiply(ctx: Context, island: Island) -> Any:
    operands = _operands(island)
    if operands is None:
        return unary.lower_unary(ctx, island)
    a, b, relu = operands
    if relu:
        raise NotLowerable("multiply with a fused relu")
    s_a, z_a = a.q.scalar("operand a")
    s_b, z_b = b.q.scalar("operand b")
    s_y, z_y = island.out.scalar("the output")
    mult = np.float32(np.float32(s_a * s_b) * (np.float32(1) / s_y))
    prod = R.multiply(R.subtract(R.astype(a.data, "int32"), const(z_a, "int32")),
                      R.subtract(R.astype(b.data, "int32"), const(z_b, "int32")))
    lo, hi = dtype_range(island.out_dtype)
    return round_to_output(R.multiply(R.astype(prod, "float32"), const(mult, "float32")), z_y, lo, hi, island.out_dtype)

"""torchao's dynamically quantized linears (qnnpy's ``affine_linear``, src/ops/affine_linear.cpp) in the
integer form.

Their canonical form ends in float, as torchao defines them: ``R.matmul`` of the per-token quantized input,
dequantized along its rows, by the weight, dequantized along axis 0 of its (N * G, g) view (one group a row:
g = K for W8A8, g = 32 for 8da4w), then the bias add. No quantize follows, so the island pass does not see
them; ``lower_affine_matmul`` rewrites the matmul itself as the runtime computes it
(src/runtime/affine_linear.h), bit for bit:

    one group a row (activation 1, W8A8):  y = fl(fl(float(acc) * s_x) * s_w[c]),
        acc = sum_k q[k] w[c][k] in int32
    groups (activation 2, 8da4w):           y = fl(fl(sum_g fl(s[c][g] * float(S[g][c]))) * s_x),
        S[g][c] = sum_{k in g} (q[k] - z_x) (w[c][k] - z[c][g]) in int32, the groups summed in order from 0

The bias add and the reshapes after the matmul stay as they are. The per-token quantization before it (a
``round``, then a ``quantize`` of unit scale: the integers torchao computes in float) is float arithmetic that
IEEE float32 computes exactly as the runtime does; ``is_token_quantization`` recognises its island, which the
pass keeps as it is.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from tvm.relax import op as R

from qnnpy.tvm_bridge.lowering.arith import apart, centered, const
from qnnpy.tvm_bridge.lowering.island import Bindings, NotLowerable, dtype_of, op_name


def is_token_quantization(quantize: Any, bindings: Bindings) -> bool:
    """``quantize`` (an ``R.quantize`` call) has unit scale and zero point 0, int8 output, and quantizes
    ``round(x)`` or ``round(x) + z`` (z an integer cast to float): its input holds integers already, so it only
    clamps and casts."""
    try:
        scale = bindings.constant(quantize.args[1], "scale").reshape(-1)
        zero_point = bindings.constant(quantize.args[2], "zero point").reshape(-1)
    except NotLowerable:
        return False
    if str(quantize.attrs.out_dtype) != "int8" or scale.size != 1 or scale[0] != 1 or zero_point.size != 1 \
            or zero_point[0] != 0:
        return False
    root = bindings.resolve(quantize.args[0])
    if op_name(root) == "add":
        offset = bindings.resolve(root.args[1])
        if op_name(offset) != "astype" or not dtype_of(offset.args[0]).startswith("int"):
            return False
        root = bindings.resolve(root.args[0])
    return op_name(root) == "round"


def _weight_groups(bindings: Bindings, rhs: Any) -> tuple[Any, np.ndarray, np.ndarray, tuple[int, int, int]] | None:
    """(int8 weight expression (N, K), group scales (N, G), group zero points (N, G), (N, G, g)) when ``rhs`` is
    ``permute_dims(reshape(dequantize(reshape(w, (N * G, g)), s, z, axis=0), (N, K)), [1, 0])``."""
    rhs = bindings.resolve(rhs)
    if op_name(rhs) != "permute_dims" or (rhs.attrs.axes is not None and [int(a) for a in rhs.attrs.axes] != [1, 0]):
        return None
    whole = bindings.resolve(rhs.args[0])
    if op_name(whole) != "reshape":
        return None
    dequantized = bindings.resolve(whole.args[0])
    if op_name(dequantized) != "dequantize" or int(dequantized.attrs.axis) != 0:
        return None
    grouped = bindings.resolve(dequantized.args[0])
    if op_name(grouped) != "reshape" or dtype_of(grouped.args[0]) != "int8" or len(grouped.args[0].ty.shape) != 2:
        return None
    rows, group = (int(d) for d in dequantized.args[0].ty.shape)
    n, k = (int(d) for d in grouped.args[0].ty.shape)
    scale = bindings.constant(dequantized.args[1], "the weight scale").astype(np.float32)
    zero_point = bindings.constant(dequantized.args[2], "the weight zero point").astype(np.int32)
    if rows * group != n * k or k % group != 0 or scale.size != rows:
        raise NotLowerable(f"a weight of {n} x {k} in groups of {group} with {scale.size} scales")
    groups = k // group
    zero_point = np.broadcast_to(zero_point.reshape(-1), (rows,))
    return grouped.args[0], scale.reshape(n, groups), zero_point.reshape(n, groups), (n, groups, group)


def _is_zero(bindings: Bindings, expr: Any) -> bool:
    """``expr`` is a constant (or a param of known value) whose every element is 0."""
    try:
        return not np.any(bindings.constant(expr, "the input zero point"))
    except NotLowerable:
        return False


def lower_affine_matmul(bindings: Bindings, mm: Any) -> Any:
    """The integer form of an affine_linear's ``R.matmul`` (module docstring), or None when ``mm`` is not one. The
    bias add reads its result, and each group's product is summed: both are kept ``apart`` (arith.py)."""
    x = bindings.resolve(mm.args[0])
    if op_name(x) != "dequantize" or int(x.attrs.axis) != 0 or dtype_of(x.args[0]) != "int8":
        return None
    if len(x.args[0].ty.shape) != 2 or len(x.args[1].ty.shape) != 1:  # rows of K, a scale per row
        return None
    weight = _weight_groups(bindings, mm.args[1])
    if weight is None:
        return None
    w, w_scale, w_zero_point, (n, groups, group) = weight
    q, x_scale = x.args[0], R.reshape(x.args[1], [-1, 1])
    if _is_zero(bindings, x.args[2]):  # symmetric tokens: W8A8 (activation 1), one weight scale per row
        if groups != 1 or np.any(w_zero_point != 0):
            raise NotLowerable("symmetric int8 tokens with a grouped or asymmetric weight")
        acc = R.matmul(centered(q, 0), R.permute_dims(w, [1, 0]), out_dtype="int32")
        return apart(R.multiply(R.multiply(R.astype(acc, "float32"), x_scale), const(w_scale.reshape(n), "float32")))
    # Asymmetric tokens (8da4w, activation 2): per group, also where a row is one group.
    x_zero_point = R.astype(R.reshape(x.args[2], [-1, 1, 1]), "int16")
    q_groups = R.permute_dims(R.subtract(R.astype(R.reshape(q, [-1, groups, group]), "int16"), x_zero_point), [1, 0, 2])
    w_groups = R.reshape(w, [n, groups, group])
    if np.any(w_zero_point != 0):
        w_groups = R.subtract(R.astype(w_groups, "int16"), const(w_zero_point.reshape(n, groups, 1), "int16"))
    sums = R.matmul(q_groups, R.permute_dims(w_groups, [1, 2, 0]), out_dtype="int32")  # (G, rows, N)
    products = apart(R.multiply(const(w_scale.T.reshape(groups, 1, n), "float32"), R.astype(sums, "float32")))
    return apart(R.multiply(R.sum(products, axis=[0]), x_scale))

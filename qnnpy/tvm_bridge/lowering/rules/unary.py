"""Element-wise functions of one quantized tensor: relu, clamp (relu6, hardtanh),
hardswish, hardsigmoid, sigmoid, leaky_relu, elu, quantized tanh, scalar add and multiply.

relu with equal input and output qparams is max(q, zp) (exact, any module). The
others are 256-entry tables indexed by the raw byte, taken from the runtime
(unary_tables.cpp) when hints are given: one table for PyTorch's vector lanes and
one for its scalar tail (the last n % 64 elements in the input's PyTorch memory
order, see positions.py). Without hints, an island of element-wise ops is one table
evaluated by TVM from the island itself (evaluated.py). Under profiles that follow
QNNPACK's kernels (_core.follows_qnnpack_kernels: qnnpack), a clamp of a dense
channels_last uint8 tensor returns its values in channels_last order as a contiguous
tensor, as PyTorch's qnnpack_clamp does (table_ops.cpp): reshape(permute(y, NHWC), NCHW).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from tvm.relax import op as R

from qnnpy import _core
from qnnpy.tvm_bridge.lowering.arith import const, lookup
from qnnpy.tvm_bridge.lowering.island import Island, NotLowerable, op_name
from qnnpy.tvm_bridge.lowering.rules.context import Context
from qnnpy.tvm_bridge.lowering.rules.evaluated import evaluated_table
from qnnpy.tvm_bridge.lowering.rules.leaves import name_of, single_input
from qnnpy.tvm_bridge.lowering.rules.positions import tail_mask

TABLE_OPS = ("hardswish", "hardsigmoid", "sigmoid", "leaky_relu", "clamp", "add_scalar", "mul_scalar", "elu",
             "quantized_tanh")


def tables(ctx: Context, island: Island, x_name: str, x: Any, dtype: str, vector: np.ndarray, tail: np.ndarray) -> Any:
    """vector[x] in PyTorch's vector lanes, tail[x] in its scalar tail."""
    mask = None if np.array_equal(vector, tail) else tail_mask(island.out_shape, ctx.hints.channels_last(x_name))
    if mask is None:
        return lookup(vector, x, dtype)
    return R.where(const(mask, "bool"), lookup(tail, x, dtype), lookup(vector, x, dtype))


def lower_unary(ctx: Context, island: Island) -> Any:
    x = single_input(island)
    dtype = str(x.data.ty.dtype)
    root = island.call(island.root)
    if op_name(root) == "nn.relu" and op_name(island.call(root.args[0])) == "dequantize":
        same = x.q.per_tensor and island.out.per_tensor and x.q.scalar("in") == island.out.scalar("out")
        if same and dtype == island.out_dtype:
            return R.maximum(x.data, const(x.q.scalar("in")[1], dtype))
    if ctx.hints is None:
        return lookup(evaluated_table(island, x), x.data, dtype)
    ctx.node(island.name, *TABLE_OPS)
    if dtype != island.out_dtype:
        raise NotLowerable(f"input {dtype} and output {island.out_dtype} differ")
    vector, tail = ctx.hints.unary_tables(island.name, ctx.profile)
    name = name_of(x.data)
    y = tables(ctx, island, name, x.data, dtype, vector.astype(dtype), tail.astype(dtype))
    shape = list(island.out_shape)
    if (ctx.hints.node(island.name)[1]["op"] == "clamp" and _core.follows_qnnpack_kernels(ctx.profile)
            and dtype == "uint8" and len(shape) == 4 and ctx.hints.channels_last(name) and ctx.hints.dense(name)):
        return R.reshape(R.permute_dims(y, [0, 2, 3, 1]), shape)
    return y

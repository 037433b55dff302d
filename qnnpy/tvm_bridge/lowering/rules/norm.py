"""batch_norm (inference) of a quantized tensor; layer_norm, group_norm and softmax stay in float.

With hints: a (C, 256) table per channel and input byte, computed by the runtime's
own batch-norm runner (lowering_channel_tables): PyTorch's kernel uses an fma in its
first 8 floor(C/8) channels and separate multiply and add in the others
(norm_ops.cpp); the output only depends on the channel and the input value.
Without hints it stays in float (reported).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from tvm.relax import op as R

from qnnpy.tvm_bridge.lowering.arith import const
from qnnpy.tvm_bridge.lowering.island import Island, NotLowerable, op_name
from qnnpy.tvm_bridge.lowering.rules.context import Context
from qnnpy.tvm_bridge.lowering.rules.leaves import single_input


def lower_batch_norm(ctx: Context, island: Island) -> Any:
    root = island.call(island.root)
    if op_name(island.call(root.tuple_value) if hasattr(root, "tuple_value") else root) != "nn.batch_norm":
        raise NotLowerable("not a batch_norm output")
    x = single_input(island)
    if ctx.node(island.name, "batch_norm2d") is None:
        raise NotLowerable("batch_norm needs the module's hints (the runtime's per-channel tables)")
    dtype = str(x.data.ty.dtype)
    table = ctx.hints.channel_tables(island.name, ctx.profile, "batch_norm2d").astype(dtype)
    channels = table.shape[0]
    index = R.astype(x.data, "int32")
    if dtype == "int8":
        index = R.bitwise_and(index, const(255, "int32"))
    offsets = const((np.arange(channels, dtype=np.int32) * 256).reshape(1, channels, 1, 1), "int32")
    return R.take(const(table.reshape(-1), dtype), R.add(index, offsets), axis=0)


def keep_normalization_float(ctx: Context, island: Island) -> Any:
    """quantized_layer_norm / quantized_group_norm / quantized_softmax: not lowered. Each output
    depends on a whole row of the input (its mean and variance, its max and sum of exponentials),
    not on one input value, so no table applies; an integer Relax form would have to restate
    PyTorch's float steps (fma-contracted variance, exp_u20, lane-wise sums: the runtime's
    normalize_ops.cpp and softmax_ops.cpp) as TVM operations no backend may contract or reorder."""
    raise NotLowerable("normalizations and softmax stay in float (row statistics; no per-value table)")

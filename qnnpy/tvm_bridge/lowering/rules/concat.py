"""concat of quantized tensors, each requantized to the output's qparams.

With hints, PyTorch's qcat as the runtime runs it (concat_ops.cpp): along channels of
rank-4 inputs that are all dense and channels_last (or 1x1), the NHWC fast path
copies inputs with the output's qparams and requantizes the others with the
vector-lane table for the first 8 floor(C/8) channels and the scalar table for the
rest; otherwise every value goes through the scalar table. Tables come from the
runtime (lowering_requantize_tables). Without hints, inputs with the output's qparams
are copied and others stay in float (reported).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from tvm.relax import op as R

from qnnpy import _core
from qnnpy.tvm_bridge.lowering.arith import const, dtype_range, lookup
from qnnpy.tvm_bridge.lowering.island import Island, NotLowerable
from qnnpy.tvm_bridge.lowering.rules.context import Context
from qnnpy.tvm_bridge.lowering.rules.leaves import name_of


def lower_concat(ctx: Context, island: Island) -> Any:
    cat = island.call(island.root)
    fields = island.call(cat.args[0]).fields
    inputs = [island.bindings.dequantized(f, f"input {i}") for i, f in enumerate(fields)]
    rank = len(island.out_shape)
    axis = int(cat.attrs.axis) % rank
    s_y, z_y = island.out.scalar("the output")
    lo, hi = dtype_range(island.out_dtype)
    hinted = ctx.node(island.name, "cat") is not None
    fast = hinted and axis == 1 and rank == 4 and all(
        ctx.hints.dense(name_of(d.data)) and (ctx.hints.channels_last(name_of(d.data)) or
                                               int(d.data.ty.shape[2]) * int(d.data.ty.shape[3]) == 1)
        for d in inputs)
    parts = []
    for d in inputs:
        dtype = str(d.data.ty.dtype)
        s, z = d.q.scalar("an input")
        if dtype != island.out_dtype:
            raise NotLowerable(f"input {dtype} and output {island.out_dtype} differ")
        same = s == s_y and z == z_y
        if same and (fast or not hinted):
            parts.append(d.data)
            continue
        if not hinted:
            raise NotLowerable("requantizing inputs needs the module's hints (PyTorch's qcat tables)")
        vector, tail = _core.lowering_requantize_tables(dtype == "int8", float(s), z, float(s_y), z_y, lo, hi)
        vector, tail = np.asarray(vector).astype(dtype), np.asarray(tail).astype(dtype)
        channels = int(d.data.ty.shape[1]) if rank == 4 else 0
        vector_channels = channels // 8 * 8 if fast else 0
        if vector_channels == 0:
            parts.append(lookup(tail, d.data, dtype))
        elif vector_channels == channels:
            parts.append(lookup(vector, d.data, dtype))
        else:
            in_tail = (np.arange(channels) >= vector_channels).reshape(1, channels, 1, 1)
            parts.append(R.where(const(in_tail, "bool"), lookup(tail, d.data, dtype), lookup(vector, d.data, dtype)))
    return R.concat(parts, axis=axis)

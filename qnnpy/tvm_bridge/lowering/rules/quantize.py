"""quantize of a float function input (no dequantize in the island).

With hints (qnnpy's quantize node): y = clamp(rne(fl(x * fl(1/s))) + z), PyTorch's
and the runtime's reciprocal multiply. A foreign module keeps its R.quantize, which
already produces the integer tensor (Relax divides by the scale).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from tvm.relax import op as R

from qnnpy.tvm_bridge.lowering.arith import const, dtype_range, round_to_output
from qnnpy.tvm_bridge.lowering.island import Island, NotLowerable
from qnnpy.tvm_bridge.lowering.rules.context import Context


def lower_quantize(ctx: Context, island: Island) -> Any:
    if str(island.root.ty.dtype) != "float32":
        raise NotLowerable(f"quantize of a {island.root.ty.dtype} tensor")
    if ctx.node(island.name, "quantize") is None:
        return None
    s, z = island.out.scalar("the output")
    lo, hi = dtype_range(island.out_dtype)
    return round_to_output(R.multiply(island.root, const(np.float32(1) / s, "float32")), z, lo, hi, island.out_dtype)

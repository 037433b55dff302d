"""Tables of element-wise islands of foreign modules, evaluated by TVM from the island itself.

Without qnnpy's hints, an island ``quantize(f(dequantize(x)))`` whose ops are all
element-wise with scalar constants is a function of one 8-bit value: the island
(its own dequantize, float ops and quantize, Relax semantics) is compiled for llvm
once and run on the 256 possible values; the lowered island is a lookup in that
table. It equals the float module's own result for every input value.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import tvm
from tvm import relax
from tvm.relax import op as R

from qnnpy.tvm_bridge.lowering.arith import const
from qnnpy.tvm_bridge.lowering.island import Dequantized, Island, NotLowerable, op_name

ELEMENTWISE = ("add", "subtract", "multiply", "divide", "clip", "nn.relu", "sigmoid", "nn.leakyrelu", "tanh",
               "exp", "maximum", "minimum", "nn.gelu", "nn.silu", "sqrt", "rsqrt", "negative", "abs", "where",
               "greater", "less", "greater_equal", "less_equal")


def _rebuild(island: Island, expr: Any, q: Any, x: Dequantized) -> Any:
    e = island.call(expr)
    name = op_name(e)
    if name == "dequantize":
        return R.dequantize(q, const(x.q.scale, "float32"), const(x.q.zero_point.astype(np.int32), "int32"), axis=-1)
    if name in ELEMENTWISE:
        return relax.Call(e.op, [_rebuild(island, a, q, x) for a in e.args], e.attrs, e.ty_args)
    tensor = getattr(e, "value", None)
    if isinstance(e, tvm.ir.expr.Constant) and (not hasattr(tensor, "numpy") or tensor.numpy().size == 1):
        return e  # a scalar constant, or a bound such as clip's
    raise NotLowerable(f"{name or type(e).__name__} in an island without hints (only element-wise ops "
                       "with scalar constants are evaluated to a table)")


def evaluated_table(island: Island, x: Dequantized) -> np.ndarray:
    """out[b] = the island's output for the 8-bit input whose raw byte is b."""
    if not (x.q.per_tensor and island.out.per_tensor):
        raise NotLowerable("per-channel qparams")
    dtype = str(x.data.ty.dtype)
    q = relax.Var("q", relax.TensorType((256,), dtype))
    bb = relax.BlockBuilder()
    with bb.function("main", [q]):
        body = _rebuild(island, island.root, q, x)
        s, z = island.out.scalar("the output")
        out = bb.emit(R.quantize(body, const(s, "float32"), const(z, "int32"), axis=-1, out_dtype=island.out_dtype))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(tvm.compile(bb.get(), target="llvm"), tvm.cpu())
    values = np.arange(256, dtype=np.uint8).view(dtype) if dtype in ("int8", "uint8") else None
    if values is None:
        raise NotLowerable(f"a table over {dtype} inputs")
    return vm["main"](tvm.runtime.tensor(values)).numpy()

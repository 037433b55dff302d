"""Data movement with equal input and output qparams: reshape, permute_dims,
strided_slice, take (nearest upsampling as gathers), nearest resize2d. The same op
applied to the integer tensor is exact (any module)."""
from __future__ import annotations

from typing import Any

from tvm import relax

from qnnpy.tvm_bridge.lowering.island import Island, NotLowerable, op_name
from qnnpy.tvm_bridge.lowering.rules.context import Context
from qnnpy.tvm_bridge.lowering.rules.leaves import single_input

MOVEMENT = ("reshape", "permute_dims", "strided_slice", "take", "image.resize2d")


def _on_integers(island: Island, expr: Any) -> Any:
    e = island.call(expr)
    name = op_name(e)
    if name == "dequantize":
        return e.args[0]
    if name not in MOVEMENT:
        raise NotLowerable(f"{name or type(e).__name__} inside a data-movement island")
    if name == "image.resize2d" and str(e.attrs.method) != "nearest_neighbor":
        raise NotLowerable(f"resize2d method {e.attrs.method}")
    args = [_on_integers(island, e.args[0])] + list(e.args[1:])
    return relax.Call(e.op, args, e.attrs, e.ty_args)


def lower_data_movement(ctx: Context, island: Island) -> Any:
    x = single_input(island)
    if not (x.q.per_tensor and island.out.per_tensor and x.q.scalar("in") == island.out.scalar("out")):
        raise NotLowerable("input and output qparams differ")
    if str(x.data.ty.dtype) != island.out_dtype:
        raise NotLowerable(f"input {x.data.ty.dtype} and output {island.out_dtype} differ")
    return _on_integers(island, island.root)

"""The integer inputs of an island: the dequantize calls at its leaves."""
from __future__ import annotations

from typing import Any

from tvm import relax

from qnnpy.tvm_bridge.lowering.island import Dequantized, Island, NotLowerable, op_name


def dequantized_leaves(island: Island) -> list[Dequantized]:
    """Every distinct integer tensor dequantized inside the island (constants aside)."""
    found: dict[Any, Dequantized] = {}

    def visit(expr: Any) -> None:
        e = island.call(expr)
        if op_name(e) == "dequantize":
            d = island.bindings.dequantized(e, "an input")
            found.setdefault(d.data, d)
        elif isinstance(e, relax.Call):
            for a in e.args:
                visit(a)
        elif isinstance(e, relax.Tuple):
            for a in e.fields:
                visit(a)
        elif isinstance(e, relax.TupleGetItem):
            visit(e.tuple_value)

    visit(island.root)
    return list(found.values())


def single_input(island: Island) -> Dequantized:
    leaves = dequantized_leaves(island)
    if len(leaves) != 1:
        raise NotLowerable(f"{len(leaves)} dequantized inputs, expected 1")
    return leaves[0]


def name_of(expr: Any) -> str:
    """The variable name of an integer input (its IR value name in qnnpy's modules)."""
    return expr.name if isinstance(expr, relax.Var) else ""

"""Converters of aten reductions of unquantized tensors (the float ops of ``src/ops/float_reduce.cpp``)."""
from __future__ import annotations

from typing import Any, Callable

import torch
import torch.fx

from qnnpy.convert.context import ConversionContext
from qnnpy.convert.float_args import axes, axis, bind, operands, promoted, rank_of, refuse

Converter = Callable[[ConversionContext, torch.fx.Node], int]
_aten = torch.ops.aten


def _input(ctx: ConversionContext, node: torch.fx.Node, x: Any, dtype: Any) -> int:
    """The reduced input, cast to a ``dtype=`` argument's dtype when one is given (sum, mean, cumsum)."""
    target = promoted(ctx, node, x) if dtype is None else ctx.plain_dtype(dtype, node)
    return operands(ctx, node, [x], target)[0]


def _correction(args: dict[str, Any]) -> float:
    """The variance's correction: ``correction=`` (default 1), or 1 / 0 from ``unbiased`` (var.dim(x, dim, unbiased,
    keepdim), var_mean.dim)."""
    correction = args.get("correction")
    if "unbiased" in args:
        correction = 1 if args["unbiased"] in (None, True) else 0
    return float(1 if correction is None else correction)


def _reduction(ir_op: str) -> Converter:
    def convert(ctx: ConversionContext, node: torch.fx.Node) -> int:
        args = bind(node)
        x = args["self"]
        dims = axes(args.get("dim"), rank_of(ctx, x))
        if ctx.example(x).dim() == 0:
            dims = []
        value = _input(ctx, node, x, args.get("dtype"))
        if ir_op == "float_mean":
            value = ctx.cast(value, "float32", node)
        floats = {"correction": _correction(args)} if ir_op == "float_var" else {}
        return ctx.add_plain(node, ir_op, [value], ints={"axes": dims, "keepdim": [int(bool(args.get("keepdim")))]},
                             floats=floats)
    convert.__doc__ = f"``{ir_op}`` over dim (None or []: every axis), keepdim."
    return convert


def _arg_reduction(ir_op: str) -> Converter:
    def convert(ctx: ConversionContext, node: torch.fx.Node) -> int:
        args = bind(node)
        x = args["self"]
        dim = [] if args["dim"] is None else [axis(args["dim"], rank_of(ctx, x))]
        value = ctx.value(x, node)
        if ctx.graph.value(value)["dtype"] == "bool":
            value = ctx.cast(value, "int64", node)
        return ctx.add_plain(node, ir_op, [value], ints={"axis": dim, "keepdim": [int(bool(args["keepdim"]))]})
    convert.__doc__ = f"``{ir_op}`` over one axis, or the flattened input (dim None)."
    return convert


def convert_cumsum(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """cumsum(x, dim, dtype): ``float_cumsum`` (integers and bool sum in int64)."""
    args = bind(node)
    x = args["self"]
    return ctx.add_plain(node, "float_cumsum", [_input(ctx, node, x, args["dtype"])],
                         ints={"axis": [axis(args["dim"], rank_of(ctx, x))]})


def convert_log_softmax(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """_log_softmax(x, dim, half_to_float): ``float_log_softmax``."""
    args = bind(node)
    if args.get("half_to_float"):
        raise refuse(ctx, node, "half_to_float=True is not supported")
    x = args["self"]
    return ctx.add_plain(node, "float_log_softmax", operands(ctx, node, [x], "float32"),
                         ints={"axis": [axis(args["dim"], rank_of(ctx, x))]})


def min_max_dim(ctx: ConversionContext, parent: torch.fx.Node, index: int, node: torch.fx.Node) -> int:
    """Output ``index`` of max.dim / min.dim: the values (``float_amax`` / ``float_amin``) or the indices
    (``float_argmax`` / ``float_argmin``)."""
    x, dim = parent.args[:2]
    keepdim = int(bool(parent.args[2] if len(parent.args) > 2 else parent.kwargs.get("keepdim", False)))
    dim = axis(dim, rank_of(ctx, x))
    kind = "max" if parent.target == _aten.max.dim else "min"
    if index == 0:
        return ctx.add_plain(node, f"float_a{kind}", [ctx.value(x, node)], ints={"axes": [dim], "keepdim": [keepdim]})
    return ctx.add_plain(node, f"float_arg{kind}", [ctx.value(x, node)], ints={"axis": [dim], "keepdim": [keepdim]})


def var_mean_part(ctx: ConversionContext, parent: torch.fx.Node, index: int, node: torch.fx.Node) -> int:
    """Output ``index`` of var_mean: the variance (``float_var``) or the mean (``float_mean``), each over the same
    axes (PyTorch computes both in one pass; the two ops sum in their own order: float rounding)."""
    args = bind(parent)
    x = args["self"]
    dims = [] if ctx.example(x).dim() == 0 else axes(args.get("dim"), rank_of(ctx, x))
    ints = {"axes": dims, "keepdim": [int(bool(args.get("keepdim")))]}
    value = ctx.cast(_input(ctx, node, x, None), "float32", node)
    if index == 1:
        return ctx.add_plain(node, "float_mean", [value], ints=ints)
    return ctx.add_plain(node, "float_var", [value], ints=ints, floats={"correction": _correction(args)})


def reduce_converters() -> dict[Any, Converter]:
    """The converters of unquantized reductions, by aten op overload."""
    table: dict[Any, Converter] = {}
    for name, ir_op in (("sum", "float_sum"), ("mean", "float_mean"), ("amax", "float_amax"), ("amin", "float_amin"),
                        ("prod", "float_prod"), ("var", "float_var"), ("any", "float_any")):
        for overload in ("default", "dim_IntList", "dim", "dims", "dim_int", "correction"):
            op = getattr(getattr(_aten, name), overload, None)
            if op is not None:
                table[op] = _reduction(ir_op)
    table.update({
        _aten.argmax.default: _arg_reduction("float_argmax"),
        _aten.argmin.default: _arg_reduction("float_argmin"),
        _aten.cumsum.default: convert_cumsum,
        _aten._log_softmax.default: convert_log_softmax,
    })
    return table


# Ops with several outputs whose parts operator.getitem takes: converter of (parent, index, getitem node).
REDUCE_TUPLE_OUTPUTS = {_aten.max.dim: min_max_dim, _aten.min.dim: min_max_dim, _aten.var_mean.dim: var_mean_part,
                        _aten.var_mean.correction: var_mean_part}

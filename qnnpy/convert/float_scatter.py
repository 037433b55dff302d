"""Converters of aten ops that write values at computed positions, or order them: scatters, index_put and the
slice / select scatters of functionalized in-place writes, sort and topk (the float ops of
``src/ops/float_scatter.cpp``)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch
import torch.fx

from qnnpy.convert.context import ConversionContext
from qnnpy.convert.float_args import axis, bind, operands, rank_of, refuse

Converter = Callable[[ConversionContext, torch.fx.Node], int]
_aten = torch.ops.aten
_REDUCTIONS = {"sum": 1, "prod": 2, "mean": 3, "amax": 4, "amin": 5}


def _scatter(ctx: ConversionContext, node: torch.fx.Node, x: Any, dim: int, index: Any, src: int, reduce: int,
             include_self: bool) -> int:
    return ctx.add_plain(node, "float_scatter", [ctx.value(x, node), ctx.value(index, node), src],
                         ints={"axis": [axis(dim, rank_of(ctx, x))], "reduce": [reduce],
                               "include_self": [int(include_self)]})


def convert_scatter(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """scatter(x, dim, index, src) and scatter(x, dim, index, value): each index element writes its src element
    (or the value) at its position of a copy of x."""
    args = bind(node)
    dtype = ctx.plain_dtype(ctx.example(node).dtype, node)
    if "src" in args:
        src = operands(ctx, node, [args["src"]], dtype)[0]
    else:
        src = ctx.add_plain(node, "float_expand", [ctx.scalar(args["value"], dtype, node)], suffix="_src",
                            ints={"shape": list(ctx.example(args["index"]).shape)},
                            shape=list(ctx.example(args["index"]).shape))
    return _scatter(ctx, node, args["self"], args["dim"], args["index"], src, 0, True)


def convert_scatter_add(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """scatter_add(x, dim, index, src): the src elements added at their positions."""
    args = bind(node)
    src = operands(ctx, node, [args["src"]], ctx.plain_dtype(ctx.example(node).dtype, node))[0]
    return _scatter(ctx, node, args["self"], args["dim"], args["index"], src, _REDUCTIONS["sum"], True)


def convert_scatter_reduce(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """scatter_reduce(x, dim, index, src, reduce, include_self): sum, prod, mean, amax or amin."""
    args = bind(node)
    if args["reduce"] not in _REDUCTIONS:
        raise refuse(ctx, node, f"scatter_reduce with reduce={args['reduce']!r} is not supported")
    if args["reduce"] == "mean" and not args["include_self"]:
        raise refuse(ctx, node, "a mean scatter_reduce with include_self=False is not supported")
    src = operands(ctx, node, [args["src"]], ctx.plain_dtype(ctx.example(node).dtype, node))[0]
    return _scatter(ctx, node, args["self"], args["dim"], args["index"], src, _REDUCTIONS[args["reduce"]],
                    bool(args["include_self"]))


def _index_put(ctx: ConversionContext, node: torch.fx.Node, x: Any, index_ids: list[int], dims: list[int],
               values: int, accumulate: bool) -> int:
    if dims != list(range(dims[0], dims[0] + len(dims))):
        raise refuse(ctx, node, f"index tensors on the non-consecutive axes {dims} are not supported")
    return ctx.add_plain(node, "float_index_put", [ctx.value(x, node), values, *index_ids],
                         ints={"axes": dims, "accumulate": [int(accumulate)]})


def convert_index_put(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """index_put(x, indices, values, accumulate): x[indices] = values (or +=). Integer index tensors (None: the
    whole axis) on consecutive axes are ``float_index_put``; one bool mask of x's own shape is a ``float_where``."""
    args = bind(node)
    x, indices = args["self"], args["indices"]
    dtype = ctx.plain_dtype(ctx.example(node).dtype, node)
    values = operands(ctx, node, [args["values"]], dtype)[0]
    used = [(d, i) for d, i in enumerate(indices) if i is not None]
    masks = [i for _, i in used if ctx.example(i).dtype == torch.bool]
    if masks:
        mask = masks[0]
        if len(used) != 1 or list(ctx.example(mask).shape) != list(ctx.example(x).shape) or args["accumulate"]:
            raise refuse(ctx, node, "a bool-mask index_put other than x[mask] = values with a mask of x's shape writes "
                                    "a data-dependent count of values")
        return ctx.add_plain(node, "float_where", [ctx.value(mask, node), values, ctx.value(x, node)])
    return _index_put(ctx, node, x, [ctx.value(i, node) for _, i in used], [d for d, _ in used], values,
                      bool(args["accumulate"]))


def _positions(ctx: ConversionContext, node: torch.fx.Node, positions: list[int]) -> int:
    """Constant int64 indices (the positions a slice or select writes)."""
    return ctx.graph.add_node("float_constant", [], ctx.source(node), f"{ctx.source(node)}_positions", "int64",
                              params={"value": np.array(positions, np.int64)})


def convert_slice_scatter(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """slice_scatter(x, src, dim, start, end, step): src written over the slice (an in-place slice assignment,
    functionalized): ``float_index_put`` at the slice's positions."""
    args = bind(node)
    x = args["self"]
    dim = axis(args["dim"], rank_of(ctx, x))
    size = ctx.example(x).shape[dim]
    positions = list(range(*slice(args["start"], args["end"], int(args["step"])).indices(size)))
    src = operands(ctx, node, [args["src"]], ctx.plain_dtype(ctx.example(node).dtype, node))[0]
    return _index_put(ctx, node, x, [_positions(ctx, node, positions)], [dim], src, False)


def convert_select_scatter(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """select_scatter(x, src, dim, index): src written over x[..., index, ...] (``float_index_put``)."""
    args = bind(node)
    x = args["self"]
    shape = list(ctx.example(x).shape)
    dim = axis(args["dim"], len(shape))
    src = operands(ctx, node, [args["src"]], ctx.plain_dtype(ctx.example(node).dtype, node))[0]
    with_axis = [1 if d == dim else n for d, n in enumerate(shape)]
    src = ctx.add_plain(node, "float_reshape", [src], ints={"shape": with_axis}, suffix="_src", shape=with_axis)
    return _index_put(ctx, node, x, [_positions(ctx, node, [int(args["index"]) % shape[dim]])], [dim], src, False)


def _topk(ctx: ConversionContext, node: torch.fx.Node, x: Any, k: int, dim: int, largest: bool, part: int) -> int:
    value = ctx.value(x, node)
    if ctx.graph.value(value)["dtype"] == "bool":
        value = ctx.cast(value, "int64", node)
    return ctx.add_plain(node, "float_topk", [value], ints={"axis": [axis(dim, rank_of(ctx, x))], "k": [int(k)],
                                                            "largest": [int(largest)], "indices": [part]})


def sort_output(ctx: ConversionContext, parent: torch.fx.Node, index: int, node: torch.fx.Node) -> int:
    """Output ``index`` of sort(x, dim, descending) (or sort.stable): the sorted values (0) or their positions (1),
    equal values in their order along the axis."""
    args = bind(parent)
    x = args["self"]
    dim = args["dim"]
    return _topk(ctx, node, x, ctx.example(x).shape[axis(dim, rank_of(ctx, x))], dim, bool(args["descending"]), index)


def topk_output(ctx: ConversionContext, parent: torch.fx.Node, index: int, node: torch.fx.Node) -> int:
    """Output ``index`` of topk(x, k, dim, largest, sorted): the k values (0) or their positions (1), in order."""
    args = bind(parent)
    return _topk(ctx, node, args["self"], args["k"], args["dim"], bool(args["largest"]), index)


def scatter_converters() -> dict[Any, Converter]:
    """The converters of scatters and index writes, by aten op overload."""
    return {
        _aten.scatter.src: convert_scatter,
        _aten.scatter.value: convert_scatter,
        _aten.scatter_add.default: convert_scatter_add,
        _aten.scatter_reduce.two: convert_scatter_reduce,
        _aten.index_put.default: convert_index_put,
        _aten.slice_scatter.default: convert_slice_scatter,
        _aten.select_scatter.default: convert_select_scatter,
    }


# Ops with several outputs whose parts operator.getitem takes: converter of (parent, index, getitem node).
SCATTER_TUPLE_OUTPUTS = {_aten.sort.default: sort_output, _aten.sort.stable: sort_output, _aten.topk.default: topk_output}

"""Converters of aten ops that move or select the values of unquantized tensors (any dtype: float32, int64,
int32, bool), the float ops of ``src/ops/float_movement.cpp``."""
from __future__ import annotations

from typing import Any, Callable

import torch
import torch.fx

from qnnpy.convert.context import ConversionContext
from qnnpy.convert.float_args import axes, axis, bind, operands, promoted, rank_of, refuse

Converter = Callable[[ConversionContext, torch.fx.Node], int]
_aten = torch.ops.aten
_PAD_MODES = {"constant": 0, "reflect": 1, "replicate": 2, "circular": 3}


def _same_as_input(ctx: ConversionContext, node: torch.fx.Node, x: Any) -> bool:
    return isinstance(x, torch.fx.Node) and list(ctx.example(x).shape) == list(ctx.example(node).shape)


def convert_reshape(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """view / reshape / flatten / unflatten / squeeze / unsqueeze: ``float_reshape`` to the example output's
    shape (the identity when the shape does not change)."""
    x = node.args[0]
    if _same_as_input(ctx, node, x):
        return ctx.value(x, node)
    return ctx.add_plain(node, "float_reshape", [ctx.value(x, node)], ints={"shape": list(ctx.example(node).shape)})


def permutation(ctx: ConversionContext, node: torch.fx.Node) -> list[int]:
    """The permutation of permute(x, dims), transpose(x, dim0, dim1) or t(x) (aten, torch or Tensor method)."""
    rank = rank_of(ctx, node.args[0])
    target = getattr(node.target, "_opname", node.target)
    if target in ("transpose", torch.transpose) or (node.op == "call_method" and node.target == "transpose"):
        perm = list(range(rank))
        a, b = (axis(d, rank) for d in node.args[1:3])
        perm[a], perm[b] = perm[b], perm[a]
        return perm
    if target == "t":
        return list(reversed(range(rank)))
    dims = node.args[1] if len(node.args) == 2 and isinstance(node.args[1], (tuple, list)) else node.args[1:]
    return [axis(d, rank) for d in (dims or node.kwargs.get("dims", ()))]


def convert_permute(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """permute / transpose / t of an unquantized tensor: ``float_permute``."""
    perm = permutation(ctx, node)
    if perm == sorted(perm):
        return ctx.value(node.args[0], node)
    return ctx.add_plain(node, "float_permute", [ctx.value(node.args[0], node)], ints={"perm": perm})


def convert_expand(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """expand (broadcast_to): ``float_expand`` to the example output's shape."""
    x = node.args[0]
    if _same_as_input(ctx, node, x):
        return ctx.value(x, node)
    return ctx.add_plain(node, "float_expand", [ctx.value(x, node)], ints={"shape": list(ctx.example(node).shape)})


def convert_slice(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """slice(x, dim, start, end, step): ``float_slice`` of the range PyTorch takes (None and negative bounds
    resolved, clamped to the axis); the whole axis with step 1 is the identity."""
    args = bind(node)
    x = args["self"]
    shape = ctx.example(x).shape
    dim = axis(args["dim"], len(shape))
    size, step = shape[dim], int(args["step"])
    start, _, _ = slice(args["start"], args["end"], step).indices(size)
    end = start + (ctx.example(node).shape[dim] - 1) * step + 1
    if ctx.example(node).shape[dim] == 0:
        raise refuse(ctx, node, "the slice is empty (qnnpy's tensors have no empty axes)")
    if start == 0 and end == size and step == 1:
        return ctx.value(x, node)
    return ctx.add_plain(node, "float_slice", [ctx.value(x, node)],
                         ints={"axis": [dim], "begin": [start], "end": [end], "step": [step]})


def convert_select(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """select(x, dim, index): ``float_slice`` of [index, index + 1), then ``float_reshape`` dropping the axis."""
    x, dim, index = node.args[:3]
    shape = list(ctx.example(x).shape)
    dim = axis(dim, len(shape))
    index = int(index) % shape[dim]
    sliced_shape = [1 if d == dim else n for d, n in enumerate(shape)]
    sliced = ctx.add_plain(node, "float_slice", [ctx.value(x, node)], suffix="_slice", shape=sliced_shape,
                           ints={"axis": [dim], "begin": [index], "end": [index + 1], "step": [1]})
    return ctx.add_plain(node, "float_reshape", [sliced], ints={"shape": list(ctx.example(node).shape)})


def convert_cat(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """cat of unquantized tensors along dim, each cast to the output's dtype (PyTorch's promotion)."""
    args = bind(node)
    tensors = [t for t in args["tensors"] if ctx.example(t).numel()]  # PyTorch skips empty tensors
    dtype = ctx.plain_dtype(ctx.example(node).dtype, node)
    if len(tensors) == 1:
        return operands(ctx, node, tensors, dtype)[0]
    return ctx.add_plain(node, "float_cat", operands(ctx, node, tensors, dtype),
                         ints={"axis": [axis(args["dim"], ctx.example(node).dim())]})


def convert_flip(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """flip(x, dims): ``float_flip``."""
    x, dims = node.args[:2]
    return ctx.add_plain(node, "float_flip", [ctx.value(x, node)], ints={"axes": axes(dims, rank_of(ctx, x))})


def _pad(ctx: ConversionContext, node: torch.fx.Node, x: Any, pad: list[int], mode: str, value: float) -> int:
    """PyTorch's pad list (last axis first: left, right, then the axis before...) as ``float_pad``'s before /
    after per axis."""
    if mode not in _PAD_MODES:
        raise refuse(ctx, node, f"padding mode {mode!r} is not supported")
    rank = rank_of(ctx, x)
    pads = [0] * (2 * rank)
    for i in range(len(pad) // 2):
        pads[2 * (rank - 1 - i)], pads[2 * (rank - 1 - i) + 1] = int(pad[2 * i]), int(pad[2 * i + 1])
    if any(p < 0 for p in pads):
        raise refuse(ctx, node, f"negative padding {list(pad)} (cropping) is not supported")
    if not any(pads):
        return ctx.value(x, node)
    return ctx.add_plain(node, "float_pad", [ctx.value(x, node)], ints={"pads": pads, "mode": [_PAD_MODES[mode]]},
                         floats={"value": float(value or 0.0)})


def convert_constant_pad_nd(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """constant_pad_nd(x, pad, value)."""
    args = bind(node)
    return _pad(ctx, node, args["self"], args["pad"], "constant", args["value"])


def convert_pad(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """pad(x, pad, mode, value): constant, reflect, replicate or circular."""
    args = bind(node)
    return _pad(ctx, node, args["self"], args["pad"], args["mode"], args["value"])


def _mode_pad(mode: str) -> Converter:
    def convert(ctx: ConversionContext, node: torch.fx.Node) -> int:
        return _pad(ctx, node, node.args[0], node.args[1], mode, 0.0)
    convert.__doc__ = f"{mode} padding (``reflection_pad`` / ``replication_pad``): ``float_pad``."
    return convert


def convert_repeat(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """repeat(x, repeats): ``float_repeat``."""
    return ctx.add_plain(node, "float_repeat", [ctx.value(node.args[0], node)],
                         ints={"repeats": [int(r) for r in node.args[1]]})


def _take(ctx: ConversionContext, node: torch.fx.Node, x: Any, dim: int, index: Any) -> int:
    indices = operands(ctx, node, [index], promoted(ctx, node, index))[0]
    if ctx.graph.value(indices)["dtype"] not in ("int64", "int32"):
        raise refuse(ctx, node, f"indices of dtype {ctx.graph.value(indices)['dtype']} are not supported "
                                "(integer indices only; a bool mask selects a data-dependent number of values)")
    return ctx.add_plain(node, "float_take", [ctx.value(x, node), indices], ints={"axis": [dim]})


def convert_index_select(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """index_select(x, dim, index): ``float_take``."""
    x, dim, index = node.args[:3]
    return _take(ctx, node, x, axis(dim, rank_of(ctx, x)), index)


def convert_gather(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """gather(x, dim, index): ``float_gather``."""
    args = bind(node)
    return ctx.add_plain(node, "float_gather", [ctx.value(args["self"], node), ctx.value(args["index"], node)],
                         ints={"axis": [axis(args["dim"], rank_of(ctx, args["self"]))]})


def convert_index(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """index.Tensor(x, indices): advanced indexing with integer index tensors (None: the whole axis). One index
    tensor is ``float_take``; several on consecutive axes ``float_index``."""
    x, indices = node.args[:2]
    used = [(d, i) for d, i in enumerate(indices) if i is not None]
    if not used:
        return ctx.value(x, node)
    if any(ctx.example(i).dtype == torch.bool for _, i in used):
        raise refuse(ctx, node, "indexing with a bool mask gives a data-dependent number of values")
    if len(used) == 1:
        return _take(ctx, node, x, used[0][0], used[0][1])
    dims = [d for d, _ in used]
    if dims != list(range(dims[0], dims[0] + len(dims))):
        raise refuse(ctx, node, f"index tensors on the non-consecutive axes {dims} are not supported")
    ids = [ctx.value(i, node) for _, i in used]
    return ctx.add_plain(node, "float_index", [ctx.value(x, node), *ids], ints={"axes": dims})


def movement_converters() -> dict[Any, Converter]:
    """The converters of unquantized data movement, by aten op overload."""
    table: dict[Any, Converter] = {}
    for op in (_aten.view.default, _aten._unsafe_view.default, _aten.reshape.default, _aten.flatten.using_ints,
               _aten.unflatten.int, _aten.squeeze.default, _aten.squeeze.dim, _aten.squeeze.dims,
               _aten.unsqueeze.default):
        table[op] = convert_reshape
    for op in (_aten.permute.default, _aten.transpose.int, _aten.t.default):
        table[op] = convert_permute
    table.update({
        _aten.expand.default: convert_expand,
        _aten.slice.Tensor: convert_slice,
        _aten.select.int: convert_select,
        _aten.cat.default: convert_cat,
        _aten.flip.default: convert_flip,
        _aten.constant_pad_nd.default: convert_constant_pad_nd,
        _aten.pad.default: convert_pad,
        _aten.reflection_pad1d.default: _mode_pad("reflect"),
        _aten.reflection_pad2d.default: _mode_pad("reflect"),
        _aten.reflection_pad3d.default: _mode_pad("reflect"),
        _aten.replication_pad1d.default: _mode_pad("replicate"),
        _aten.replication_pad2d.default: _mode_pad("replicate"),
        _aten.replication_pad3d.default: _mode_pad("replicate"),
        _aten.repeat.default: convert_repeat,
        _aten.index_select.default: convert_index_select,
        _aten.gather.default: convert_gather,
        _aten.index.Tensor: convert_index,
    })
    return table

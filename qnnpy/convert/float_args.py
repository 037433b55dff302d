"""What the float-op converters share: an aten node's arguments by schema name, operands cast to the dtype an
op computes in (PyTorch's type promotion), axes and shapes made non-negative."""
from __future__ import annotations

from typing import Any

import torch
import torch.fx

from qnnpy.convert.context import ConversionContext, op_name
from qnnpy.errors import ConversionError


def bind(node: torch.fx.Node) -> dict[str, Any]:
    """The arguments of an aten op node by their schema names, defaults filled in."""
    bound = {}
    for i, a in enumerate(node.target._schema.arguments):
        if i < len(node.args) and not a.kwarg_only:
            bound[a.name] = node.args[i]
        elif a.name in node.kwargs:
            bound[a.name] = node.kwargs[a.name]
        else:
            bound[a.name] = a.default_value if a.has_default_value() else None
    return bound


def example_of(ctx: ConversionContext, arg: Any) -> Any:
    """A node's example value, or a Python number as it is."""
    return ctx.example(arg) if isinstance(arg, torch.fx.Node) else arg


def promoted(ctx: ConversionContext, node: torch.fx.Node, first: Any, second: Any = None) -> str:
    """The IR dtype PyTorch computes an op of ``first`` (and ``second``) in: torch.result_type of the
    tensors' example values and the numbers."""
    a = example_of(ctx, first)
    if second is None:
        dtype = a.dtype if isinstance(a, torch.Tensor) else torch.tensor(a).dtype
    else:
        dtype = torch.result_type(a, example_of(ctx, second))
    return ctx.plain_dtype(dtype, node)


def operands(ctx: ConversionContext, node: torch.fx.Node, args: list[Any], dtype: str) -> list[int]:
    """Value ids of tensor arguments (constants included) cast to ``dtype``; numbers as scalar constants."""
    ids = []
    for a in args:
        if isinstance(a, torch.fx.Node):
            ids.append(ctx.cast(ctx.value(a, node), dtype, node))
        elif isinstance(a, (bool, int, float)):
            ids.append(ctx.scalar(a, dtype, node))
        else:
            raise ConversionError(f"{ctx.source(node)} ({op_name(ctx.captured.module, node)}): operand {a!r:.60} "
                                  "is neither a tensor nor a number")
    return ids


def rank_of(ctx: ConversionContext, arg: Any) -> int:
    return ctx.example(arg).dim()


def axis(value: int, rank: int) -> int:
    """A possibly negative axis made non-negative (a rank-0 tensor has the one axis 0, as PyTorch allows)."""
    return int(value) % max(rank, 1)


def axes(value: Any, rank: int) -> list[int]:
    """A dim argument (None, an int or a list) as sorted non-negative axes; None and [] mean all."""
    if value is None:
        return []
    if isinstance(value, int):
        value = [value]
    return sorted(axis(d, rank) for d in value)


def refuse(ctx: ConversionContext, node: torch.fx.Node, why: str) -> ConversionError:
    """The error for an op form qnnpy does not convert, naming the node, the op and why."""
    return ConversionError(f"{ctx.source(node)} ({op_name(ctx.captured.module, node)}): {why}")


def constant_tensor(ctx: ConversionContext, node: torch.fx.Node, arg: Any, what: str) -> torch.Tensor | None:
    """The value of an argument that must be a constant (a weight, a norm's statistics), None for None."""
    if arg is None:
        return None
    if not (isinstance(arg, torch.fx.Node) and arg.op == "get_attr"):
        raise refuse(ctx, node, f"its {what} is computed from the inputs; only a constant {what} is supported")
    value = ctx.example(arg)
    if value.is_quantized:
        raise refuse(ctx, node, f"its {what} is quantized outside a quantized island")
    return value.detach().float()


def per_axis(value: Any, count: int, default: list[int] | None = None) -> list[int]:
    """An int, or a list of one or ``count`` ints, as ``count`` ints (one per spatial axis); None or an empty list is
    ``default``."""
    if value is None or (isinstance(value, (tuple, list)) and not value):
        if default is None:
            raise ValueError(f"no value for {count} axes")
        return list(default)
    values = [int(v) for v in value] if isinstance(value, (tuple, list)) else [int(value)]
    return values * count if len(values) == 1 else values


def max_pool3d_as_2d(kernel_size: Any, stride: Any, padding: Any, dilation: Any,
                     ceil_mode: bool) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """A 3-D max pool's attributes as two 2-D max pools: over (H, W) of (N, C * D, H, W), then over D of
    (N, C, D, Ho * Wo) with a window of width 1 along the second axis (the max of a 3-D window is the max over D
    of its (H, W) windows' maxima)."""
    kernel = per_axis(kernel_size, 3)
    stride = per_axis(stride, 3, kernel)
    padding, dilation = per_axis(padding, 3), per_axis(dilation, 3)
    ceil = [int(bool(ceil_mode))]
    planes = {"kernel": kernel[1:], "stride": stride[1:], "padding": padding[1:], "dilation": dilation[1:],
              "ceil_mode": ceil}
    depth = {"kernel": [kernel[0], 1], "stride": [stride[0], 1], "padding": [padding[0], 0],
             "dilation": [dilation[0], 1], "ceil_mode": ceil}
    return planes, depth

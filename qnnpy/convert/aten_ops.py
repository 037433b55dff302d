"""Converters of aten ops anchoring a quantized island of a PT2E graph (``qnnpy.capture.pt2e_capture``): the
integer forms the eager / FX converters do not already cover. The float forms of aten ops are in
``qnnpy.convert.float_aten``; :class:`AtenForm` in the converter table picks between the two."""
from __future__ import annotations

import struct
from typing import Any

import numpy as np
import torch
import torch.fx

from qnnpy.convert.context import ConversionContext, op_name
from qnnpy.convert.op_form import fused_relu
from qnnpy.convert.torch_weight_reader import QuantizedWeight, quantized_weight
from qnnpy.errors import ConversionError
from qnnpy.quantized_types import is_quantized

FLOAT32_MAX = struct.unpack("f", struct.pack("I", 0x7F7FFFFF))[0]


def _arg(node: torch.fx.Node, index: int, name: str, default: Any = None) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _pair(v: Any) -> list[int]:
    return [int(x) for x in v] if isinstance(v, (tuple, list)) else [int(v), int(v)]


def _weight(ctx: ConversionContext, node: torch.fx.Node) -> QuantizedWeight:
    """The int8 weight of a conv / linear: a quantized tensor the capture built from the int8 constant."""
    w = ctx.example(node.args[1])
    if not is_quantized(w):
        raise ConversionError(f"{ctx.source(node)}: the weight of {op_name(ctx.captured.module, node)} is not quantized "
                              "(a float weight is not supported; quantize it with the quantizer's weight spec)")
    return quantized_weight(w, ctx.source(node))


def _bias(ctx: ConversionContext, node: torch.fx.Node, index: int) -> np.ndarray | None:
    b = ctx.example(_arg(node, index, "bias"))
    if b is None:
        return None
    if not isinstance(b, torch.Tensor) or not b.is_floating_point():
        raise ConversionError(f"{ctx.source(node)}: bias must be a float tensor, got {b!r:.60}")
    return b.detach().float().contiguous().numpy()


def _conv_attributes(ctx: ConversionContext, node: torch.fx.Node) -> dict[str, list[int]]:
    """aten.conv2d(input, weight, bias, stride=1, padding=0, dilation=1, groups=1); padding must be numeric."""
    padding = _arg(node, 4, "padding", 0)
    if isinstance(padding, str):
        raise ConversionError(f"{ctx.source(node)}: conv2d padding={padding!r} is not supported (give the numbers)")
    return {"stride": _pair(_arg(node, 3, "stride", 1)), "padding": _pair(padding),
            "dilation": _pair(_arg(node, 5, "dilation", 1)), "groups": [int(_arg(node, 6, "groups", 1))]}


def convert_aten_conv2d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``aten.conv2d`` anchoring a quantized island: int8 weight as the constant holds it, the float
    bias quantized to int32 with scale s_in * s_w (saturations counted), a following ReLU fused."""
    where = ctx.source(node)
    w = _weight(ctx, node)
    a = _conv_attributes(ctx, node)
    config = np.array([2, *a["stride"], *a["padding"], *a["dilation"], 0, 0, *a["groups"], 0], dtype=np.int64)
    return ctx.graph.add_conv2d(ctx.value(node.args[0], node), where, where, 3, config, w.data, w.scale,
                                w.zero_point, w.axis, _bias(ctx, node, 2), fused_relu(node), **ctx.quantized_output(node))


def convert_aten_linear(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``aten.linear`` anchoring a quantized island: int8 weight, int32 bias (scale s_in * s_w), fused ReLU."""
    where = ctx.source(node)
    w = _weight(ctx, node)
    return ctx.graph.add_linear(ctx.value(node.args[0], node), where, where, w.data, w.scale, w.zero_point, w.axis,
                                _bias(ctx, node, 2), fused_relu(node), **ctx.quantized_output(node))


def convert_aten_add(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``aten.add.Tensor`` of two quantized tensors (alpha 1), requantized; a following ReLU fused."""
    if float(_arg(node, 2, "alpha", 1)) != 1.0:
        raise ConversionError(f"{ctx.source(node)}: add with alpha={_arg(node, 2, 'alpha')} is not supported")
    return ctx.add(node, "add", list(node.args[:2]), ints={"relu": [int(fused_relu(node))]})


def convert_aten_relu(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``aten.relu`` in an island of its own: ``relu`` when its output keeps the input's qparams, else a
    requantizing ``clamp`` to [0, max float]."""
    keys = ("out_dtype", "out_scale", "out_zero_point")
    x, y = ctx.quantized_output(node.args[0]), ctx.quantized_output(node)
    if all(x[k] == y[k] for k in keys):
        return ctx.add(node, "relu", [node.args[0]])
    return ctx.add(node, "clamp", [node.args[0]], floats={"min": 0.0, "max": FLOAT32_MAX})

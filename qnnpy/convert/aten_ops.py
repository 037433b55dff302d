"""Converters of the aten ops of PT2E graphs (``qnnpy.capture.pt2e_capture``).

An aten op is either the anchor of a quantized island (its example output is a quantized
tensor: the converter adds the canonical integer op) or an op the quantizer left in float
(a float example output: the converter adds an op of the float family, ``float_*``).
:class:`AtenForm` in the converter table picks between the two; the functions here are
the forms the eager / FX converters do not already cover.
"""
from __future__ import annotations

import struct
from typing import Any

import numpy as np
import torch
import torch.fx

from qnnpy.convert.context import ConversionContext, op_name
from qnnpy.convert.torch_weight_reader import QuantizedWeight, quantized_weight
from qnnpy.errors import ConversionError

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
    if not (isinstance(w, torch.Tensor) and w.is_quantized):
        raise ConversionError(f"{ctx.source(node)}: the weight of {op_name(ctx.captured.module, node)} is not quantized "
                              "(a float weight is not supported; quantize it with the quantizer's weight spec)")
    return quantized_weight(w, ctx.source(node))


def _float_layer_weight(ctx: ConversionContext, node: torch.fx.Node) -> QuantizedWeight:
    """The weight of a float conv / linear: int8 with its qparams, or float32 (empty qparams) when the
    quantizer left the layer unannotated."""
    w = ctx.example(node.args[1])
    if isinstance(w, torch.Tensor) and not w.is_quantized and w.dtype == torch.float32:
        return QuantizedWeight(w.detach().contiguous().numpy(), np.zeros(0, np.float32), np.zeros(0, np.int64), -1)
    return _weight(ctx, node)


def _bias(ctx: ConversionContext, node: torch.fx.Node, index: int) -> np.ndarray | None:
    b = ctx.example(_arg(node, index, "bias"))
    if b is None:
        return None
    if not isinstance(b, torch.Tensor) or not b.is_floating_point():
        raise ConversionError(f"{ctx.source(node)}: bias must be a float tensor, got {b!r:.60}")
    return b.detach().float().contiguous().numpy()


def _float_output(ctx: ConversionContext, node: torch.fx.Node) -> list[int]:
    return list(ctx.example(node).shape)


def _fused_relu(node: torch.fx.Node) -> bool:
    return bool(node.meta.get("pt2e_fused_relu", False))


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
                                w.zero_point, w.axis, _bias(ctx, node, 2), _fused_relu(node), **ctx.quantized_output(node))


def convert_aten_linear(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``aten.linear`` anchoring a quantized island: int8 weight, int32 bias (scale s_in * s_w), fused ReLU."""
    where = ctx.source(node)
    w = _weight(ctx, node)
    return ctx.graph.add_linear(ctx.value(node.args[0], node), where, where, w.data, w.scale, w.zero_point, w.axis,
                                _bias(ctx, node, 2), _fused_relu(node), **ctx.quantized_output(node))


def convert_aten_add(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``aten.add.Tensor`` of two quantized tensors (alpha 1), requantized; a following ReLU fused."""
    if float(_arg(node, 2, "alpha", 1)) != 1.0:
        raise ConversionError(f"{ctx.source(node)}: add with alpha={_arg(node, 2, 'alpha')} is not supported")
    return ctx.add(node, "add", list(node.args[:2]), ints={"relu": [int(_fused_relu(node))]})


def convert_aten_relu(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``aten.relu`` in an island of its own: ``relu`` when its output keeps the input's qparams, else a
    requantizing ``clamp`` to [0, max float]."""
    keys = ("out_dtype", "out_scale", "out_zero_point")
    x, y = ctx.quantized_output(node.args[0]), ctx.quantized_output(node)
    if all(x[k] == y[k] for k in keys):
        return ctx.add(node, "relu", [node.args[0]])
    return ctx.add(node, "clamp", [node.args[0]], floats={"min": 0.0, "max": FLOAT32_MAX})


# --- float ops: what the quantizer left in float ----------------------------------

def _add_float(ctx: ConversionContext, node: torch.fx.Node, op: str, inputs: list[Any],
               ints: dict[str, list[int]] | None = None, floats: dict[str, float] | None = None) -> int:
    return ctx.graph.add_node(op, [ctx.value(a, node) for a in inputs], ctx.source(node), ctx.source(node), "float32",
                              ints=ints or {}, floats=floats or {}, expected_shape=_float_output(ctx, node))


def float_conv2d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """A conv2d in float (e.g. X86's conv whose output an add consumes before any quantize)."""
    w = _float_layer_weight(ctx, node)
    where = ctx.source(node)
    return ctx.graph.add_float_layer("float_conv2d", ctx.value(node.args[0], node), where, where, w.data, w.scale,
                                     w.zero_point, w.axis, _bias(ctx, node, 2), _conv_attributes(ctx, node),
                                     _float_output(ctx, node))


def float_linear(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """A linear in float (a float head: its output is not quantized)."""
    w = _float_layer_weight(ctx, node)
    where = ctx.source(node)
    return ctx.graph.add_float_layer("float_linear", ctx.value(node.args[0], node), where, where, w.data, w.scale,
                                     w.zero_point, w.axis, _bias(ctx, node, 2), {}, _float_output(ctx, node))


def float_relu(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """relu of a float tensor."""
    return _add_float(ctx, node, "float_relu", [node.args[0]])


def float_hardtanh(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """hardtanh (relu6) of a float tensor: clamp to [min_val, max_val]."""
    return _add_float(ctx, node, "float_clamp", [node.args[0]],
                      floats={"min": float(_arg(node, 1, "min_val", -1.0)), "max": float(_arg(node, 2, "max_val", 1.0))})


def float_hardsigmoid(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """hardsigmoid of a float tensor."""
    return _add_float(ctx, node, "float_hardsigmoid", [node.args[0]])


def float_hardswish(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """hardswish of a float tensor."""
    return _add_float(ctx, node, "float_hardswish", [node.args[0]])


def float_adaptive_avg_pool2d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """adaptive_avg_pool2d of a float tensor; the output size is read from the example output."""
    return _add_float(ctx, node, "float_adaptive_avg_pool2d", [node.args[0]],
                      ints={"output_size": _float_output(ctx, node)[2:]})


def float_mean(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``aten.mean.dim`` over H, W of a float 4-D tensor (ShuffleNetV2's global pool left in float): the
    adaptive average pool to 1x1, then a reshape to (N, C) without keepdim."""
    x = ctx.example(node.args[0])
    dims = sorted(int(d) % x.dim() for d in node.args[1]) if len(node.args) > 1 else []
    if x.dim() != 4 or dims != [2, 3]:
        raise ConversionError(f"{ctx.source(node)}: float mean over {dims} of a rank-{x.dim()} tensor is not supported "
                              "(only over [2, 3] of a 4-D tensor)")
    where = ctx.source(node)
    pooled_shape = [x.shape[0], x.shape[1], 1, 1]
    pooled = ctx.graph.add_node("float_adaptive_avg_pool2d", [ctx.value(node.args[0], node)], where, f"{where}_pool",
                                "float32", ints={"output_size": [1, 1]}, floats={}, expected_shape=pooled_shape)
    shape = list(ctx.example(node).shape)
    if shape == pooled_shape:
        return pooled
    return ctx.graph.add_node("float_reshape", [pooled], where, where, "float32", ints={"shape": shape}, floats={},
                              expected_shape=shape)


def float_cat(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``aten.cat`` of float tensors (one the quantizer left in float: ShuffleNetV2 joins a half of its float
    channel shuffle with a branch's dequantized output)."""
    tensors = list(_arg(node, 0, "tensors"))
    rank = ctx.example(node).dim()
    return _add_float(ctx, node, "float_cat", tensors, ints={"axis": [int(_arg(node, 1, "dim", 0)) % rank]})


def float_reshape(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """flatten / view / reshape of a float tensor: the shape is read from the example output."""
    return _add_float(ctx, node, "float_reshape", [node.args[0]], ints={"shape": _float_output(ctx, node)})

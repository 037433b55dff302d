"""One converter per PyTorch op, and the table that maps ops to them.

A converter reads the op's attributes and example values and adds IR nodes
through the context; it returns the graph value id of the op's output.
"""
from __future__ import annotations

from typing import Any, Callable

import torch
import torch.ao.nn.intrinsic.quantized as nniq
import torch.ao.nn.quantized as nnq
import torch.fx
import torch.nn.functional as F
from torch import nn

from qnnpy.convert.context import ConversionContext
from qnnpy.convert.packed_params import conv_state, linear_state
from qnnpy.errors import ConversionError

Converter = Callable[[ConversionContext, torch.fx.Node], int]


def _pair(v: Any) -> list[int]:
    return [int(x) for x in v] if isinstance(v, (tuple, list)) else [int(v), int(v)]


def _arg(node: torch.fx.Node, index: int, name: str, default: Any = None) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


# --- quantize / dequantize -------------------------------------------------------

def convert_quantize(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """QuantStub after convert (``nnq.Quantize``) or ``torch.quantize_per_tensor``."""
    return ctx.add(node, "quantize", [node.args[0]])


def convert_dequantize(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """DeQuantStub after convert, ``torch.dequantize`` or ``Tensor.dequantize``."""
    return ctx.graph.add_node("dequantize", [ctx.value(node.args[0], node)], ctx.source(node), ctx.source(node), "float32")


# --- conv / linear ---------------------------------------------------------------

def _conv2d(ctx: ConversionContext, node: torch.fx.Node, relu: bool) -> int:
    return _conv2d_packed(ctx, node, ctx.module(node)._packed_params, relu)


def _conv2d_packed(ctx: ConversionContext, node: torch.fx.Node, packed: object, relu: bool) -> int:
    where = ctx.source(node)
    state = conv_state(packed, where)
    out = ctx.quantized_output(node)
    return ctx.graph.add_conv2d(
        ctx.value(node.args[0], node), where, where, state.version, state.config,
        state.weight.data, state.weight.scale, state.weight.zero_point, state.weight.axis,
        state.bias, relu, **out,
    )


def convert_conv2d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """Quantized ``Conv2d``: int8 weight, int32 bias, requantized output."""
    return _conv2d(ctx, node, relu=False)


def convert_conv_relu2d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """Quantized ``ConvReLU2d``: conv2d with the ReLU fused before requantization."""
    return _conv2d(ctx, node, relu=True)


def _linear(ctx: ConversionContext, node: torch.fx.Node, relu: bool) -> int:
    return _linear_packed(ctx, node, ctx.module(node)._packed_params._packed_params, relu)


def _linear_packed(ctx: ConversionContext, node: torch.fx.Node, packed: object, relu: bool) -> int:
    where = ctx.source(node)
    weight, bias = linear_state(packed, where)
    return ctx.graph.add_linear(
        ctx.value(node.args[0], node), where, where, weight.data, weight.scale, weight.zero_point,
        weight.axis, bias, relu, **ctx.quantized_output(node),
    )


def convert_linear(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """Quantized ``Linear``."""
    return _linear(ctx, node, relu=False)


def convert_linear_relu(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """Quantized ``LinearReLU``."""
    return _linear(ctx, node, relu=True)


def convert_quantized_conv2d_fn(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``torch.ops.quantized.conv2d(x, packed_params, scale, zero_point)`` (TorchScript, FX lowering)."""
    return _conv2d_packed(ctx, node, ctx.example(node.args[1]), relu=False)


def convert_quantized_conv2d_relu_fn(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``torch.ops.quantized.conv2d_relu(x, packed_params, scale, zero_point)``."""
    return _conv2d_packed(ctx, node, ctx.example(node.args[1]), relu=True)


def convert_quantized_linear_fn(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``torch.ops.quantized.linear(x, packed_params, scale, zero_point)``."""
    return _linear_packed(ctx, node, ctx.example(node.args[1]), relu=False)


def convert_quantized_linear_relu_fn(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``torch.ops.quantized.linear_relu(x, packed_params, scale, zero_point)``."""
    return _linear_packed(ctx, node, ctx.example(node.args[1]), relu=True)


# --- element-wise ----------------------------------------------------------------

def convert_add(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``torch.ops.quantized.add`` (QFunctional.add)."""
    return ctx.add(node, "add", list(node.args[:2]), ints={"relu": [0]})


def convert_add_relu(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``torch.ops.quantized.add_relu`` (QFunctional.add_relu)."""
    return ctx.add(node, "add", list(node.args[:2]), ints={"relu": [1]})


def convert_relu(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """ReLU on a quantized tensor: max(q, zero_point), qparams unchanged."""
    return ctx.add(node, "relu", [node.args[0]])


# --- pooling ---------------------------------------------------------------------

def _max_pool2d(ctx: ConversionContext, node: torch.fx.Node, kernel: Any, stride: Any, padding: Any,
                dilation: Any, ceil_mode: bool) -> int:
    ints = {
        "kernel": _pair(kernel),
        "stride": _pair(stride if stride not in (None, [], ()) else kernel),
        "padding": _pair(padding),
        "dilation": _pair(dilation),
        "ceil_mode": [int(bool(ceil_mode))],
    }
    return ctx.add(node, "max_pool2d", [node.args[0]], ints=ints)


def convert_max_pool2d_module(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nn.MaxPool2d`` on a quantized tensor."""
    m = ctx.module(node)
    if m.return_indices:
        raise ConversionError(f"{ctx.source(node)}: MaxPool2d with return_indices=True is not supported")
    return _max_pool2d(ctx, node, m.kernel_size, m.stride, m.padding, m.dilation, m.ceil_mode)


def convert_max_pool2d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``F.max_pool2d`` / ``torch.max_pool2d`` on a quantized tensor."""
    if _arg(node, 6, "return_indices", False):
        raise ConversionError(f"{ctx.source(node)}: max_pool2d with return_indices=True is not supported")
    return _max_pool2d(
        ctx, node, _arg(node, 1, "kernel_size"), _arg(node, 2, "stride"), _arg(node, 3, "padding", 0),
        _arg(node, 4, "dilation", 1), _arg(node, 5, "ceil_mode", False),
    )


def convert_adaptive_avg_pool2d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nn.AdaptiveAvgPool2d`` / ``F.adaptive_avg_pool2d``; the output size is read from the example output."""
    size = list(ctx.example(node).shape[2:])
    return ctx.add(node, "adaptive_avg_pool2d", [node.args[0]], ints={"output_size": size})


# --- shape -----------------------------------------------------------------------

def convert_reshape(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """flatten / reshape / view: the target shape is read from the example output."""
    return ctx.add(node, "reshape", [node.args[0]], ints={"shape": list(ctx.example(node).shape)})


def convert_identity(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """Identity, eval-mode Dropout, contiguous: the output is the input."""
    return ctx.value(node.args[0], node)


CONVERTERS: dict[Any, Converter] = {
    nnq.Quantize: convert_quantize,
    torch.quantize_per_tensor: convert_quantize,
    nnq.DeQuantize: convert_dequantize,
    torch.dequantize: convert_dequantize,
    "Tensor.dequantize": convert_dequantize,
    nnq.Conv2d: convert_conv2d,
    nniq.ConvReLU2d: convert_conv_relu2d,
    nnq.Linear: convert_linear,
    nniq.LinearReLU: convert_linear_relu,
    torch.ops.quantized.conv2d: convert_quantized_conv2d_fn,
    torch.ops.quantized.conv2d_relu: convert_quantized_conv2d_relu_fn,
    torch.ops.quantized.linear: convert_quantized_linear_fn,
    torch.ops.quantized.linear_relu: convert_quantized_linear_relu_fn,
    torch.ops.quantized.add: convert_add,
    torch.ops.quantized.add_relu: convert_add_relu,
    nn.ReLU: convert_relu,
    F.relu: convert_relu,
    torch.relu: convert_relu,
    "Tensor.relu": convert_relu,
    nn.MaxPool2d: convert_max_pool2d_module,
    F.max_pool2d: convert_max_pool2d,
    torch.max_pool2d: convert_max_pool2d,
    nn.AdaptiveAvgPool2d: convert_adaptive_avg_pool2d,
    F.adaptive_avg_pool2d: convert_adaptive_avg_pool2d,
    torch.flatten: convert_reshape,
    torch.reshape: convert_reshape,
    "Tensor.flatten": convert_reshape,
    "Tensor.reshape": convert_reshape,
    "Tensor.view": convert_reshape,
    nn.Identity: convert_identity,
    nn.Dropout: convert_identity,
    nnq.Dropout: convert_identity,
    "Tensor.contiguous": convert_identity,
}

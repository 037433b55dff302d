"""One converter per PyTorch op, and the table that maps each form of an op to it.

A converter reads the op's attributes and example values and adds IR nodes
through the context; it returns the graph value id of the op's output. One op
often has several PyTorch forms (a module, its fused-ReLU module, the
``torch.ops.quantized`` function TorchScript and FX lowering call): the table
maps each form to the op's converter, through an :class:`OpForm` when the form
fixes an argument of the converter (e.g. ``relu=True``).
"""
from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np
import torch
import torch.ao.nn.intrinsic.quantized as nniq
import torch.ao.nn.quantized as nnq
import torch.ao.quantization.fx._decomposed  # noqa: F401  registers the quantized_decomposed ops named below
import torch.fx
import torch.nn.functional as F
from torch import nn

from qnnpy.convert.aten_ops import convert_aten_add, convert_aten_conv2d, convert_aten_linear, convert_aten_relu
from qnnpy.convert.context import ConversionContext
from qnnpy.convert.dynamic_ops import DYNAMIC_CONVERTERS
from qnnpy.convert.embedding_ops import EMBEDDING_CONVERTERS
from qnnpy.convert.torchao_ops import TORCHAO_CONVERTERS
from qnnpy.convert.float_args import max_pool3d_as_2d
from qnnpy.convert.float_aten import FLOAT_ATEN, FLOAT_TUPLE_OUTPUTS
from qnnpy.convert.float_movement import permutation
from qnnpy.convert.op_form import AtenForm, OpForm
from qnnpy.convert.torch_weight_reader import conv_state, linear_state
from qnnpy.errors import ConversionError

Converter = Callable[[ConversionContext, torch.fx.Node], int]


def _pair(v: Any) -> list[int]:
    return [int(x) for x in v] if isinstance(v, (tuple, list)) else [int(v), int(v)]


def _triple(v: Any) -> list[int]:
    return [int(x) for x in v] if isinstance(v, (tuple, list)) else [int(v)] * 3


def _pair_float(v: Any) -> tuple[float, float]:
    """A scale factor as (h, w); 0.0 when absent."""
    if v is None:
        return 0.0, 0.0
    return (float(v[0]), float(v[1])) if isinstance(v, (tuple, list)) else (float(v), float(v))


def _arg(node: torch.fx.Node, index: int, name: str, default: Any = None) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _attributes(ctx: ConversionContext, node: torch.fx.Node, **defaults: Any) -> list[Any]:
    """The op's attributes, in the order of ``defaults``: the fields of a module, or the arguments of a
    functional call after the input (``defaults`` lists the functional's parameters in order, with their
    defaults; PyTorch gives the module fields the same names)."""
    if node.op == "call_module":
        m = ctx.module(node)
        return [getattr(m, name) for name in defaults]
    return [_arg(node, i + 1, name, default) for i, (name, default) in enumerate(defaults.items())]


# --- quantize / dequantize -------------------------------------------------------

def convert_quantize(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """QuantStub after convert (``nnq.Quantize``) or ``torch.quantize_per_tensor``."""
    return ctx.add(node, "quantize", [node.args[0]])


def convert_dequantize(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """DeQuantStub after convert, ``torch.dequantize`` or ``Tensor.dequantize``."""
    return ctx.graph.add_node("dequantize", [ctx.value(node.args[0], node)], ctx.source(node), ctx.source(node), "float32")


# --- conv / linear ---------------------------------------------------------------

def _packed_params(ctx: ConversionContext, node: torch.fx.Node, module_field: str) -> object:
    """The packed weight of a conv or linear: the module's ``module_field``, or the second argument of
    ``torch.ops.quantized.<op>(x, packed_params, scale, zero_point)`` (TorchScript, FX lowering)."""
    if node.op == "call_module":
        return operator.attrgetter(module_field)(ctx.module(node))
    return ctx.example(node.args[1])


def _zero_padding_only(ctx: ConversionContext, node: torch.fx.Node) -> None:
    """Refuses a conv module whose padding_mode is not 'zeros': its forward pads the input with F.pad
    (reflect, replicate, circular) before a conv whose packed padding is 0, and qnnpy has no such pad."""
    mode = getattr(ctx.module(node), "padding_mode", "zeros") if node.op == "call_module" else "zeros"
    if mode != "zeros":
        raise ConversionError(f"{ctx.source(node)}: padding_mode={mode!r} is not supported, only 'zeros'")


def convert_conv1d(ctx: ConversionContext, node: torch.fx.Node, relu: bool) -> int:
    """Quantized conv1d; ``relu`` fuses a ReLU before requantization. PyTorch runs it as a conv2d over
    (N, C, 1, L) with its packed (OC, IC/G, 1, K) weight; qnnpy emits the same: reshape -> conv2d -> reshape."""
    _zero_padding_only(ctx, node)
    where = ctx.source(node)
    n, c, length = ctx.example(node.args[0]).shape
    x = ctx.graph.add_node("reshape", [ctx.value(node.args[0], node)], where, f"{where}_nchw",
                           ints={"shape": [n, c, 1, length]}, floats={},
                           **{**ctx.quantized_output(node.args[0]), "expected_shape": [n, c, 1, length]})
    state = conv_state(_packed_params(ctx, node, "_packed_params"), where)
    out = ctx.quantized_output(node)
    oc, out_length = out["expected_shape"][1:]
    y = ctx.graph.add_conv2d(
        x, where, f"{where}_conv2d", state.version, state.config, state.weight.data, state.weight.scale,
        state.weight.zero_point, state.weight.axis, state.bias, relu, **{**out, "expected_shape": [n, oc, 1, out_length]},
    )
    return ctx.graph.add_node("reshape", [y], where, where, ints={"shape": out["expected_shape"]}, floats={}, **out)


def convert_conv_transpose2d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """Quantized ``ConvTranspose2d``: int8 (in, out/groups, kh, kw) weight, int32 bias, requantized output."""
    where = ctx.source(node)
    state = conv_state(_packed_params(ctx, node, "_packed_params"), where)
    return ctx.graph.add_conv_transpose2d(
        ctx.value(node.args[0], node), where, where, state.version, state.config, state.weight.data,
        state.weight.scale, state.weight.zero_point, state.weight.axis, state.bias, False, **ctx.quantized_output(node),
    )


def _quantized_conv(ctx: ConversionContext, node: torch.fx.Node, relu: bool, add: Callable[..., int]) -> int:
    """A quantized conv module or op read from its packed params and added by ``add`` (Graph.add_conv2d, ...)."""
    _zero_padding_only(ctx, node)
    where = ctx.source(node)
    state = conv_state(_packed_params(ctx, node, "_packed_params"), where)
    return add(ctx.value(node.args[0], node), where, where, state.version, state.config, state.weight.data,
               state.weight.scale, state.weight.zero_point, state.weight.axis, state.bias, relu,
               **ctx.quantized_output(node))


def convert_conv2d(ctx: ConversionContext, node: torch.fx.Node, relu: bool) -> int:
    """Quantized conv2d: int8 weight, int32 bias, requantized output; ``relu`` fuses a ReLU before requantization."""
    return _quantized_conv(ctx, node, relu, ctx.graph.add_conv2d)


def convert_conv3d(ctx: ConversionContext, node: torch.fx.Node, relu: bool) -> int:
    """Quantized conv3d (N, C, D, H, W): int8 weight, int32 bias, requantized output; ``relu`` fuses a ReLU before
    requantization. The runtime computes it as one conv2d with the kernel's depth taps as channels
    (src/runtime/conv3d.h)."""
    return _quantized_conv(ctx, node, relu, ctx.graph.add_conv3d)


def convert_linear(ctx: ConversionContext, node: torch.fx.Node, relu: bool) -> int:
    """Quantized linear: int8 weight, int32 bias, requantized output; ``relu`` fuses a ReLU before requantization."""
    where = ctx.source(node)
    weight, bias = linear_state(_packed_params(ctx, node, "_packed_params._packed_params"), where)
    return ctx.graph.add_linear(
        ctx.value(node.args[0], node), where, where, weight.data, weight.scale, weight.zero_point,
        weight.axis, bias, relu, **ctx.quantized_output(node),
    )


def convert_batch_norm2d(ctx: ConversionContext, node: torch.fx.Node, relu: bool) -> int:
    """Quantized batch norm: float gamma, beta, mean and variance, requantized output; ``relu`` fuses a ReLU
    before requantization. From the module's fields, or from the arguments of
    ``torch.ops.quantized.batch_norm2d(x, weight, bias, mean, var, eps, scale, zero_point)`` (TorchScript)."""
    where = ctx.source(node)
    if node.op == "call_module":
        m = ctx.module(node)
        weight, bias, mean, var, eps = m.weight, m.bias, m.running_mean, m.running_var, m.eps
    else:
        weight, bias, mean, var = (ctx.example(a) if isinstance(a, torch.fx.Node) else a for a in node.args[1:5])
        eps = node.args[5]
    channels = ctx.example(node.args[0]).shape[1]

    def values(t: torch.Tensor | None, default: float) -> Any:
        return torch.full((channels,), default).numpy() if t is None else t.detach().float().numpy()

    return ctx.graph.add_batch_norm2d(
        ctx.value(node.args[0], node), where, where, values(weight, 1.0), values(bias, 0.0), values(mean, 0.0),
        values(var, 1.0), float(eps), relu, **ctx.quantized_output(node),
    )


# --- element-wise ----------------------------------------------------------------

def _scalar_operand(node: torch.fx.Node) -> tuple[Any, Any] | None:
    """(tensor, number) when one operand of a binary quantized op is a Python number (the ``.Scalar``
    overloads, which FX lowers ``y * 2.0`` and ``y + 1`` to), else None."""
    a, b = node.args[:2]
    if isinstance(b, (int, float)):
        return a, b
    if isinstance(a, (int, float)):
        return b, a
    return None


def convert_add(ctx: ConversionContext, node: torch.fx.Node, relu: bool) -> int:
    """Quantized add of two tensors, requantized; ``relu`` fuses a ReLU before requantization. A number
    operand (``quantized::add.Scalar``) is ``add_scalar``."""
    scalar = _scalar_operand(node)
    if scalar is None:
        return ctx.add(node, "add", list(node.args[:2]), ints={"relu": [int(relu)]})
    if relu:
        raise ConversionError(f"{ctx.source(node)}: add_relu of a tensor and the number {scalar[1]} is not supported")
    return ctx.add(node, "add_scalar", [scalar[0]], floats={"scalar": float(scalar[1])})


def convert_relu(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """ReLU on a quantized tensor: max(q, zero_point), qparams unchanged."""
    return ctx.add(node, "relu", [node.args[0]])


def convert_mul(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``torch.ops.quantized.mul`` (QFunctional.mul), with NumPy broadcasting. A number operand
    (``quantized::mul.Scalar``) is ``mul_scalar``."""
    scalar = _scalar_operand(node)
    if scalar is None:
        return ctx.add(node, "mul", list(node.args[:2]))
    return ctx.add(node, "mul_scalar", [scalar[0]], floats={"scalar": float(scalar[1])})


def _scalar(ctx: ConversionContext, value: Any) -> float:
    """A scalar argument: a number, or a one-element tensor (the ``.Tensor`` overloads TorchScript may call)."""
    return float(ctx.example(value)) if isinstance(value, torch.fx.Node) else float(value)


def convert_add_scalar(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``torch.ops.quantized.add_scalar`` (QFunctional.add_scalar)."""
    return ctx.add(node, "add_scalar", [node.args[0]], floats={"scalar": _scalar(ctx, node.args[1])})


def convert_mul_scalar(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``torch.ops.quantized.mul_scalar`` (QFunctional.mul_scalar)."""
    return ctx.add(node, "mul_scalar", [node.args[0]], floats={"scalar": _scalar(ctx, node.args[1])})


def convert_cat(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``torch.ops.quantized.cat`` (QFunctional.cat) or ``torch.cat`` of quantized tensors."""
    return ctx.add(node, "cat", list(_arg(node, 0, "tensors")), ints={"axis": [int(_arg(node, 1, "dim", 0))]})


def convert_hardswish(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nnq.Hardswish`` / ``torch.ops.quantized.hardswish``: x * relu6(x + 3) / 6, requantized."""
    return ctx.add(node, "hardswish", [node.args[0]])


def convert_hardsigmoid(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nn.Hardsigmoid`` / ``F.hardsigmoid`` on a quantized tensor: relu6(x + 3) / 6."""
    return ctx.add(node, "hardsigmoid", [node.args[0]])


def convert_sigmoid(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nnq.Sigmoid`` (``torch.ops.quantized.sigmoid``) / ``torch.sigmoid`` on a quantized tensor."""
    return ctx.add(node, "sigmoid", [node.args[0]])


def convert_leaky_relu(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nnq.LeakyReLU`` (output qparams of its own; ``torch.ops.quantized.leaky_relu``), ``nn.LeakyReLU`` or
    ``F.leaky_relu`` on a quantized tensor."""
    (slope,) = _attributes(ctx, node, negative_slope=0.01)
    return ctx.add(node, "leaky_relu", [node.args[0]], floats={"alpha": float(slope)})


def convert_elu(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nnq.ELU`` / ``torch.ops.quantized.elu``: x if x > 0 else alpha * (exp(x) - 1), requantized."""
    if node.op == "call_module":
        alpha = ctx.module(node).alpha
    else:
        alpha = _arg(node, 3, "alpha", 1.0)
        coefficients = (_arg(node, 4, "scale", 1.0), _arg(node, 5, "input_scale", 1.0))
        if any(float(c) != 1.0 for c in coefficients):
            raise ConversionError(f"{ctx.source(node)}: quantized elu with scale / input_scale {coefficients} is not "
                                  "supported (only 1.0, as nnq.ELU passes them)")
    return ctx.add(node, "elu", [node.args[0]], floats={"alpha": float(alpha)})


def convert_relu6(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nnq.ReLU6`` (``torch.ops.quantized.relu6``) / ``nn.ReLU6`` / ``F.relu6``: clamp to [0, 6] in real values,
    qparams unchanged."""
    return ctx.add(node, "clamp", [node.args[0]], floats={"min": 0.0, "max": 6.0})


def convert_hardtanh(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nn.Hardtanh`` / ``F.hardtanh`` on a quantized tensor: clamp to [min_val, max_val]."""
    lo, hi = _attributes(ctx, node, min_val=-1.0, max_val=1.0)
    return ctx.add(node, "clamp", [node.args[0]], floats={"min": float(lo), "max": float(hi)})


def convert_quantized_tanh(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nn.Tanh`` / ``torch.tanh`` on a quantized tensor (PyTorch fixes the output qparams: 2/256, 128 or 0)."""
    return ctx.add(node, "quantized_tanh", [node.args[0]])


# --- quantized normalization -----------------------------------------------------

def _affine_part(value: torch.Tensor | None, shape: list[int], fill: float) -> np.ndarray:
    """A normalization's weight or bias as float32; ``fill`` everywhere when the layer has none."""
    if value is None:
        return np.full(shape, fill, np.float32)
    return value.detach().float().reshape(shape).numpy()


def _add_normalization(ctx: ConversionContext, node: torch.fx.Node, op: str, ints: dict[str, list[int]],
                       shape: list[int], weight: Any, bias: Any, eps: Any) -> int:
    return ctx.graph.add_normalization(
        op, ctx.value(node.args[0], node), ctx.source(node), ctx.source(node), _affine_part(ctx.example(weight), shape, 1.0),
        _affine_part(ctx.example(bias), shape, 0.0), ints, float(eps), **ctx.quantized_output(node))


def convert_quantized_layer_norm(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nnq.LayerNorm`` / ``torch.ops.quantized.layer_norm(x, normalized_shape, weight, bias, eps, scale,
    zero_point)``: the last ``len(normalized_shape)`` axes normalized together, per-element weight and bias."""
    if node.op == "call_module":
        m = ctx.module(node)
        normalized, weight, bias, eps = m.normalized_shape, m.weight, m.bias, m.eps
    else:
        normalized, weight, bias, eps = (_arg(node, i, name) for i, name in
                                         ((1, "normalized_shape"), (2, "weight"), (3, "bias"), (4, "eps")))
    normalized = [int(d) for d in normalized]
    x_shape = list(ctx.example(node.args[0]).shape)
    if x_shape[len(x_shape) - len(normalized):] != normalized:
        raise ConversionError(f"{ctx.source(node)}: layer_norm's normalized_shape {normalized} is not the end of the "
                              f"input shape {x_shape}")
    return _add_normalization(ctx, node, "quantized_layer_norm", {"normalized_rank": [len(normalized)]}, normalized,
                              weight, bias, eps)


def convert_quantized_group_norm(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nnq.GroupNorm`` / ``torch.ops.quantized.group_norm(x, num_groups, weight, bias, eps, scale, zero_point)``."""
    if node.op == "call_module":
        m = ctx.module(node)
        groups, weight, bias, eps = m.num_groups, m.weight, m.bias, m.eps
    else:
        groups, weight, bias, eps = (_arg(node, i, name) for i, name in
                                     ((1, "num_groups"), (2, "weight"), (3, "bias"), (4, "eps")))
    channels = int(ctx.example(node.args[0]).shape[1])
    return _add_normalization(ctx, node, "quantized_group_norm", {"num_groups": [int(groups)]}, [channels], weight,
                              bias, eps)


def convert_quantized_instance_norm(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nnq.InstanceNorm1d/2d`` / ``torch.ops.quantized.instance_norm(x, weight, bias, eps, scale, zero_point)``:
    PyTorch runs it as a group norm with one group per channel, and so does qnnpy."""
    if node.op == "call_module":
        m = ctx.module(node)
        weight, bias, eps = m.weight, m.bias, m.eps
    else:
        weight, bias, eps = (_arg(node, i, name) for i, name in ((1, "weight"), (2, "bias"), (3, "eps")))
    channels = int(ctx.example(node.args[0]).shape[1])
    return _add_normalization(ctx, node, "quantized_group_norm", {"num_groups": [channels]}, [channels], weight,
                              bias, eps)


def convert_quantized_softmax(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nnq.Softmax`` / ``torch.ops.quantized.softmax(x, dim, output_scale, output_zero_point)``."""
    dim = ctx.module(node).dim if node.op == "call_module" else _arg(node, 1, "dim")
    if dim is None:
        raise ConversionError(f"{ctx.source(node)}: quantized softmax without a dim is not supported")
    return ctx.add(node, "quantized_softmax", [node.args[0]], ints={"axis": [int(dim)]})


# --- pooling ---------------------------------------------------------------------

def convert_max_pool2d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nn.MaxPool2d``, ``F.max_pool2d`` or ``torch.max_pool2d`` on a quantized tensor."""
    kernel, stride, padding, dilation, ceil_mode, return_indices = _attributes(
        ctx, node, kernel_size=None, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False)
    if return_indices:
        raise ConversionError(f"{ctx.source(node)}: max_pool2d with return_indices=True is not supported")
    ints = {
        "kernel": _pair(kernel),
        "stride": _pair(stride if stride not in (None, [], ()) else kernel),
        "padding": _pair(padding),
        "dilation": _pair(dilation),
        "ceil_mode": [int(bool(ceil_mode))],
    }
    return ctx.add(node, "max_pool2d", [node.args[0]], ints=ints)


def convert_max_pool3d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nn.MaxPool3d``, ``F.max_pool3d`` or ``torch.max_pool3d`` on a quantized (N, C, D, H, W) tensor: max_pool2d
    over (H, W) of (N, C * D, H, W), then over D of (N, C, D, Ho * Wo) with a window of width 1 along the second
    axis. The max of a 3-D window is the max over D of its (H, W) windows' maxima, and max pooling keeps the
    input's qparams: the same values as PyTorch's, no rounding on the way."""
    kernel, stride, padding, dilation, ceil_mode, return_indices = _attributes(
        ctx, node, kernel_size=None, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False)
    if return_indices:
        raise ConversionError(f"{ctx.source(node)}: max_pool3d with return_indices=True is not supported")
    hw, depth = max_pool3d_as_2d(kernel, stride, padding, dilation, ceil_mode)
    if ctx.example(node.args[0]).dim() != 5:
        raise ConversionError(f"{ctx.source(node)}: max_pool3d of an input without its batch axis is not supported")
    n, c, d, h, w = ctx.example(node.args[0]).shape
    _, _, do, ho, wo = ctx.example(node).shape
    where = ctx.source(node)
    qparams = {k: v for k, v in ctx.quantized_output(node).items() if k != "expected_shape"}

    def step(op: str, x: int, suffix: str, shape: list[int], ints: dict[str, list[int]]) -> int:
        return ctx.graph.add_node(op, [x], where, f"{where}_{suffix}", ints=ints, floats={},
                                  **qparams, expected_shape=shape)

    planes = step("reshape", ctx.value(node.args[0], node), "planes", [n, c * d, h, w], {"shape": [n, c * d, h, w]})
    pooled = step("max_pool2d", planes, "pool_hw", [n, c * d, ho, wo], hw)
    columns = step("reshape", pooled, "columns", [n, c, d, ho * wo], {"shape": [n, c, d, ho * wo]})
    deep = step("max_pool2d", columns, "pool_d", [n, c, do, ho * wo], depth)
    return ctx.graph.add_node("reshape", [deep], where, where, ints={"shape": [n, c, do, ho, wo]}, floats={},
                              **qparams, expected_shape=[n, c, do, ho, wo])


def _adaptive_avg_pool2d(ctx: ConversionContext, node: torch.fx.Node, float_mean: bool) -> int:
    size = list(ctx.example(node).shape[2:])
    flag = {"float_mean": [1]} if float_mean else {}
    return ctx.add(node, "adaptive_avg_pool2d", [node.args[0]], ints={"output_size": size, **flag})


def convert_adaptive_avg_pool2d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nn.AdaptiveAvgPool2d`` / ``F.adaptive_avg_pool2d``; the output size is read from the example output."""
    return _adaptive_avg_pool2d(ctx, node, float_mean=False)


def convert_adaptive_avg_pool3d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nn.AdaptiveAvgPool3d`` / ``F.adaptive_avg_pool3d`` on a quantized (N, C, D, H, W) tensor, any output size
    (read from the example output)."""
    return ctx.add(node, "adaptive_avg_pool3d", [node.args[0]], ints={"output_size": list(ctx.example(node).shape[2:])})


def convert_avg_pool3d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nn.AvgPool3d`` or ``F.avg_pool3d`` on a quantized (N, C, D, H, W) tensor."""
    return ctx.add(node, "avg_pool3d", [node.args[0]], ints=_avg_pool_ints(ctx, node, _triple))


def convert_aten_adaptive_avg_pool2d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``aten.adaptive_avg_pool2d`` anchoring a PT2E island. PT2E computes it as dequantize -> float pool ->
    quantize (to a 1x1 output, aten's float mean), whose rounding of the exact average's ties the runtime
    reproduces for nodes marked ``float_mean`` (src/ops/pool.cpp)."""
    return _adaptive_avg_pool2d(ctx, node, float_mean=True)


def _avg_pool_ints(ctx: ConversionContext, node: torch.fx.Node, per_axis: Callable[[Any], list[int]]) -> dict[str, list[int]]:
    """The attributes of avg_pool2d / avg_pool3d (``per_axis``: _pair or _triple) as the op's ints."""
    kernel, stride, padding, ceil_mode, count_include_pad, divisor_override = _attributes(
        ctx, node, kernel_size=None, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
        divisor_override=None)
    return {
        "kernel": per_axis(kernel),
        "stride": per_axis(stride if stride not in (None, [], ()) else kernel),
        "padding": per_axis(padding),
        "ceil_mode": [int(bool(ceil_mode))],
        "count_include_pad": [int(bool(count_include_pad))],
        "divisor_override": [int(divisor_override or 0)],
    }


def _avg_pool2d(ctx: ConversionContext, node: torch.fx.Node, float_mean: bool) -> int:
    ints = _avg_pool_ints(ctx, node, _pair)
    return ctx.add(node, "avg_pool2d", [node.args[0]], ints=ints | ({"float_mean": [1]} if float_mean else {}))


def convert_avg_pool2d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nn.AvgPool2d`` or ``F.avg_pool2d`` on a quantized tensor."""
    return _avg_pool2d(ctx, node, float_mean=False)


def convert_aten_avg_pool2d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``aten.avg_pool2d`` anchoring a PT2E island: PT2E computes it as dequantize -> float pool -> quantize,
    which the runtime reproduces for nodes marked ``float_mean`` (see convert_aten_adaptive_avg_pool2d)."""
    return _avg_pool2d(ctx, node, float_mean=True)


def convert_upsample_nearest(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nn.Upsample`` / ``F.interpolate`` in mode "nearest": the output size is read from the example output."""
    _, scale_factor, mode, _, recompute = _attributes(
        ctx, node, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None)
    if recompute:
        scale_factor = None  # PyTorch computes the output size, then indexes by in / out
    if mode != "nearest":
        raise ConversionError(f"{ctx.source(node)}: interpolate mode {mode!r} on a quantized tensor is not supported "
                              "(only 'nearest')")
    out = ctx.example(node)
    if out.dim() != 4:
        raise ConversionError(f"{ctx.source(node)}: nearest upsampling of a rank-{out.dim()} tensor is not supported")
    scale_h, scale_w = _pair_float(scale_factor)
    return ctx.add(node, "upsample_nearest2d", [node.args[0]], ints={"output_size": list(out.shape[2:])},
                   floats={"scale_h": scale_h, "scale_w": scale_w})


def convert_upsample_nearest2d_aten(ctx: ConversionContext, node: torch.fx.Node, vec: bool) -> int:
    """``aten::upsample_nearest2d`` as TorchScript records ``F.interpolate(mode="nearest")``: the ``.vec``
    overload (``vec``: input, output_size, scale_factors) or the default one (self, output_size, scales_h,
    scales_w); the output size is read from the example output."""
    scales = _arg(node, 2, "scale_factors") if vec else (_arg(node, 2, "scales_h"), _arg(node, 3, "scales_w"))
    scale_h, scale_w = (0.0, 0.0) if scales is None else tuple(0.0 if s is None else float(s) for s in scales)
    return ctx.add(node, "upsample_nearest2d", [node.args[0]], ints={"output_size": list(ctx.example(node).shape[2:])},
                   floats={"scale_h": scale_h, "scale_w": scale_w})


def _mean(ctx: ConversionContext, node: torch.fx.Node, float_mean: bool) -> int:
    rank = ctx.example(node.args[0]).dim()
    dims = _arg(node, 1, "dim")
    axes = [] if dims is None else sorted(int(d) % rank for d in (dims if isinstance(dims, (tuple, list)) else [dims]))
    if rank != 4 or axes != [2, 3]:
        raise ConversionError(f"{ctx.source(node)}: mean over {dims} of a rank-{rank} quantized tensor is not "
                              "supported (only over [2, 3] of a 4-D tensor)")
    ints = {"axes": axes, "keepdim": [int(bool(_arg(node, 2, "keepdim", False)))]}
    return ctx.add(node, "mean", [node.args[0]], ints=ints | ({"float_mean": [1]} if float_mean else {}))


def convert_mean(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``Tensor.mean`` / ``torch.mean`` over the spatial axes [2, 3] of a quantized 4-D tensor."""
    return _mean(ctx, node, float_mean=False)


def convert_aten_mean(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``aten.mean.dim`` over the spatial axes anchoring a PT2E island: aten's float mean, marked
    ``float_mean`` (see convert_aten_adaptive_avg_pool2d)."""
    return _mean(ctx, node, float_mean=True)


# --- shape -----------------------------------------------------------------------

def convert_reshape(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """flatten / unflatten / reshape / view of a quantized tensor: the target shape is read from the example output."""
    return ctx.add(node, "reshape", [node.args[0]], ints={"shape": list(ctx.example(node).shape)})


def convert_transpose(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``torch.transpose`` / ``Tensor.transpose`` (aten.transpose) of a quantized tensor: a permutation of two axes."""
    return ctx.add(node, "permute", [node.args[0]], ints={"perm": permutation(ctx, node)})


def convert_permute(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``torch.permute`` / ``Tensor.permute`` (aten.permute) of a quantized tensor."""
    return ctx.add(node, "permute", [node.args[0]], ints={"perm": permutation(ctx, node)})


# The ops whose tuple result convert_getitem takes apart: torch.fx's (eager / FX models) and aten's (PT2E graphs),
# each with the split axis as its third argument; unbind's parts (axis: its second argument) are slices of length 1
# with the axis dropped.
_SPLITTING_OPS = ("chunk", "split", "tensor_split", torch.chunk, torch.split, torch.tensor_split,
                  torch.ops.aten.chunk.default, torch.ops.aten.split.Tensor, torch.ops.aten.split_with_sizes.default,
                  torch.ops.aten.tensor_split.sections, torch.ops.aten.tensor_split.indices,
                  torch.ops.aten.tensor_split.tensor_indices_or_sections)
_UNBINDING_OPS = ("unbind", torch.unbind, torch.ops.aten.unbind.int)

_DEQUANTIZE_OPS = ("dequantize", torch.dequantize, torch.ops.quantized_decomposed.dequantize_per_tensor.default,
                   torch.ops.quantized_decomposed.dequantize_per_tensor.tensor)


def convert_getitem(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """One part of ``chunk`` / ``split`` / ``tensor_split`` / ``unbind`` (the tuple's ``[i]``), as a slice along the
    split axis (and, for unbind, a reshape that drops it); or one output of an op with several (the values of
    ``max.dim``, the normalized output of ``native_layer_norm``...)."""
    parent, index = node.args
    if isinstance(parent, torch.fx.Node) and parent.target in FLOAT_TUPLE_OUTPUTS:
        return FLOAT_TUPLE_OUTPUTS[parent.target](ctx, parent, int(index), node)
    if not isinstance(parent, torch.fx.Node) or parent.target not in _SPLITTING_OPS + _UNBINDING_OPS:
        raise ConversionError(f"{ctx.source(node)}: taking part {index} of the result of "
                              f"{getattr(parent, 'target', parent)!r} is not supported (only of chunk, split, "
                              "tensor_split, unbind and the ops with several outputs qnnpy knows)")
    source = parent.args[0]
    unbind = parent.target in _UNBINDING_OPS
    rank = ctx.example(source).dim()
    axis = int(_arg(parent, 1, "dim", 0) if unbind else _arg(parent, 2, "dim", 0)) % rank
    parts = ctx.example(parent)
    begin = index if unbind else sum(p.shape[axis] for p in parts[:index])
    ints = {"axis": [axis], "begin": [begin], "end": [begin + (1 if unbind else parts[index].shape[axis])]}
    shape = list(ctx.example(node).shape)
    sliced_shape = [*shape[:axis], 1, *shape[axis:]] if unbind else shape
    where = ctx.source(node)
    if ctx.example(node).is_quantized:
        out = ctx.quantized_output(node)
        if not unbind:
            return ctx.graph.add_node("slice", [ctx.value(source, node)], where, where, ints=ints, floats={}, **out)
        sliced = ctx.graph.add_node("slice", [ctx.value(source, node)], where, where + "_slice", ints=ints, floats={},
                                    **{**out, "expected_shape": sliced_shape})
        return ctx.graph.add_node("reshape", [sliced], where, where, ints={"shape": shape}, **out)
    # FX mode and PT2E may chunk the dequantized float tensor (dequantize -> chunk -> quantize):
    # slicing commutes with dequantize, so the slice runs on the integer tensor. A float tensor
    # computed in float (a PT2E float island, e.g. ShuffleNetV2's channel shuffle) is sliced in float.
    if not (isinstance(source, torch.fx.Node) and source.target in _DEQUANTIZE_OPS):
        sliced = ctx.add_plain(node, "float_slice", [ctx.value(source, node)], ints={**ints, "step": [1]},
                               suffix="_slice" if unbind else "", shape=sliced_shape)
        return ctx.add_plain(node, "float_reshape", [sliced], ints={"shape": shape}) if unbind else sliced
    quantized_source = source.args[0]
    out = ctx.quantized_output(quantized_source)
    sliced = ctx.graph.add_node("slice", [ctx.value(quantized_source, node)], where, where + "_q", ints=ints, floats={},
                                **{**out, "expected_shape": sliced_shape})
    if unbind:
        sliced = ctx.graph.add_node("reshape", [sliced], where, where + "_q_part", ints={"shape": shape},
                                    **{**out, "expected_shape": shape})
    return ctx.graph.add_node("dequantize", [sliced], where, where, "float32")


def convert_dropout(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``torch.dropout`` / ``F.dropout`` in eval mode: the output is the input."""
    training = _arg(node, 2, "train") if node.target is torch.dropout else _arg(node, 2, "training", True)
    if training:
        raise ConversionError(f"{ctx.source(node)}: dropout with train=True; convert the model in eval mode")
    return ctx.value(node.args[0], node)


def convert_identity(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """Identity, eval-mode Dropout, contiguous: the output is the input."""
    return ctx.value(node.args[0], node)


CONVERTERS: dict[Any, Converter] = {
    nnq.Quantize: convert_quantize,
    torch.quantize_per_tensor: convert_quantize,
    nnq.DeQuantize: convert_dequantize,
    torch.dequantize: convert_dequantize,
    "Tensor.dequantize": convert_dequantize,
    nnq.Conv1d: OpForm(convert_conv1d, "Quantized ``Conv1d``", relu=False),
    nniq.ConvReLU1d: OpForm(convert_conv1d, "Quantized ``ConvReLU1d``: conv1d with the ReLU fused", relu=True),
    nnq.Conv2d: OpForm(convert_conv2d, "Quantized ``Conv2d``", relu=False),
    nnq.ConvTranspose2d: convert_conv_transpose2d,
    nniq.ConvReLU2d: OpForm(convert_conv2d, "Quantized ``ConvReLU2d``: conv2d with the ReLU fused", relu=True),
    nnq.Conv3d: OpForm(convert_conv3d, "Quantized ``Conv3d``", relu=False),
    nniq.ConvReLU3d: OpForm(convert_conv3d, "Quantized ``ConvReLU3d``: conv3d with the ReLU fused", relu=True),
    torch.ops.quantized.conv3d: OpForm(
        convert_conv3d, "``torch.ops.quantized.conv3d(x, packed_params, scale, zero_point)``", relu=False),
    torch.ops.quantized.conv3d_relu: OpForm(
        convert_conv3d, "``torch.ops.quantized.conv3d_relu(x, packed_params, scale, zero_point)``", relu=True),
    nnq.Linear: OpForm(convert_linear, "Quantized ``Linear``", relu=False),
    nniq.LinearReLU: OpForm(convert_linear, "Quantized ``LinearReLU``: linear with the ReLU fused", relu=True),
    torch.ops.quantized.conv2d: OpForm(
        convert_conv2d, "``torch.ops.quantized.conv2d(x, packed_params, scale, zero_point)``", relu=False),
    torch.ops.quantized.conv2d_relu: OpForm(
        convert_conv2d, "``torch.ops.quantized.conv2d_relu(x, packed_params, scale, zero_point)``", relu=True),
    torch.ops.quantized.linear: OpForm(
        convert_linear, "``torch.ops.quantized.linear(x, packed_params, scale, zero_point)``", relu=False),
    torch.ops.quantized.linear_relu: OpForm(
        convert_linear, "``torch.ops.quantized.linear_relu(x, packed_params, scale, zero_point)``", relu=True),
    nnq.BatchNorm2d: OpForm(convert_batch_norm2d, "Quantized ``BatchNorm2d``", relu=False),
    nniq.BNReLU2d: OpForm(convert_batch_norm2d, "Quantized ``BNReLU2d``: batch norm with the ReLU fused", relu=True),
    torch.ops.quantized.add: OpForm(convert_add, "``torch.ops.quantized.add`` (QFunctional.add)", relu=False),
    torch.ops.quantized.add_relu: OpForm(
        convert_add, "``torch.ops.quantized.add_relu`` (QFunctional.add_relu)", relu=True),
    torch.ops.quantized.mul: convert_mul,
    torch.ops.quantized.add_scalar: convert_add_scalar,
    torch.ops.quantized.mul_scalar: convert_mul_scalar,
    torch.ops.quantized.cat: convert_cat,
    torch.cat: convert_cat,
    nnq.Hardswish: convert_hardswish,
    torch.ops.quantized.hardswish: convert_hardswish,
    nn.Hardsigmoid: convert_hardsigmoid,
    F.hardsigmoid: convert_hardsigmoid,
    nnq.Sigmoid: convert_sigmoid,
    nn.Sigmoid: convert_sigmoid,
    torch.sigmoid: convert_sigmoid,
    "Tensor.sigmoid": convert_sigmoid,
    nnq.LeakyReLU: convert_leaky_relu,
    nn.LeakyReLU: convert_leaky_relu,
    F.leaky_relu: convert_leaky_relu,
    nnq.ELU: convert_elu,
    torch.ops.quantized.elu: convert_elu,
    nnq.ReLU6: convert_relu6,
    nn.ReLU6: convert_relu6,
    F.relu6: convert_relu6,
    nn.Hardtanh: convert_hardtanh,
    F.hardtanh: convert_hardtanh,
    nn.Tanh: convert_quantized_tanh,
    torch.tanh: convert_quantized_tanh,
    "Tensor.tanh": convert_quantized_tanh,
    nnq.LayerNorm: convert_quantized_layer_norm,
    torch.ops.quantized.layer_norm: convert_quantized_layer_norm,
    nnq.GroupNorm: convert_quantized_group_norm,
    torch.ops.quantized.group_norm: convert_quantized_group_norm,
    nnq.InstanceNorm1d: convert_quantized_instance_norm,
    nnq.InstanceNorm2d: convert_quantized_instance_norm,
    torch.ops.quantized.instance_norm: convert_quantized_instance_norm,
    nnq.Softmax: convert_quantized_softmax,
    torch.ops.quantized.softmax: convert_quantized_softmax,
    nn.AvgPool2d: convert_avg_pool2d,
    F.avg_pool2d: convert_avg_pool2d,
    nn.AvgPool3d: convert_avg_pool3d,
    F.avg_pool3d: convert_avg_pool3d,
    nn.Upsample: convert_upsample_nearest,
    F.interpolate: convert_upsample_nearest,
    "Tensor.mean": convert_mean,
    torch.mean: convert_mean,
    torch.transpose: convert_transpose,
    "Tensor.transpose": convert_transpose,
    torch.permute: convert_permute,
    "Tensor.permute": convert_permute,
    operator.getitem: convert_getitem,
    nn.ReLU: convert_relu,
    F.relu: convert_relu,
    torch.relu: convert_relu,
    "Tensor.relu": convert_relu,
    nn.MaxPool2d: convert_max_pool2d,
    F.max_pool2d: convert_max_pool2d,
    torch.max_pool2d: convert_max_pool2d,
    nn.MaxPool3d: convert_max_pool3d,
    F.max_pool3d: convert_max_pool3d,
    torch.max_pool3d: convert_max_pool3d,
    nn.AdaptiveAvgPool2d: convert_adaptive_avg_pool2d,
    F.adaptive_avg_pool2d: convert_adaptive_avg_pool2d,
    nn.AdaptiveAvgPool3d: convert_adaptive_avg_pool3d,
    F.adaptive_avg_pool3d: convert_adaptive_avg_pool3d,
    torch.flatten: convert_reshape,
    nn.Flatten: convert_reshape,
    nn.Unflatten: convert_reshape,
    torch.unflatten: convert_reshape,
    "Tensor.unflatten": convert_reshape,
    torch.reshape: convert_reshape,
    "Tensor.flatten": convert_reshape,
    "Tensor.reshape": convert_reshape,
    "Tensor.view": convert_reshape,
    nn.Identity: convert_identity,
    nn.Dropout: convert_identity,
    nnq.Dropout: convert_identity,
    torch.dropout: convert_dropout,
    F.dropout: convert_dropout,
    "Tensor.contiguous": convert_identity,
    **DYNAMIC_CONVERTERS,
    **EMBEDDING_CONVERTERS,
    **TORCHAO_CONVERTERS,
    # The spellings TorchScript graphs use for the eager modules above (quantized:: and aten:: ops,
    # older releases included): tests/test_torchscript_parity.py checks each eager form has one.
    torch.ops.quantized.conv1d: OpForm(
        convert_conv1d, "``torch.ops.quantized.conv1d(x, packed_params, scale, zero_point)``", relu=False),
    torch.ops.quantized.conv1d_relu: OpForm(
        convert_conv1d, "``torch.ops.quantized.conv1d_relu(x, packed_params, scale, zero_point)``", relu=True),
    torch.ops.quantized.conv_transpose2d: convert_conv_transpose2d,
    torch.ops.quantized.batch_norm2d: OpForm(
        convert_batch_norm2d, "``torch.ops.quantized.batch_norm2d`` (nnq.BatchNorm2d in TorchScript)", relu=False),
    torch.ops.quantized.batch_norm2d_relu: OpForm(
        convert_batch_norm2d, "``torch.ops.quantized.batch_norm2d_relu`` (nniq.BNReLU2d in TorchScript)", relu=True),
    torch.ops.quantized.relu6: convert_relu6,
    torch.ops.quantized.sigmoid: convert_sigmoid,
    torch.ops.quantized.leaky_relu: convert_leaky_relu,
}

_aten = torch.ops.aten
_qd = torch.ops.quantized_decomposed
# PT2E graphs (torch.export + prepare_pt2e / convert_pt2e, captured by qnnpy.capture.pt2e_capture), and the aten ops
# of TorchScript graphs and of decomposed float ops: each aten op is an AtenForm of its integer form, where qnnpy has
# one (the op anchoring a quantized island), and its float form (qnnpy.convert.float_aten).
_INTEGER_FORMS: dict[Any, tuple] = {  # op -> (converter, description[, the arguments the form fixes])
    _aten.conv2d.default: (convert_aten_conv2d, "``aten.conv2d``"),
    _aten.linear.default: (convert_aten_linear, "``aten.linear``"),
    _aten.add.Tensor: (convert_aten_add, "``aten.add.Tensor``"),
    _aten.mul.Tensor: (convert_mul, "``aten.mul.Tensor``"),
    _aten.relu.default: (convert_aten_relu, "``aten.relu``"),
    _aten.hardtanh.default: (convert_hardtanh, "``aten.hardtanh``"),
    _aten.hardswish.default: (convert_hardswish, "``aten.hardswish``"),
    _aten.hardsigmoid.default: (convert_hardsigmoid, "``aten.hardsigmoid``"),
    _aten.sigmoid.default: (convert_sigmoid, "``aten.sigmoid``"),
    _aten.max_pool2d.default: (convert_max_pool2d, "``aten.max_pool2d``"),
    _aten.avg_pool2d.default: (convert_aten_avg_pool2d, "``aten.avg_pool2d``"),
    _aten.upsample_nearest2d.vec: (convert_upsample_nearest2d_aten, "``aten::upsample_nearest2d.vec`` (F.interpolate "
                                   "in TorchScript)", {"vec": True}),
    _aten.upsample_nearest2d.default: (convert_upsample_nearest2d_aten, "``aten::upsample_nearest2d`` with scales_h / "
                                       "scales_w", {"vec": False}),
    _aten.adaptive_avg_pool2d.default: (convert_aten_adaptive_avg_pool2d, "``aten.adaptive_avg_pool2d``"),
    _aten.mean.dim: (convert_aten_mean, "``aten.mean.dim`` over the spatial axes"),
    _aten.cat.default: (convert_cat, "``aten.cat``"),
    _aten.flatten.using_ints: (convert_reshape, "``aten.flatten``"),
    _aten.view.default: (convert_reshape, "``aten.view``"),
    _aten.reshape.default: (convert_reshape, "``aten.reshape``"),
    _aten.unflatten.int: (convert_reshape, "``aten.unflatten``"),
    _aten.unsqueeze.default: (convert_reshape, "``aten.unsqueeze``"),
    _aten.squeeze.dim: (convert_reshape, "``aten.squeeze.dim``"),
    _aten.squeeze.dims: (convert_reshape, "``aten.squeeze.dims``"),
    _aten.permute.default: (convert_permute, "``aten.permute``"),
    _aten.transpose.int: (convert_transpose, "``aten.transpose``"),
    _aten.softmax.int: (convert_quantized_softmax, "``aten.softmax.int``"),
    _aten._softmax.default: (convert_quantized_softmax, "``aten._softmax``"),
    _aten.layer_norm.default: (convert_quantized_layer_norm, "``aten.layer_norm``"),
}
CONVERTERS.update({
    _qd.quantize_per_tensor.default: convert_quantize,
    _qd.quantize_per_tensor.tensor: convert_quantize,
    _qd.dequantize_per_tensor.default: convert_dequantize,
    _qd.dequantize_per_tensor.tensor: convert_dequantize,
})
for _op in [*_INTEGER_FORMS, *(op for op in FLOAT_ATEN if op not in _INTEGER_FORMS)]:
    _integer, _description, *_arguments = _INTEGER_FORMS.get(_op, (None, f"``{_op}``"))
    CONVERTERS[_op] = AtenForm(_integer, _description, FLOAT_ATEN.get(_op), **(_arguments[0] if _arguments else {}))


def has_integer_form(target: Any) -> bool:
    """Whether an aten op anchoring a PT2E island has an integer form in qnnpy (else the island stays
    dequantize -> float op -> quantize)."""
    form = CONVERTERS.get(target)
    return isinstance(form, AtenForm) and form.converter is not None


def converts_in_float(target: Any) -> bool:
    """Whether a node calling ``target`` on unquantized tensors converts as it is: an aten op with a float form,
    or one whose tuple of outputs ``operator.getitem`` takes apart. Other float nodes (the Python functions,
    methods and modules of eager / FX graphs) are decomposed into aten ops first."""
    if target is operator.getitem:
        return True
    form = CONVERTERS.get(target)
    return (isinstance(form, AtenForm) and form.float_converter is not None) or target in FLOAT_TUPLE_OUTPUTS \
        or target in _SPLITTING_OPS + _UNBINDING_OPS or target in TORCHAO_CONVERTERS

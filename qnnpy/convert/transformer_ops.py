"""Converters of the float ops of transformer encoders (``src/ops/float_transformer_ops.cpp``).

They serve two sources: the aten ops a PT2E quantizer leaves in float around attention
(``aten.softmax``, ``aten.layer_norm``, ``aten.gelu``, ``aten.matmul``, ``aten.div`` ...), and
everything but the linears of a dynamic-quantized model traced by torch.fx (``nn.LayerNorm``,
``nn.GELU``, ``F.softmax``, ``torch.matmul``, ``+``, ``/`` ...). One converter per op reads both
spellings: a module's fields, or the arguments of the aten op / function (same positions).
PyTorch's ``nn.TransformerEncoderLayer`` exported by PT2E adds ``aten.select`` (its packed Q / K / V)
and ``aten.scaled_dot_product_attention``, written here in the float ops.

A PT2E island (``dequantize -> op -> quantize``) around an op qnnpy has no integer form of
(GELU, matmul, ...) is converted as PT2E defines it (:func:`float_island`): the inputs
dequantized, the float op, the output quantized.
"""
from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np
import torch
import torch.fx

from qnnpy.convert.context import ConversionContext, op_name
from qnnpy.errors import ConversionError

FloatConverter = Callable[[ConversionContext, torch.fx.Node], int]


def _arg(node: torch.fx.Node, index: int, name: str, default: Any = None) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _add_float(ctx: ConversionContext, node: torch.fx.Node, op: str, inputs: list[Any],
               ints: dict[str, list[int]] | None = None, floats: dict[str, float] | None = None) -> int:
    return ctx.graph.add_node(op, [ctx.value(a, node) for a in inputs], ctx.source(node), ctx.source(node), "float32",
                              ints=ints or {}, floats=floats or {}, expected_shape=list(ctx.example(node).shape))


def _is_tensor_arg(ctx: ConversionContext, arg: Any) -> bool:
    return isinstance(arg, torch.fx.Node) and isinstance(ctx.example(arg), torch.Tensor)


def transpose_perm(ctx: ConversionContext, node: torch.fx.Node) -> list[int]:
    """The permutation of ``transpose(x, dim0, dim1)`` (aten, torch or Tensor method)."""
    rank = ctx.example(node.args[0]).dim()
    perm = list(range(rank))
    a, b = (int(_arg(node, i, name)) % rank for i, name in ((1, "dim0"), (2, "dim1")))
    perm[a], perm[b] = perm[b], perm[a]
    return perm


def permute_perm(ctx: ConversionContext, node: torch.fx.Node) -> list[int]:
    """The permutation of ``permute(x, dims)`` or ``x.permute(*dims)``, axes made non-negative."""
    rank = ctx.example(node.args[0]).dim()
    dims = node.args[1] if len(node.args) == 2 and isinstance(node.args[1], (tuple, list)) else node.args[1:]
    if not dims:
        dims = node.kwargs.get("dims", ())
    return [int(d) % rank for d in dims]


def float_permute(ctx: ConversionContext, node: torch.fx.Node, perm: list[int]) -> int:
    """A transpose / permute of a float tensor."""
    return _add_float(ctx, node, "float_permute", [node.args[0]], ints={"perm": perm})


def float_select(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``aten.select.int(x, dim, index)`` of a float tensor (how ``nn.MultiheadAttention`` takes Q, K and V
    apart from its packed input projection): ``float_slice`` of [index, index + 1), then ``float_reshape``
    dropping the axis."""
    x = ctx.example(node.args[0])
    dim, index = int(node.args[1]) % x.dim(), int(node.args[2]) % x.shape[int(node.args[1]) % x.dim()]
    where = ctx.source(node)
    sliced_shape = [1 if d == dim else n for d, n in enumerate(x.shape)]
    sliced = ctx.graph.add_node("float_slice", [ctx.value(node.args[0], node)], where, f"{where}_slice", "float32",
                                ints={"axis": [dim], "begin": [index], "end": [index + 1]}, floats={},
                                expected_shape=sliced_shape)
    shape = list(ctx.example(node).shape)
    return ctx.graph.add_node("float_reshape", [sliced], where, where, "float32", ints={"shape": shape}, floats={},
                              expected_shape=shape)


def float_scaled_dot_product_attention(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``aten.scaled_dot_product_attention(q, k, v)`` without mask, causal mask, dropout or grouped heads (what
    ``nn.MultiheadAttention`` calls in eval mode), as its definition: ``softmax(q @ k^T * scale) @ v`` with
    ``scale`` given or ``1 / sqrt(q.size(-1))``: float_permute, float_matmul, float_mul_scalar, float_softmax,
    float_matmul. PyTorch's CPU kernel (flash attention) computes the same in blocks and divides by the sum
    last, so the two differ by float rounding."""
    q, k, v = node.args[:3]
    options = {"attn_mask": (3, None), "dropout_p": (4, 0.0), "is_causal": (5, False), "enable_gqa": (7, False)}
    for name, (index, default) in options.items():
        value = _arg(node, index, name, default)
        if value != default:
            raise ConversionError(f"{ctx.source(node)}: scaled_dot_product_attention with {name}={value!r:.40} is not "
                                  f"supported (only {name}={default!r})")
    head = ctx.example(q).shape[-1]
    scale = _arg(node, 6, "scale")
    scale = 1.0 / float(np.sqrt(head)) if scale is None else float(scale)
    where = ctx.source(node)
    rank = ctx.example(k).dim()
    perm = list(range(rank))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    k_shape = list(ctx.example(k).shape)
    scores_shape = list(ctx.example(q).shape[:-1]) + [k_shape[-2]]

    def add(op: str, inputs: list[int], suffix: str, shape: list[int], ints: dict | None = None,
            floats: dict | None = None) -> int:
        return ctx.graph.add_node(op, inputs, where, f"{where}{suffix}", "float32", ints=ints or {}, floats=floats or {},
                                  expected_shape=shape)

    k_t = add("float_permute", [ctx.value(k, node)], "_k_t", [k_shape[p] for p in perm], ints={"perm": perm})
    scores = add("float_matmul", [ctx.value(q, node), k_t], "_scores", scores_shape)
    scaled = add("float_mul_scalar", [scores], "_scaled", scores_shape, floats={"scalar": scale})
    weights = add("float_softmax", [scaled], "_weights", scores_shape, ints={"axis": [-1]})
    return add("float_matmul", [weights, ctx.value(v, node)], "", list(ctx.example(node).shape))


def float_softmax(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """softmax of a float tensor along ``dim``: ``aten.softmax.int`` / ``aten._softmax`` (half_to_float must be
    False), ``torch.softmax``, ``F.softmax``, ``Tensor.softmax``."""
    dim = _arg(node, 1, "dim")
    if dim is None:
        raise ConversionError(f"{ctx.source(node)}: softmax without a dim is not supported (give dim)")
    if node.target is torch.ops.aten._softmax.default and node.args[2]:
        raise ConversionError(f"{ctx.source(node)}: aten._softmax with half_to_float=True is not supported")
    dtype = _arg(node, 2, "dtype") if node.target is not torch.ops.aten._softmax.default else None
    if dtype not in (None, torch.float32):
        raise ConversionError(f"{ctx.source(node)}: softmax with dtype={dtype} is not supported (float32 only)")
    return _add_float(ctx, node, "float_softmax", [node.args[0]], ints={"axis": [int(dim)]})


def float_layer_norm(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """layer norm of a float tensor over its last axes: ``nn.LayerNorm`` (its fields), or ``aten.layer_norm`` /
    ``F.layer_norm(x, normalized_shape, weight, bias, eps)``; a missing weight or bias is 1 or 0."""
    if node.op == "call_module":
        m = ctx.module(node)
        normalized, weight, bias, eps = m.normalized_shape, m.weight, m.bias, m.eps
    else:
        normalized, weight, bias = (ctx.example(_arg(node, i, name)) for i, name in
                                    ((1, "normalized_shape"), (2, "weight"), (3, "bias")))
        eps = _arg(node, 4, "eps", 1e-5)
    normalized = [int(d) for d in normalized]
    x_shape = list(ctx.example(node.args[0]).shape)
    if x_shape[len(x_shape) - len(normalized):] != normalized:
        raise ConversionError(f"{ctx.source(node)}: layer_norm's normalized_shape {normalized} is not the end of the "
                              f"input shape {x_shape}")

    def part(t: torch.Tensor | None, fill: float) -> np.ndarray:
        return np.full(normalized, fill, np.float32) if t is None else t.detach().float().reshape(normalized).numpy()

    where = ctx.source(node)
    return ctx.graph.add_normalization("float_layer_norm", ctx.value(node.args[0], node), where, where,
                                       part(weight, 1.0), part(bias, 0.0), {"normalized_rank": [len(normalized)]},
                                       float(eps), "float32", expected_shape=list(ctx.example(node).shape))


_GELU_APPROXIMATIONS = {"none": 0, "tanh": 1}


def float_gelu(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """GELU of a float tensor, erf form or (``approximate="tanh"``) tanh form: ``nn.GELU``, ``F.gelu``,
    ``aten.gelu``."""
    approximate = ctx.module(node).approximate if node.op == "call_module" else _arg(node, 1, "approximate", "none")
    if approximate not in _GELU_APPROXIMATIONS:
        raise ConversionError(f"{ctx.source(node)}: gelu with approximate={approximate!r} is not supported")
    return _add_float(ctx, node, "float_gelu", [node.args[0]], ints={"approximate": [_GELU_APPROXIMATIONS[approximate]]})


def float_matmul(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """Product of two float tensors of rank >= 2, batch axes broadcast: ``torch.matmul``, ``Tensor.matmul``,
    ``torch.bmm``, ``operator.matmul`` and their aten ops."""
    a, b = node.args[:2]
    ranks = [ctx.example(t).dim() if _is_tensor_arg(ctx, t) else None for t in (a, b)]
    if any(r is None or r < 2 for r in ranks):
        raise ConversionError(f"{ctx.source(node)} ({op_name(ctx.captured.module, node)}): matmul of operands of rank "
                              f"{ranks} is not supported (both must be tensors of rank >= 2)")
    return _add_float(ctx, node, "float_matmul", [a, b])


def _binary(op: str, scalar_op: str, description: str, scalar: Callable[[float], float] = float,
            swapped_scalar_op: str | None = None) -> FloatConverter:
    """The converter of a float binary op: two tensors -> ``op``; tensor and number -> ``scalar_op`` with the
    number mapped by ``scalar``; number and tensor -> ``swapped_scalar_op`` (None: refused)."""
    def convert(ctx: ConversionContext, node: torch.fx.Node) -> int:
        a, b = node.args[:2]
        alpha = _arg(node, 2, "alpha", 1)
        if float(alpha) != 1.0:
            raise ConversionError(f"{ctx.source(node)}: {op_name(ctx.captured.module, node)} with alpha={alpha} is "
                                  "not supported")
        rounding = node.kwargs.get("rounding_mode")
        if rounding is not None:
            raise ConversionError(f"{ctx.source(node)}: division with rounding_mode={rounding!r} is not supported")
        if _is_tensor_arg(ctx, a) and _is_tensor_arg(ctx, b):
            return _add_float(ctx, node, op, [a, b])
        if _is_tensor_arg(ctx, a) and isinstance(b, (int, float)):
            return _add_float(ctx, node, scalar_op, [a], floats={"scalar": scalar(b)})
        if _is_tensor_arg(ctx, b) and isinstance(a, (int, float)) and swapped_scalar_op:
            return _add_float(ctx, node, swapped_scalar_op, [b], floats={"scalar": float(a)})
        raise ConversionError(f"{ctx.source(node)} ({op_name(ctx.captured.module, node)}): operands "
                              f"{a!r:.40}, {b!r:.40} are not supported (two float tensors, or a tensor and a number)")
    convert.__doc__ = description
    return convert


# x - s is x + (-s) exactly in IEEE arithmetic; s + x and s * x commute exactly.
float_add = _binary("float_add", "float_add_scalar", "add of float tensors (alpha 1), or of a float tensor and a "
                    "number (``float_add_scalar``): ``x + y``, ``torch.add``, ``aten.add``",
                    swapped_scalar_op="float_add_scalar")
float_sub = _binary("float_sub", "float_add_scalar", "subtraction of float tensors (alpha 1), or of a number from "
                    "a float tensor (``float_add_scalar`` of its negative): ``x - y``, ``torch.sub``, ``aten.sub``",
                    scalar=lambda s: -float(s))
float_mul = _binary("float_mul", "float_mul_scalar", "product of float tensors, or of a float tensor and a number "
                    "(``float_mul_scalar``): ``x * y``, ``torch.mul``, ``aten.mul``", swapped_scalar_op="float_mul_scalar")
float_div = _binary("float_div", "float_div_scalar", "true division of float tensors, or of a float tensor by a "
                    "number (``float_div_scalar``): ``x / y``, ``torch.div``, ``aten.div``")


def float_island(float_converter: FloatConverter) -> FloatConverter:
    """The converter of a PT2E island ``dequantize -> op -> quantize`` whose op qnnpy has no integer form of:
    the quantized inputs dequantized, ``float_converter``'s float op, and a quantize to the island's output
    qparams, which is how PT2E defines the island's numerics."""
    def convert(ctx: ConversionContext, node: torch.fx.Node) -> int:
        where = ctx.source(node)
        outer = {}
        for a in node.all_input_nodes:
            if a.name in ctx.env and ctx.example(a).is_quantized:
                outer[a.name] = ctx.env[a.name]
                ctx.env[a.name] = ctx.graph.add_node("dequantize", [outer[a.name]], where, f"{where}_in", "float32")
        try:
            y = float_converter(ctx, node)
        finally:
            ctx.env.update(outer)
        return ctx.graph.add_node("quantize", [y], where, f"{where}_q", **ctx.quantized_output(node))
    convert.__doc__ = f"A PT2E island around an op with a float form only: {float_converter.__doc__}"
    return convert


# The fx spellings of the float binary ops of a traced model (``x + y``, ``x / 4.0``, ``x @ y``).
OPERATOR_FORMS = {operator.add: float_add, operator.sub: float_sub, operator.mul: float_mul,
                  operator.truediv: float_div, operator.matmul: float_matmul}

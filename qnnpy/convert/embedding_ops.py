"""Converters of the embedding lookups: integer indices in, float32 rows out (src/ops/embedding.cpp).

- ``nnq.Embedding`` / ``quantized::embedding_byte`` -> ``embedding``: the uint8 table with PyTorch's
  per-row float scale and zero point (``per_channel_affine_float_qparams``);
- ``nnq.EmbeddingBag`` / ``quantized::embedding_bag_byte`` -> ``embedding_bag``: the (weighted) sum
  of each bag's rows;
- ``nn.Embedding``, ``F.embedding``, ``aten.embedding`` left in float -> ``float_embedding``.

4-bit tables (``quint4x2``) and pruned tables are refused by name.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch
import torch.ao.nn.quantized as nnq
import torch.fx
import torch.nn.functional as F
from torch import nn

from qnnpy import _core
from qnnpy.convert.context import ConversionContext, op_name
from qnnpy.errors import ConversionError


def _arg(node: torch.fx.Node, index: int, name: str, default: Any = None) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _output_shape(ctx: ConversionContext, node: torch.fx.Node) -> list[int]:
    out = ctx.example(node)
    if not isinstance(out, torch.Tensor) or out.dtype != torch.float32 or out.is_quantized:
        raise ConversionError(f"{ctx.source(node)}: expected a float32 output of the lookup, got {getattr(out, 'dtype', out)!r}")
    return list(out.shape)


def _byte_table(ctx: ConversionContext, node: torch.fx.Node, packed: Any, pruned: Any) -> dict[str, np.ndarray]:
    """The uint8 table and its per-row float scale and zero point, from the module or the packed params."""
    if bool(pruned):
        raise ConversionError(f"{ctx.source(node)}: a pruned embedding table (pruned_weights=True) is not supported")
    if isinstance(packed, (nnq.Embedding, nnq.EmbeddingBag)):
        qweight = packed.weight()
    else:
        qweight = torch.ops.quantized.embedding_bag_unpack(packed)
    if qweight.dtype == torch.quint4x2:
        raise ConversionError(f"{ctx.source(node)} ({op_name(ctx.captured.module, node)}): 4-bit (quint4x2) "
                              "embedding tables are not supported; quantize the table to 8 bits (quint8)")
    if qweight.dtype != torch.quint8 or qweight.qscheme() != torch.per_channel_affine_float_qparams or qweight.dim() != 2:
        raise ConversionError(f"{ctx.source(node)}: the embedding table must be quint8 with per-row float qparams "
                              f"(float_qparams_weight_only_qconfig), got {qweight.dtype} / {qweight.qscheme()}")
    return {
        "weight": np.ascontiguousarray(qweight.int_repr().numpy()),
        "row_scale": qweight.q_per_channel_scales().to(torch.float32).numpy(),
        "row_zero_point": qweight.q_per_channel_zero_points().to(torch.float32).numpy(),
    }


def _index_inputs(ctx: ConversionContext, node: torch.fx.Node, args: list[Any]) -> list[int]:
    ids = []
    for a in args:
        v = ctx.example(a)
        if not isinstance(v, torch.Tensor) or v.dtype not in (torch.int64, torch.int32):
            raise ConversionError(f"{ctx.source(node)}: the indices / offsets of an embedding must be int64 or int32 "
                                  f"tensors, got {getattr(v, 'dtype', type(v).__name__)}")
        ids.append(ctx.value(a, node))
    return ids


def convert_quantized_embedding(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nnq.Embedding`` (8-bit table) or ``torch.ops.quantized.embedding_byte(packed, indices, pruned_weights)``."""
    if node.op == "call_module":
        table = _byte_table(ctx, node, ctx.module(node), False)
        indices = node.args[0]
    else:
        table = _byte_table(ctx, node, ctx.example(node.args[0]), ctx.example(_arg(node, 2, "pruned_weights", False)))
        indices = node.args[1]
    return _core.add_embedding(ctx.graph, "embedding", _index_inputs(ctx, node, [indices]), ctx.source(node),
                               ctx.source(node), table["weight"], table["row_scale"], table["row_zero_point"],
                               expected_shape=_output_shape(ctx, node))


def convert_quantized_embedding_bag(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nnq.EmbeddingBag`` (8-bit table) or ``torch.ops.quantized.embedding_bag_byte(packed, indices, offsets,
    scale_grad_by_freq, mode, pruned_weights, per_sample_weights, compressed_indices_mapping, include_last_offset)``.

    PyTorch computes the sum of each bag whatever the module's ``mode`` (its forward passes mode 0 and the
    op ignores the mode): the module converts to that sum, with a warning naming a mode other than "sum".
    """
    if node.op == "call_module":
        m = ctx.module(node)
        table = _byte_table(ctx, node, m, m.pruned_weights)
        indices, offsets = node.args[0], _arg(node, 1, "offsets")
        weights, mapping = _arg(node, 2, "per_sample_weights"), _arg(node, 3, "compressed_indices_mapping")
        include_last, mode = m.include_last_offset, m.mode
    else:
        table = _byte_table(ctx, node, ctx.example(node.args[0]), ctx.example(_arg(node, 5, "pruned_weights", False)))
        indices, offsets = node.args[1], _arg(node, 2, "offsets")
        weights, mapping = _arg(node, 6, "per_sample_weights"), _arg(node, 7, "compressed_indices_mapping")
        include_last, mode = ctx.example(_arg(node, 8, "include_last_offset", False)), "sum"
    if mapping is not None:
        raise ConversionError(f"{ctx.source(node)}: compressed_indices_mapping (pruned tables) is not supported")
    if mode != "sum":
        warnings.warn(f"{ctx.source(node)}: quantized EmbeddingBag with mode={mode!r} computes the sum of each bag in "
                      "PyTorch (its forward passes mode 0); converted as that sum", stacklevel=2)
    inputs = _index_inputs(ctx, node, [indices] + ([offsets] if offsets is not None else []))
    if weights is not None:
        if ctx.example(weights).dtype != torch.float32:
            raise ConversionError(f"{ctx.source(node)}: per_sample_weights must be float32, got {ctx.example(weights).dtype}")
        inputs.append(ctx.value(weights, node))
    return _core.add_embedding(ctx.graph, "embedding_bag", inputs, ctx.source(node), ctx.source(node), table["weight"],
                               table["row_scale"], table["row_zero_point"],
                               ints={"include_last_offset": [int(bool(include_last))]},
                               expected_shape=_output_shape(ctx, node))


def convert_float_embedding(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """``nn.Embedding`` or ``F.embedding(indices, weight)`` left in float, ``torch.embedding`` /
    ``aten.embedding(weight, indices, ...)`` (TorchScript, PT2E): a float32 table lookup. ``max_norm`` (which rewrites the table while looking up) is refused."""
    if node.op == "call_module":
        m = ctx.module(node)
        weight, indices, max_norm = m.weight, node.args[0], m.max_norm
    elif node.target is F.embedding:
        weight, indices, max_norm = ctx.example(_arg(node, 1, "weight")), node.args[0], _arg(node, 3, "max_norm")
    else:
        weight, indices, max_norm = ctx.example(node.args[0]), node.args[1], None
    if max_norm is not None:
        raise ConversionError(f"{ctx.source(node)}: an embedding with max_norm={max_norm} renormalizes its table while "
                              "looking up; not supported")
    if not isinstance(weight, torch.Tensor) or weight.dtype != torch.float32 or weight.dim() != 2:
        raise ConversionError(f"{ctx.source(node)}: the embedding table must be a float32 (rows, dim) tensor, got "
                              f"{getattr(weight, 'dtype', type(weight).__name__)}")
    table = np.ascontiguousarray(weight.detach().numpy())
    return _core.add_embedding(ctx.graph, "float_embedding", _index_inputs(ctx, node, [indices]), ctx.source(node),
                               ctx.source(node), table, expected_shape=_output_shape(ctx, node))


EMBEDDING_CONVERTERS: dict[Any, Any] = {
    nnq.Embedding: convert_quantized_embedding,
    torch.ops.quantized.embedding_byte: convert_quantized_embedding,
    nnq.EmbeddingBag: convert_quantized_embedding_bag,
    torch.ops.quantized.embedding_bag_byte: convert_quantized_embedding_bag,
    nn.Embedding: convert_float_embedding,
    F.embedding: convert_float_embedding,
}

# Modules whose weight is quantized while their output is float: a model made of them (and float ops) is
# still a quantized model.
WEIGHT_ONLY_QUANTIZED = (nnq.Embedding, nnq.EmbeddingBag, torch.ops.quantized.embedding_byte,
                         torch.ops.quantized.embedding_bag_byte)

"""Scaled dot-product attention (``aten.scaled_dot_product_attention``) as one ``float_attention`` node, and the
graph rewrite that lets it read grouped-query attention's key / value heads in place.

transformers' ``repeat_kv`` copies each key / value head once per query head of its group
(``unsqueeze(2) -> expand -> reshape``) before calling SDPA; :func:`fold_repeated_kv` hands SDPA the heads
themselves with ``enable_gqa=True``, which PyTorch defines as the same computation (query head ``h`` reads
key / value head ``h // (Hq / Hk)``), and drops the copies. Attention of another rank than 4 decomposes into
matmuls and a softmax as before (:func:`converts_whole`)."""
from __future__ import annotations

import math
from typing import Any

import torch
import torch.fx

from qnnpy.capture.fx_capture import CapturedGraph
from qnnpy.convert.context import ConversionContext
from qnnpy.convert.float_args import bind, operands, refuse

_aten = torch.ops.aten
ATTENTION = _aten.scaled_dot_product_attention.default
_RESHAPES = (_aten.reshape.default, _aten.view.default, _aten._unsafe_view.default)


def converts_whole(node: torch.fx.Node, values: dict[str, Any]) -> bool:
    """Whether ``float_attention`` takes an attention node as it is: query, key and value of rank 4."""
    args = bind(node)
    return all(isinstance(args[name], torch.fx.Node) and values[args[name].name].dim() == 4
               for name in ("query", "key", "value"))


def convert_attention(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa) of float32
    tensors of rank 4: ``float_attention`` (a bool or float mask; the scale defaults to 1 / sqrt(E))."""
    args = bind(node)
    if args["dropout_p"]:
        raise refuse(ctx, node, f"attention with dropout_p={args['dropout_p']} samples random numbers")
    q, k, v, mask = args["query"], args["key"], args["value"], args["attn_mask"]
    heads, kv_heads = ctx.example(q).shape[1], ctx.example(k).shape[1]
    if heads != kv_heads and not args["enable_gqa"]:
        raise refuse(ctx, node, f"{heads} query heads and {kv_heads} key heads without enable_gqa")
    scale = args["scale"] if args["scale"] is not None else 1.0 / math.sqrt(ctx.example(q).shape[-1])
    inputs = operands(ctx, node, [q, k, v], "float32")
    if mask is not None:
        dtype = ctx.example(mask).dtype
        if dtype not in (torch.bool, torch.float32):
            raise refuse(ctx, node, f"an attention mask of {dtype} is not supported (bool or float32)")
        inputs.append(ctx.value(mask, node))
    return ctx.add_plain(node, "float_attention", inputs, ints={"causal": [int(bool(args["is_causal"]))]},
                         floats={"scale": float(scale)})


def _repeated_heads(node: Any, values: dict[str, Any]) -> tuple[torch.fx.Node, int, list[torch.fx.Node]] | None:
    """(heads, repeats, the copying nodes) where ``node`` is ``heads`` (N, Hk, S, E) repeated per group as
    transformers' repeat_kv does: reshape(expand(unsqueeze(heads, 2), (N, Hk, r, S, E)), (N, Hk * r, S, E)),
    a contiguous clone allowed before the reshape; None otherwise."""
    if not isinstance(node, torch.fx.Node) or node.target not in _RESHAPES:
        return None
    chain = [node]
    source = node.args[0]
    if isinstance(source, torch.fx.Node) and source.target is _aten.clone.default:
        chain.append(source)
        source = source.args[0]
    if not (isinstance(source, torch.fx.Node) and source.target is _aten.expand.default):
        return None
    unsqueezed = source.args[0]
    if not (isinstance(unsqueezed, torch.fx.Node) and unsqueezed.target is _aten.unsqueeze.default
            and unsqueezed.args[1] in (2, -3)):
        return None
    heads = unsqueezed.args[0]
    if not isinstance(heads, torch.fx.Node) or values[heads.name].dim() != 4:
        return None
    n, hk, s, e = values[heads.name].shape
    expanded, repeated = values[source.name].shape, values[node.name].shape
    if tuple(expanded) != (n, hk, expanded[2], s, e) or tuple(repeated) != (n, hk * expanded[2], s, e):
        return None
    return heads, int(expanded[2]), [*chain, source, unsqueezed]


def fold_repeated_kv(captured: CapturedGraph) -> None:
    """Rewrite, in place, each attention node whose key and value are repeat_kv copies to read the heads
    themselves with ``enable_gqa=True``, and erase the copies nothing else reads."""
    gm, values = captured.module, captured.values
    for node in list(gm.graph.nodes):
        if node.target is not ATTENTION:
            continue
        args = bind(node)
        key, value = _repeated_heads(args["key"], values), _repeated_heads(args["value"], values)
        if key is None or value is None or key[1] != value[1]:
            continue
        node.args = (args["query"], key[0], value[0], *node.args[3:])
        node.kwargs = {**node.kwargs, "enable_gqa": True}
        for copy in [*key[2], *value[2]]:
            if not copy.users:
                gm.graph.erase_node(copy)
    gm.graph.lint()
    gm.recompile()

"""Dynamic quantization: the converters of ``torch.ao.nn.quantized.dynamic.Linear`` in its forms, and the
refusal of the dynamic modules qnnpy does not convert (LSTM, GRU, RNN cells, dynamic convs, float16 weights).

A dynamic linear keeps float activations: PyTorch quantizes its input per call with qparams chosen from
the input's min and max (fbgemm's rule), multiplies by the int8 weight and adds the float bias. It becomes
one ``dynamic_linear`` node, float in and float out (``src/ops/dynamic.cpp``; the Relax form is described
in docs/user_guide.md, "Dynamic quantization").
"""
from __future__ import annotations

from typing import Any

import torch
import torch.ao.nn.intrinsic.quantized.dynamic as nniqd
import torch.ao.nn.quantized.dynamic as nnqd
import torch.fx

from qnnpy import _core
from qnnpy.convert.context import ConversionContext, op_name
from qnnpy.convert.op_form import OpForm
from qnnpy.convert.torch_weight_reader import linear_state
from qnnpy.errors import ConversionError

# The TorchScript kinds of the supported dynamic ops; every other dynamic kind is refused by name.
_SUPPORTED_KINDS = ("quantized::linear_dynamic", "quantized::linear_relu_dynamic")
_SUPPORTED_MODULES = (nnqd.Linear, nniqd.LinearReLU)


def _float_input(ctx: ConversionContext, node: torch.fx.Node) -> int:
    x = ctx.example(node.args[0])
    if not isinstance(x, torch.Tensor) or x.dtype != torch.float32:
        raise ConversionError(f"{ctx.source(node)} ({op_name(ctx.captured.module, node)}): dynamic linear needs a "
                              f"float32 input, got {getattr(x, 'dtype', type(x).__name__)}")
    return ctx.value(node.args[0], node)


def _module_state(ctx: ConversionContext, node: torch.fx.Node) -> tuple[Any, bool]:
    """The packed params of a dynamic Linear / LinearReLU module and the reduce_range its forward passes."""
    m = ctx.module(node)
    if m._packed_params.dtype != torch.qint8:
        raise ConversionError(f"{ctx.source(node)} ({type(m).__name__}): dynamic linear with {m._packed_params.dtype} "
                              "weights is not supported (qnnpy converts qint8 dynamic linears)")
    # nnqd.Linear passes reduce_range=True from version 4 of its state on (False before); LinearReLU always.
    reduce_range = isinstance(m, nniqd.LinearReLU) or not (m.version is None or m.version < 4)
    return m._packed_params._packed_params, reduce_range


def convert_dynamic_linear(ctx: ConversionContext, node: torch.fx.Node, relu: bool) -> int:
    """Dynamic quantized linear: float input, int8 weight, float bias, float output; ``relu`` fuses a ReLU."""
    where = ctx.source(node)
    x = _float_input(ctx, node)
    if node.op == "call_module":
        packed, reduce_range = _module_state(ctx, node)
    else:
        packed = ctx.example(node.args[1])
        reduce_range = bool(ctx.example(node.args[2] if len(node.args) > 2 else node.kwargs.get("reduce_range", False)))
    weight, bias = linear_state(packed, where)
    return _core.add_dynamic_linear(
        ctx.graph, x, where, where, weight.data, weight.scale, weight.zero_point, weight.axis, bias, relu,
        reduce_range, expected_shape=list(ctx.example(node).shape))


def is_dynamic_quantized_op(key: Any) -> bool:
    """Whether a converter table key is a dynamic quantized op (a model with one is not a float model)."""
    return key in DYNAMIC_CONVERTERS


DYNAMIC_CONVERTERS: dict[Any, Any] = {
    nnqd.Linear: OpForm(convert_dynamic_linear, "Dynamic quantized ``Linear``", relu=False),
    nniqd.LinearReLU: OpForm(
        convert_dynamic_linear, "Dynamic quantized ``LinearReLU``: linear with the ReLU fused", relu=True),
    torch.ops.quantized.linear_dynamic: OpForm(
        convert_dynamic_linear, "``torch.ops.quantized.linear_dynamic(x, packed_params, reduce_range)``", relu=False),
    torch.ops.quantized.linear_relu_dynamic: OpForm(
        convert_dynamic_linear, "``torch.ops.quantized.linear_relu_dynamic(x, packed_params, reduce_range)``",
        relu=True),
}


def _node_kinds(nodes: Any) -> Any:
    """Kinds of TorchScript nodes, including those inside if/loop blocks."""
    for n in nodes:
        yield n.kind()
        for block in n.blocks():
            yield from _node_kinds(block.nodes())


def _is_unsupported_dynamic_kind(kind: str) -> bool:
    """A dynamic kind without a converter. ``*_dynamic_fp16`` is not listed: every scripted ``nnqd.Linear``
    holds a ``linear_dynamic_fp16`` call in the branch its qint8 weights never take; a model that runs one
    fails as an unsupported op naming it."""
    if kind in _SUPPORTED_KINDS:
        return False
    return kind.endswith("_dynamic") or any(word in kind for word in ("quantized_lstm", "quantized_gru", "quantized_rnn"))


def refuse_unsupported_dynamic(model: torch.nn.Module) -> None:
    """Raise ConversionError naming every dynamic quantized module (or TorchScript op) qnnpy does not convert:
    LSTM, GRU, LSTMCell, GRUCell, RNNCell, the dynamic convs and float16 dynamic linears."""
    if isinstance(model, torch.jit.ScriptModule):
        kinds = sorted({k for k in _node_kinds(model.inlined_graph.nodes()) if _is_unsupported_dynamic_kind(k)})
        found = [(type(model).__name__, kind) for kind in kinds]
    else:
        found = [(path, type(m).__name__) for path, m in model.named_modules()
                 if type(m).__module__.startswith(nnqd.__name__) and not isinstance(m, _SUPPORTED_MODULES)]
        found += [(path, f"{type(m).__name__} with {m._packed_params.dtype} weights")
                  for path, m in model.named_modules()
                  if isinstance(m, _SUPPORTED_MODULES) and m._packed_params.dtype != torch.qint8]
    if found:
        listed = ", ".join(f"{path or '(model)'} ({name})" for path, name in found)
        raise ConversionError(
            f"{type(model).__name__} holds dynamic quantized ops qnnpy does not convert: {listed}. qnnpy converts "
            "dynamic quantized Linear and LinearReLU with qint8 weights; dynamic LSTM, GRU and RNN cells, dynamic "
            "convs and float16 weights have no converter (their PyTorch kernels are not reproduced)."
        )

"""Capture of models quantized with torchao's ``quantize_`` (``torchao.quantization.quantize_``).

``quantize_`` replaces the weights of a model's linears by torchao tensor subclasses (``Int8Tensor``,
``IntxUnpackedToInt8Tensor``, ...) whose ``F.linear`` quantizes the input, multiplies and rescales. Neither
torch.fx nor ``torch.jit.trace`` captures such a model, and ``torch.export`` inlines the subclass's
computation into dozens of aten ops that depend on the exporting CPU. So qnnpy captures it with
``torch.export`` while each quantized linear calls one opaque op, ``qnnpy::torchao_linear(x, layer)``
(an embedding ``qnnpy::torchao_embedding(indices, layer)``), whose implementation is the layer's own
forward (torchao's arithmetic runs unchanged, so the recorded example outputs are torchao's): the captured
graph holds one node per quantized layer, the converter reads the layer's weight subclass
(``node.meta["torchao_layer"]``) and the rest of the model is a float aten graph, converted as PT2E float
ops are.
"""
from __future__ import annotations

import contextlib
import types
import warnings
from typing import Any, Iterator

import torch
import torch.nn.functional as F
from torch import nn

from qnnpy.capture.explicit_state import ExplicitState, make_state_explicit
from qnnpy.capture.fx_capture import CapturedGraph
from qnnpy.capture.pt2e_capture import capture_pt2e
from qnnpy.errors import ConversionError

# The layers of the capture in progress, by the integer torchao_linear receives.
_LAYERS: dict[int, nn.Module] = {}
LAYER_META = "torchao_layer"


@torch.library.custom_op("qnnpy::torchao_linear", mutates_args=())
def torchao_linear(x: torch.Tensor, layer: int) -> torch.Tensor:
    """The forward of the torchao-quantized linear registered as ``layer`` (torchao's own arithmetic)."""
    module = _LAYERS[layer]
    return F.linear(x, module.weight, module.bias)


@torchao_linear.register_fake
def _torchao_linear_shape(x: torch.Tensor, layer: int) -> torch.Tensor:
    return x.new_empty((*x.shape[:-1], _LAYERS[layer].weight.shape[0]))


@torch.library.custom_op("qnnpy::torchao_embedding", mutates_args=())
def torchao_embedding(indices: torch.Tensor, layer: int) -> torch.Tensor:
    """The lookup of the torchao-quantized embedding registered as ``layer`` (torchao's own arithmetic)."""
    return F.embedding(indices, _LAYERS[layer].weight)


@torchao_embedding.register_fake
def _torchao_embedding_shape(indices: torch.Tensor, layer: int) -> torch.Tensor:
    return indices.new_empty((*indices.shape, _LAYERS[layer].weight.shape[1]), dtype=_LAYERS[layer].weight.dtype)


TORCHAO_LINEAR = torch.ops.qnnpy.torchao_linear.default
TORCHAO_EMBEDDING = torch.ops.qnnpy.torchao_embedding.default
# The module types captured whole, each through its op.
_ROUTES = {nn.Linear: TORCHAO_LINEAR, nn.Embedding: TORCHAO_EMBEDDING}


def _is_torchao_tensor(value: Any) -> bool:
    """Whether ``value`` is one of torchao's quantized tensor subclasses (known by their common base class, so
    that qnnpy imports torchao only when the model uses it)."""
    return isinstance(value, torch.Tensor) and any(c.__name__ == "TorchAOBaseTensor" and c.__module__.startswith("torchao")
                                                   for c in type(value).__mro__)


def torchao_layers(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """The (path, module) of every module whose ``weight`` is a torchao quantized tensor."""
    if isinstance(model, torch.jit.ScriptModule):
        return []
    return [(path, m) for path, m in model.named_modules() if _is_torchao_tensor(getattr(m, "weight", None))]


@contextlib.contextmanager
def _routed_through_torchao_ops(layers: list[tuple[str, nn.Module]]) -> Iterator[dict[int, str]]:
    """Each layer's forward calls its op (``qnnpy::torchao_linear``, ``qnnpy::torchao_embedding``) for the time of
    the block; yields layer -> path."""
    paths: dict[int, str] = {}
    for index, (path, module) in enumerate(layers):
        _LAYERS[index] = module
        paths[index] = path
        op = _ROUTES[type(module)]
        module.forward = types.MethodType(lambda self, x, _i=index, _op=op: _op(x, _i), module)
    try:
        yield paths
    finally:
        for index, (_, module) in enumerate(layers):
            del module.forward
            _LAYERS.pop(index, None)


@contextlib.contextmanager
def _without_kv_cache(model: nn.Module) -> Iterator[None]:
    """A Hugging Face model (``config.use_cache``) returns its KV cache as a cache object torch.export cannot
    flatten: for the time of the block it computes without one (logits and hidden states are unchanged)."""
    config = getattr(model, "config", None)
    use_cache = getattr(config, "use_cache", None)
    if use_cache:
        config.use_cache = False
    try:
        yield
    finally:
        if use_cache:
            config.use_cache = use_cache


@contextlib.contextmanager
def _exported(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterator[torch.fx.GraphModule]:
    """``model`` exported with each torchao-quantized linear or embedding as one ``qnnpy::torchao_linear`` /
    ``qnnpy::torchao_embedding`` node (``node.meta["torchao_layer"]``: its path and module); the ops run torchao's
    forward while the block lasts."""
    layers = torchao_layers(model)
    warnings.warn(f"{type(model).__name__} holds torchao quantized weights ({len(layers)} layers, e.g. "
                  f"{layers[0][0]}: {type(layers[0][1].weight).__name__}): captured with torch.export (torch.fx and "
                  "torch.jit.trace cannot trace tensor subclasses)", stacklevel=5)
    with _routed_through_torchao_ops(layers) as paths, _without_kv_cache(model):
        try:
            with torch.no_grad():
                program = torch.export.export(model, args, kwargs, strict=False)
        except Exception as e:
            raise ConversionError(f"torch.export could not capture {type(model).__name__}: {type(e).__name__}: "
                                  f"{str(e).splitlines()[0] if str(e) else ''}") from e
        module = program.module()
        for node in module.graph.nodes:
            if node.target in (TORCHAO_LINEAR, TORCHAO_EMBEDDING):
                layer = node.args[1]
                node.meta[LAYER_META] = (paths[layer], _LAYERS[layer])
        yield module


def capture_torchao(model: nn.Module, example_inputs: tuple[torch.Tensor, ...]) -> CapturedGraph:
    """Export ``model`` with each torchao-quantized layer whole (see the module docstring), run it on
    ``example_inputs`` and return the captured graph. Every quantized module is an ``nn.Linear`` or an
    ``nn.Embedding`` (qnnpy.convert.torchao_ops.check_torchao_layers checks it first)."""
    with _exported(model, example_inputs, {}) as module:
        captured = capture_pt2e(module, example_inputs)
    captured.kind = type(model).__name__
    return captured


def capture_torchao_with_state(model: nn.Module, example_kwargs: dict[str, torch.Tensor]) -> tuple[CapturedGraph, ExplicitState]:
    """As :func:`capture_torchao` for a model called with keyword arguments that writes buffers in place (a static
    KV cache): the buffers become explicit state, the graph's first inputs and last outputs
    (qnnpy.capture.explicit_state)."""
    with _exported(model, (), example_kwargs) as module:
        state = make_state_explicit(module, model)
        captured = capture_pt2e(module, (*(v.clone() for v in state.values), *example_kwargs.values()))
    captured.kind = type(model).__name__
    return captured, state


def refuse_exported_torchao(model: Any) -> None:
    """A ``torch.export`` program of a torchao ``quantize_`` model has the subclass's computation inlined (its
    choose_qparams / quantize / int_mm ops, for the exporting CPU): refused with the way through."""
    ops = sorted({str(n.target) for n in model.graph.nodes
                  if n.op == "call_function" and str(n.target).startswith("torchao.")})
    if ops:
        raise ConversionError(
            f"{type(model).__name__} is a torch.export program of a torchao quantize_ model (it calls {', '.join(ops)}). "
            "qnnpy reads torchao's quantized weights from the model itself: pass the eager model after quantize_ "
            "to from_torch, which exports it with each quantized linear kept whole.")

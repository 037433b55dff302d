"""Buffers a model writes in place (a static KV cache and its position counters) as explicit state.

``torch.export`` of transformers' static-cache wrapper keeps the cache as buffers that ``index_copy_`` /
``copy_`` write during the call: state no static module can hold. This rewrite turns each buffer the graph
writes into a graph input (before the model's own inputs) and appends its value after the writes to the
graph's outputs, so that a caller carries the state from one call to the next. The capture (pt2e_capture)
then reads each in-place write as its out-of-place op, and the output of the buffer as the last value written.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.fx

from qnnpy.capture.aten_targets import functional


@dataclass
class ExplicitState:
    """The state a rewritten graph takes first and returns last: each buffer's path and its current value."""

    names: list[str]
    values: list[torch.Tensor]


def _written_buffers(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    """The ``get_attr`` nodes of tensors that an in-place op writes (its first argument), in graph order: buffers,
    or the constants torch.export lifts for a tensor it reached through another object (transformers' cache layers
    hold the tensors the export module registers as buffers)."""
    written = []
    for node in gm.graph.nodes:
        if node.op == "get_attr" and any(
                user.op == "call_function" and user.args and user.args[0] is node and functional(user.target) is not user.target
                for user in node.users):
            written.append(node)
    return written


def _attribute(gm: torch.fx.GraphModule, target: str) -> torch.Tensor:
    *path, name = target.split(".")
    return getattr(gm.get_submodule(".".join(path)) if path else gm, name)


def make_state_explicit(gm: torch.fx.GraphModule, model: torch.nn.Module) -> ExplicitState:
    """Rewrite ``gm`` (exported from ``model``) in place: each tensor it writes becomes a placeholder ahead of the
    model's inputs and an output after the model's outputs (a flat tuple); returns the state's names (the path of
    ``model``'s buffer sharing the tensor's storage, else the graph's attribute) and initial values."""
    buffer_names = {b.data_ptr(): name for name, b in model.named_buffers()}
    buffers = _written_buffers(gm)
    first = next(n for n in gm.graph.nodes if n.op == "placeholder")
    output = next(n for n in gm.graph.nodes if n.op == "output")
    state = ExplicitState([], [])
    placeholders = []
    for node in buffers:
        value = _attribute(gm, str(node.target))
        name = buffer_names.get(value.data_ptr(), str(node.target)).replace(".", "_")
        state.names.append(name)
        state.values.append(value.detach().clone())
        with gm.graph.inserting_before(first):
            placeholder = gm.graph.placeholder(name)
        placeholder.meta = dict(node.meta)
        node.replace_all_uses_with(placeholder)
        gm.graph.erase_node(node)
        placeholders.append(placeholder)
    outputs = output.args[0]
    outputs = tuple(outputs) if isinstance(outputs, (tuple, list)) else (outputs,)
    output.args = ((*outputs, *placeholders),)
    gm.graph._codegen = torch.fx.graph.CodeGen()  # flat inputs and outputs: the export's pytree specs no longer fit
    gm.recompile()
    return state

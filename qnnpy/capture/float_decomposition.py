"""Float ops without a converter, decomposed into PyTorch's Core ATen opset; constants folded.

A captured graph (FX, TorchScript or PT2E front end) may call ops qnnpy has no converter of:
``F.softplus``, ``torch.roll``, ``Tensor.masked_fill``, a float ``nn.Module`` it does not know... Each
such node computing in float (no quantized tensor in or out) is traced once on its example inputs
with ``make_fx`` and PyTorch's core decomposition table (what ``ExportedProgram.run_decompositions``
uses), and replaced by the aten ops it decomposes into; only the float parts are decomposed, so the
quantized islands stay as the quantizer made them. Nodes that compute from constants alone (and
shape-only readers of the inputs: ``new_zeros``, ``full_like``, ...) are folded into constants: the
index arithmetic of a decomposed ``roll``, a Swin attention mask, a ``position_ids`` buffer sliced.
"""
from __future__ import annotations

import operator
from typing import Any, Callable

import torch
import torch.fx
from torch._decomp import core_aten_decompositions
from torch.fx.experimental.proxy_tensor import make_fx

from qnnpy.capture.aten_targets import folded_value, functional, is_random, target_name
from qnnpy.capture.fx_capture import CapturedGraph, node_source

_CALLS = ("call_function", "call_method", "call_module")
# Ops whose output depends on their first argument's shape and dtype only, not its values.
_SHAPE_ONLY = {"new_zeros", "new_ones", "new_full", "new_empty", "new_empty_strided", "zeros_like", "ones_like",
               "full_like", "empty_like", "rand_like", "randn_like", "size", "sym_size", "dim", "numel"}
_MAX_ROUNDS = 8


def _tensors(value: Any) -> list[torch.Tensor] | None:
    """The tensors of a tensor or a tuple / list of tensors; None for anything else."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return list(value)
    return None


def _computes_in_float(node: torch.fx.Node, values: dict[str, Any]) -> bool:
    """A call whose output and tensor inputs are unquantized tensors (tuples of them included)."""
    if node.op not in _CALLS:
        return False
    out = _tensors(values.get(node.name))
    if out is None or any(t.is_quantized for t in out):
        return False
    for a in node.all_input_nodes:
        v = values.get(a.name)
        if isinstance(v, torch.ScriptObject) or (isinstance(v, torch.Tensor) and v.is_quantized):
            return False
    return not (node.op == "call_module" and type(node.graph.owning_module.get_submodule(node.target)).__module__
                .startswith("torch.ao.nn"))


def fold_constants(gm: torch.fx.GraphModule, values: dict[str, Any]) -> None:
    """Replace every unquantized tensor computed from constants alone (``get_attr`` nodes, and the shapes of
    other values) by a ``get_attr`` of its recorded value (zeros for ``empty`` and its kin, whose values are
    undefined). Random ops are never folded."""
    constant: set[torch.fx.Node] = set()
    for node in list(gm.graph.nodes):
        if node.op == "get_attr":
            constant.add(node)
            continue
        if node.op not in _CALLS or is_random(node):
            continue
        inputs = node.all_input_nodes
        if target_name(node) in _SHAPE_ONLY and inputs and node.args and node.args[0] is inputs[0]:
            inputs = inputs[1:]
        if not all(a in constant for a in inputs):
            continue
        value = values.get(node.name)
        if not isinstance(value, torch.Tensor):
            if not isinstance(value, torch.ScriptObject):
                constant.add(node)  # a number or a shape: its users may still be constant
            continue
        if value.is_quantized or node.op == "call_module":
            continue
        value = folded_value(node, value)
        name = _unique_attribute(gm, f"_folded_{node.name}")
        gm.register_buffer(name, value, persistent=False)
        with gm.graph.inserting_before(node):
            folded = gm.graph.get_attr(name)
        folded.meta = dict(node.meta)
        values[folded.name] = value
        node.replace_all_uses_with(folded)
        gm.graph.erase_node(node)
        constant.add(folded)


def _unique_attribute(gm: torch.fx.GraphModule, base: str) -> str:
    name = base
    k = 1
    while hasattr(gm, name):
        name, k = f"{base}_{k}", k + 1
    return name


def _call(gm: torch.fx.GraphModule, node: torch.fx.Node, inputs: list[torch.fx.Node],
          baked: dict[torch.fx.Node, Any]) -> Callable[..., Any]:
    """The node's computation as a function of the values of ``inputs``, in order; the other input nodes (sizes,
    numbers) take their recorded values in ``baked``."""

    def run(*tensors: Any) -> Any:
        env = {**baked, **dict(zip(inputs, tensors))}
        args = torch.fx.map_arg(node.args, env.__getitem__)
        kwargs = torch.fx.map_arg(node.kwargs, env.__getitem__)
        if node.op == "call_method":
            return getattr(args[0], node.target)(*args[1:], **kwargs)
        if node.op == "call_module":
            return gm.get_submodule(node.target)(*args, **kwargs)
        return node.target(*args, **kwargs)
    return run


def _flat_inputs(gm: torch.fx.GraphModule, inputs: list[torch.fx.Node], values: dict[str, Any]) -> list[torch.fx.Node]:
    """The nodes of make_fx's placeholders, in order: a tensor input itself, the parts of a tuple input (a split's
    result read whole) as getitem nodes."""
    flat = []
    for a in inputs:
        parts = _tensors(values[a.name])
        if isinstance(values[a.name], torch.Tensor):
            flat.append(a)
            continue
        for i, part in enumerate(parts):
            item = gm.graph.call_function(operator.getitem, (a, i))
            item.meta = dict(a.meta)
            values[item.name] = part
            flat.append(item)
    return flat


def _traced(run: Callable[..., Any], examples: list[Any], target: Any) -> torch.fx.GraphModule | None:
    """``run`` traced into aten ops: first at the level torch.export records (a Python function or module becomes
    the aten ops it calls: ``torch.matmul`` -> ``aten.matmul``), then, for an aten op that stays itself, down to
    the Core ATen opset. None when neither changes anything (or make_fx cannot trace it)."""
    for options in ({"pre_dispatch": True}, {"decomposition_table": core_aten_decompositions()}):
        try:
            with torch.no_grad():
                sub = make_fx(run, **options)(*examples)
        except Exception:  # noqa: BLE001  (an op make_fx cannot trace stays, and is reported as unsupported)
            return None
        sub.graph.eliminate_dead_code()  # the parts of multi-output ops nothing reads (a layer norm's mean and rstd)
        calls = [n for n in sub.graph.nodes if n.op == "call_function"]
        if not (len(calls) == 1 and calls[0].target == target):
            return sub
    return None


def _decompose(gm: torch.fx.GraphModule, node: torch.fx.Node, values: dict[str, Any]) -> bool:
    """Replace ``node`` by the core aten ops it decomposes into; False when it does not decompose."""
    out = values[node.name]
    if isinstance(out, (tuple, list)) and not all(u.target is operator.getitem for u in node.users):
        return False
    inputs = [a for a in node.all_input_nodes if _tensors(values[a.name]) is not None]
    baked = {a: values[a.name] for a in node.all_input_nodes if a not in inputs}
    examples = [values[a.name] for a in inputs]
    sub = _traced(_call(gm, node, inputs, baked), examples, node.target)
    if sub is None:
        return False
    recorded: dict[torch.fx.Node, Any] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> Any:
            recorded[n] = super().run_node(n)
            return recorded[n]

    with torch.no_grad():
        Recorder(sub).run(*examples)
    env: dict[torch.fx.Node, Any] = {}
    result: Any = None
    with gm.graph.inserting_before(node):
        placeholders = iter(_flat_inputs(gm, inputs, values))
        for s in sub.graph.nodes:
            if s.op == "placeholder":
                env[s] = next(placeholders)
                continue
            if s.op == "output":
                result = torch.fx.map_arg(s.args[0], env.__getitem__)
                continue
            if s.op == "get_attr":
                name = _unique_attribute(gm, f"_{node.name}_{s.target}")
                gm.register_buffer(name, getattr(sub, s.target), persistent=False)
                new = gm.graph.get_attr(name)
            else:
                new = gm.graph.create_node(s.op, functional(s.target), torch.fx.map_arg(s.args, env.__getitem__),
                                           torch.fx.map_arg(s.kwargs, env.__getitem__), name=f"{node.name}_{s.name}")
            new.meta = {k: v for k, v in node.meta.items() if k in ("nn_module_stack", "stack_trace")}
            new.meta["source"] = node_source(node)
            values[new.name] = recorded[s]
            env[s] = new
            if functional(s.target) is not s.target:  # an in-place op: later readers of what it wrote read it
                env[s.args[0]] = new
    if isinstance(out, (tuple, list)):
        for user in list(node.users):
            user.replace_all_uses_with(result[user.args[1]])
            gm.graph.erase_node(user)
    else:
        node.replace_all_uses_with(result)
    gm.graph.erase_node(node)
    return True


def decompose_float_ops(captured: CapturedGraph, convertible: Callable[[torch.fx.Node], bool]) -> CapturedGraph:
    """Fold constants and decompose each float node ``convertible`` refuses, until nothing changes; the graph
    and its recorded values are updated in place."""
    gm, values = captured.module, captured.values
    for _ in range(_MAX_ROUNDS):
        fold_constants(gm, values)
        changed = False
        for node in list(gm.graph.nodes):
            if _computes_in_float(node, values) and not convertible(node) and not is_random(node):
                changed = _decompose(gm, node, values) or changed
        if not changed:
            break
    gm.graph.lint()
    gm.recompile()
    return captured

"""Capture of PT2E models: ``torch.export`` + torchao's ``prepare_pt2e`` / ``convert_pt2e``.

A converted PT2E graph holds plain aten ops between ``quantized_decomposed``
quantize / dequantize ops, int8 weights as constants (``fold_quantize=True``) or as a
``quantize_per_channel`` of the float weight (``fold_quantize=False``), and float biases.
This front end runs the graph once on the example inputs, then rewrites it into the
form the converter table reads:

- an *island* ``dequantize -> aten op [-> activation] -> quantize`` becomes the aten op
  on the quantized inputs, whose example output is the quantized tensor of the island's
  quantize (a :class:`~qnnpy.quantized_types.QuantizedValue`, whose qparams converters read); a ReLU after
  conv / linear / add is fused (``meta["pt2e_fused_relu"]``), another activation stays a
  node on the quantized value with the same qparams (clamping commutes with quantizing);
- a weight (a dequantize of a constant) becomes one ``get_attr`` of a quantized value
  holding the int8 values exactly;
- every other aten op keeps its float example output: a *float op* (the quantizer left it
  in float), converted to the float op family; its dequantized inputs stay dequantize nodes,
  and a quantize of its output stays a quantize node. So does the op of a ``dequantize -> op
  -> quantize`` chain qnnpy has no integer form of: PT2E defines the island's numerics that way.

In-place aten ops (``silu_``, ``relu_``, ``add_``) become their out-of-place forms, and the
later readers of the tensor they wrote read their result.
"""
from __future__ import annotations

from typing import Any, Callable

import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  registers the quantized_decomposed ops (as torchao does)
import torch.fx
from torch.export._unlift import _StatefulGraphModule

import torch.utils._pytree as pytree

from qnnpy.capture.aten_targets import folded_value, functional, is_random
from qnnpy.capture.fx_capture import CapturedGraph
from qnnpy.errors import ConversionError
from qnnpy.quantized_types import QuantizedValue

_qd = torch.ops.quantized_decomposed
QUANTIZE = {_qd.quantize_per_tensor.default, _qd.quantize_per_tensor.tensor}
DEQUANTIZE = {_qd.dequantize_per_tensor.default, _qd.dequantize_per_tensor.tensor}
WEIGHT_DEQUANTIZE = {_qd.dequantize_per_channel.default} | DEQUANTIZE
_aten = torch.ops.aten
# Ops whose output is their input in eval mode.
_IDENTITY = {_aten.dropout.default, _aten.dropout_.default, _aten.clone.default, _aten.contiguous.default,
             _aten.alias.default, _aten.detach.default, _aten.detach_.default}
# Anchors whose converters fuse a following ReLU (conv / linear / add with relu=True).
_RELU_FUSING = {_aten.conv2d.default, _aten.linear.default, _aten.add.Tensor}
_RELU = {_aten.relu.default}
# Activations that may follow an anchor inside an island (before its quantize).
_ACTIVATIONS = _RELU | {_aten.hardtanh.default}
_DTYPES = {torch.uint8: (torch.quint8, 0, 255), torch.int8: (torch.qint8, -128, 127)}


def is_pt2e_graph(model: Any) -> bool:
    """Whether ``model`` is a converted PT2E GraphModule (it calls ``quantized_decomposed`` ops)."""
    return isinstance(model, torch.fx.GraphModule) and any(
        n.op == "call_function" and n.target in QUANTIZE | DEQUANTIZE for n in model.graph.nodes)


def is_exported_module(model: Any) -> bool:
    """Whether ``model`` is the module of a ``torch.export`` program (``ExportedProgram.module()``)."""
    return isinstance(model, _StatefulGraphModule)


def _where(node: torch.fx.Node) -> str:
    """The node's module path and name, and the model source line it was traced from (its stack trace's
    last ``File ..., line ...`` entry), for error messages."""
    stack = node.meta.get("nn_module_stack")
    path = list(stack.values())[-1][0] if stack else ""
    frames = [line.strip() for line in (node.meta.get("stack_trace") or "").splitlines() if line.strip().startswith("File ")]
    line = f" ({frames[-1]})" if frames else ""
    return f"{path + '.' if path else ''}{node.name}{line}"


def _refuse_unsupported(gm: torch.fx.GraphModule) -> None:
    """One error listing every node qnnpy cannot express: dynamic quantization (choose_qparams),
    torchao's affine / int4 / fp8 ops, and symbolic shapes."""
    found: list[str] = []
    for n in gm.graph.nodes:
        target = str(n.target)
        if n.op == "call_function" and "choose_qparams" in target:
            found.append(f"{_where(n)}: {target} (dynamic quantization: qparams chosen per input at run time)")
        elif n.op == "call_function" and (target.startswith("torchao.") or "affine" in target or "float8" in target
                                          or "fp8" in target):
            found.append(f"{_where(n)}: {target} (torchao affine / low-bit / float8 op)")
        elif n.op == "placeholder":
            val = n.meta.get("val")
            if isinstance(val, torch.Tensor) and any(not isinstance(d, int) for d in val.shape):
                found.append(f"{_where(n)}: input shape {tuple(val.shape)} is symbolic")
    if found:
        raise ConversionError("the PT2E graph holds what a static QDQ module cannot express:\n  " + "\n  ".join(found)
                              + "\nQuantize statically (prepare_pt2e with a static config) and export with static shapes.")


# Where a tensor lies: its storage's address, then its shape, strides and offset (two nodes with the same
# placement are one tensor; the same storage otherwise, one is a view of the other).
_Placement = tuple[int, tuple[int, ...], tuple[int, ...], int]


class _Recorder(torch.fx.Interpreter):
    def __init__(self, module: torch.fx.GraphModule):
        super().__init__(module)
        self.values: dict[torch.fx.Node, Any] = {}
        self.placements: dict[torch.fx.Node, _Placement] = {}
        self._alive: list[torch.Tensor] = []  # no storage is freed and reused while the placements are compared

    def run_node(self, n: torch.fx.Node) -> Any:
        out = super().run_node(n)
        self.values[n] = out.clone() if isinstance(out, torch.Tensor) else out  # in-place ops follow
        if type(out) in (torch.Tensor, torch.nn.Parameter) and not out.is_quantized:  # not tensor subclasses
            self.placements[n] = (out.untyped_storage().data_ptr(), tuple(out.shape), out.stride(), out.storage_offset())
            self._alive.append(out)
        return out


# Views an in-place write may go through, and the op that writes a value back into the viewed tensor.
_VIEW_SCATTERS = {_aten.slice.Tensor: _aten.slice_scatter.default, _aten.select.int: _aten.select_scatter.default}


def _same_tensor(placements: dict[torch.fx.Node, _Placement], by_storage: dict[int, list[torch.fx.Node]],
                 node: torch.fx.Node) -> list[torch.fx.Node]:
    """The nodes converted so far that are ``node``'s tensor: the same storage, shape, strides and offset (the results
    of in-place ops on it, a ``to`` that converted nothing...)."""
    placement = placements.get(node)
    if placement is None:
        return [node]
    return [m for m in by_storage.get(placement[0], []) if placements[m] == placement] or [node]


def _scalar(v: Any) -> float:
    return float(v.item() if isinstance(v, torch.Tensor) else v)


def _quantized_activation(node: torch.fx.Node, values: dict) -> QuantizedValue:
    """The value of a quantize_per_tensor node as a quantized value (uint8 / int8 with its qparams)."""
    _, scale, zero_point, qmin, qmax, dtype = (values.get(a, a) for a in node.args[:6])
    if dtype not in _DTYPES or (int(qmin), int(qmax)) != _DTYPES[dtype][1:]:
        raise ConversionError(f"{_where(node)}: activations quantized to {dtype} in [{qmin}, {qmax}] are not supported "
                              "(only the full range of uint8 or int8)")
    return QuantizedValue(values[node], _scalar(scale), int(_scalar(zero_point)))


def _is_int8(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.dtype == torch.int8


def _quantized_weight(node: torch.fx.Node, values: dict) -> QuantizedValue:
    """A dequantize of a constant int8 tensor as a quantized value holding the same int8 values."""
    data = values[node.args[0]]
    if node.target == _qd.dequantize_per_channel.default:
        scales, zero_points, axis = (values.get(a, a) for a in node.args[1:4])
        return QuantizedValue(data, scales, zero_points, int(axis))
    scale, zero_point = (values.get(a, a) for a in node.args[1:3])
    return QuantizedValue(data, _scalar(scale), int(_scalar(zero_point)))


def _constants(gm: torch.fx.GraphModule) -> set[torch.fx.Node]:
    """Nodes that do not depend on a graph input."""
    constant: set[torch.fx.Node] = set()
    for n in gm.graph.nodes:
        if n.op == "get_attr" or (n.op == "call_function" and all(a in constant for a in n.all_input_nodes)
                                  and not is_random(n)):
            constant.add(n)
    return constant


def _single_user(node: torch.fx.Node) -> torch.fx.Node | None:
    users = list(node.users)
    return users[0] if len(users) == 1 else None


def _islands(gm: torch.fx.GraphModule, constant: set[torch.fx.Node], alias: dict[torch.fx.Node, torch.fx.Node],
             has_integer_form: Callable[[Any], bool]) -> dict[torch.fx.Node, tuple]:
    """anchor -> (activation or None, quantize) for every dq -> anchor [-> activation] -> q chain (looking
    through identities such as eval-mode dropout between the dq and the anchor) whose anchor has an integer form."""
    islands = {}
    for q in gm.graph.nodes:
        if q.target not in QUANTIZE or not isinstance(q.args[0], torch.fx.Node):
            continue
        anchor, activation = q.args[0], None
        if functional(anchor.target) in _ACTIVATIONS and isinstance(anchor.args[0], torch.fx.Node) and \
                _single_user(anchor) is q and anchor.args[0].op == "call_function":
            candidate = anchor.args[0]
            if candidate.target not in QUANTIZE | DEQUANTIZE and _single_user(candidate) is anchor \
                    and has_integer_form(functional(candidate.target)):
                anchor, activation = candidate, anchor
        if anchor.op != "call_function" or anchor.target in QUANTIZE | WEIGHT_DEQUANTIZE | _IDENTITY \
                or not has_integer_form(functional(anchor.target)):
            continue
        if activation is None and _single_user(anchor) is not q:
            continue
        inputs = [alias.get(a, a) for a in anchor.all_input_nodes if a not in constant]
        if inputs and all(a.target in DEQUANTIZE for a in inputs):
            islands[anchor] = (activation, q)
    return islands


def _resolve_identities(gm: torch.fx.GraphModule) -> dict[torch.fx.Node, torch.fx.Node]:
    """Eval-mode dropout, clone, contiguous...: node -> the node whose value it passes on."""
    alias: dict[torch.fx.Node, torch.fx.Node] = {}
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target in _IDENTITY:
            if n.target in (_aten.dropout.default, _aten.dropout_.default) and n.args[2:3] and n.args[2]:
                raise ConversionError(f"{_where(n)}: dropout with train=True; convert the model in eval mode")
            source = n.args[0]
            alias[n] = alias.get(source, source)
    return alias


def _output_names(model: torch.fx.GraphModule) -> list[str] | None:
    """The paths of a torch.export module's outputs in its output structure ("out", "aux"), when it holds a dict."""
    spec = getattr(model, "_out_spec", None)
    if spec is None:
        return None
    leaves, _ = pytree.tree_flatten_with_path(pytree.tree_unflatten(list(range(spec.num_leaves)), spec))
    if not any(isinstance(k, pytree.MappingKey) for path, _ in leaves for k in path):
        return None
    return [".".join(str(getattr(k, "key", getattr(k, "idx", k))) for k in path) for path, _ in leaves]


def capture_pt2e(model: torch.fx.GraphModule, example_inputs: tuple[torch.Tensor, ...],
                 has_integer_form: Callable[[Any], bool] = lambda target: True) -> CapturedGraph:
    """Run a converted PT2E GraphModule on ``example_inputs`` and rewrite it into islands, weights and float ops;
    ``has_integer_form`` says which aten ops anchor an island (the others stay dequantize -> op -> quantize)."""
    _refuse_unsupported(model)
    placeholders = [n for n in model.graph.nodes if n.op == "placeholder"]
    if len(example_inputs) != len(placeholders):
        raise ConversionError(f"the PT2E graph takes {len(placeholders)} input(s), {len(example_inputs)} given")
    recorder = _Recorder(model)
    with torch.no_grad():
        recorder.run(*example_inputs)
    values = recorder.values
    constant = _constants(model)
    alias = _resolve_identities(model)
    islands = _islands(model, constant, alias, has_integer_form)
    skipped = {part for activation, q in islands.values() for part in (activation, q) if part is not None}

    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    new_values: dict[str, Any] = {}
    attributes: dict[str, Any] = {}

    def mapped(a: torch.fx.Node) -> torch.fx.Node:
        return env[a] if a in env else env[alias.get(a, a)]

    def through_dequantize(a: torch.fx.Node) -> torch.fx.Node:
        """An island's input: the quantized value under its dequantize (weights stay weights)."""
        a = alias.get(a, a)
        if a.target in DEQUANTIZE and a not in constant:
            return env[alias.get(a.args[0], a.args[0])]
        return env[a]

    def attribute(old: torch.fx.Node) -> str:
        """The attribute holding a constant node's value: its name, unless a GraphModule has that attribute (a
        folded ``to`` would shadow Module.to)."""
        return f"{old.name}_constant" if hasattr(torch.fx.GraphModule, old.name) else old.name

    def call(old: torch.fx.Node, target: Any, args: tuple, kwargs: dict) -> torch.fx.Node:
        return graph.create_node("call_function", functional(target), args, kwargs, name=old.name)

    def record(new: torch.fx.Node, old: torch.fx.Node, value: Any) -> torch.fx.Node:
        new.meta = dict(old.meta)
        new_values[new.name] = value
        return new

    order = {n: i for i, n in enumerate(model.graph.nodes)}
    by_storage: dict[int, list[torch.fx.Node]] = {}  # the nodes converted so far, by the storage of their tensor

    def done(n: torch.fx.Node) -> None:
        if n in recorder.placements:
            by_storage.setdefault(recorder.placements[n][0], []).append(n)

    def write_back(writer: torch.fx.Node) -> None:
        """After the in-place op ``writer``: later readers of the tensor it wrote read the result; where that tensor
        is a slice or select of another, the result is scattered back into it (slice_scatter / select_scatter), up
        the chain of views. Any other view of the storage that a node computed from the inputs reads afterwards is
        refused: the rewrite carries whole values (a constant reader is folded to the value PyTorch computed,
        writes included)."""
        placements = recorder.placements
        node, value, updated = writer.args[0], env[writer], set()
        while True:
            for m in _same_tensor(placements, by_storage, node):
                env[m] = value
                updated.add(m)
            base = node.args[0] if node.op == "call_function" and node.target in _VIEW_SCATTERS else None
            if not isinstance(base, torch.fx.Node) or placements.get(base, (None,))[0] != placements.get(node, (0,))[0]:
                break
            scatter = _VIEW_SCATTERS[node.target]
            current = mapped(base)
            result = scatter(new_values[current.name], new_values[value.name], *node.args[1:], **node.kwargs)
            value = record(call(node, scatter, (current, value, *node.args[1:]), dict(node.kwargs)), node, result)
            node = base
        storage = placements.get(writer.args[0], (None,))[0]
        for m in by_storage.get(storage, []):
            if m not in updated and any(order[u] > order[writer] and u not in constant for u in m.users):
                raise ConversionError(f"{_where(writer)}: {writer.target} writes a tensor that shares its storage "
                                      f"with {m.name} (shape {list(placements[m][1])}, a view of it or the tensor "
                                      "it views), which is read afterwards: writes through views other than slices "
                                      "and selects are not supported")

    for n in placeholders:
        env[n] = record(graph.placeholder(n.target), n, values[n])
        done(n)
    for n in model.graph.nodes:
        if n in alias and n.args[0] in env:
            env[n] = env[n.args[0]]  # a clone, a detach...: the value it passes on, as it is now
            done(n)
        if n in skipped or n in alias or n.op == "placeholder":
            continue
        if n.op == "call_module" and not n.users:
            continue  # torch.export's input guard check (_guards_fn): no value
        if n.op == "output":
            graph.output(torch.fx.map_arg(n.args[0], mapped))
        elif n.target in WEIGHT_DEQUANTIZE and n in constant and _is_int8(values.get(n.args[0])):
            attributes[attribute(n)] = _quantized_weight(n, values)
            env[n] = record(graph.get_attr(attribute(n)), n, attributes[attribute(n)])
        elif n.op == "get_attr" or n in constant:
            # A constant (scales, biases, folded weights, a constant dequantized from uint8 such as Swin-v2's
            # relative coordinates table): a get_attr of its recorded value.
            value = folded_value(n, values[n]) if isinstance(values[n], torch.Tensor) else values[n]
            attributes[attribute(n)] = value
            env[n] = record(graph.get_attr(attribute(n)), n, value)
        elif n in islands:
            activation, q = islands[n]
            value = _quantized_activation(q, values)
            new = record(call(n, n.target, torch.fx.map_arg(n.args, through_dequantize),
                              torch.fx.map_arg(n.kwargs, through_dequantize)), n, value)
            if activation is not None and functional(activation.target) in _RELU and functional(n.target) in _RELU_FUSING:
                new.meta["pt2e_fused_relu"] = True
            elif activation is not None:
                new = record(call(activation, activation.target, (new, *activation.args[1:]), activation.kwargs),
                             activation, value)
            env[n] = env[q] = new
        else:
            value = _quantized_activation(n, values) if n.target in QUANTIZE else values[n]
            env[n] = record(call(n, n.target, torch.fx.map_arg(n.args, mapped), torch.fx.map_arg(n.kwargs, mapped)),
                            n, value)
        if n.op == "call_function" and functional(n.target) is not n.target and isinstance(n.args[0], torch.fx.Node):
            write_back(n)
        done(n)
    for node in reversed(graph.nodes):  # what only the islands' dequantizes and the weights' constants used
        if node.op not in ("placeholder", "output") and not node.users:
            graph.erase_node(node)
    gm = torch.fx.GraphModule(attributes, graph, class_name=type(model).__name__)
    kept = {node.name for node in gm.graph.nodes}
    return CapturedGraph(gm, {name: v for name, v in new_values.items() if name in kept}, kind=type(model).__name__,
                         output_names=_output_names(model))

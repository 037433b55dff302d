"""Capture of TorchScript modules: traced or scripted, fresh or from ``torch.jit.load``.

The module's forward graph is inlined and walked once on the example inputs.
Every tensor op that depends on the inputs becomes a node of a torch.fx graph
calling the Python callable an FX trace would record (see ``script_ops``);
packed params and constant tensors become attributes of that graph
(``get_attr``). Everything else (constants, attribute chains, sizes, lists and
the control flow on them) is evaluated on the spot, so the FX graph is
specialised to the example shapes, as qnnpy modules are. The FX graph then runs
through ``capture_fx``, which records each node's example output.
"""
from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from typing import Any, Container, Iterable

import torch
import torch.fx

from qnnpy.capture import script_ops
from qnnpy.capture.fx_capture import CapturedGraph, capture_fx, describe_input, is_input_tensor
from qnnpy.errors import ConversionError


@dataclass
class _Traced:
    """A value computed from the model inputs: its FX node and its example value."""

    node: torch.fx.Node
    example: Any


def _contains_traced(value: Any) -> bool:
    if isinstance(value, _Traced):
        return True
    return isinstance(value, (list, tuple)) and any(_contains_traced(v) for v in value)


def _example(value: Any) -> Any:
    if isinstance(value, _Traced):
        return value.example
    if isinstance(value, (list, tuple)):
        return type(value)(_example(v) for v in value)
    return value


def _computes_in_float(kind: str, args: list[Any]) -> bool:
    """An aten op on unquantized tensors only that does not quantize (its output is unquantized too)."""
    def quantized(value: Any) -> bool:
        value = _example(value)
        if isinstance(value, (list, tuple)):
            return any(quantized(v) for v in value)
        return isinstance(value, torch.ScriptObject) or (isinstance(value, torch.Tensor) and value.is_quantized)
    return "quantize" not in kind and not any(quantized(a) for a in args)


def _has_tensor(t: torch._C.Type) -> bool:
    return "Tensor" in str(t)


def _identifier(name: str) -> str:
    name = re.sub(r"\W", "_", name)
    return name if name and not name[0].isdigit() else f"v_{name}"


def _input_name(value: torch._C.Value) -> str:
    """``x`` for the TorchScript input ``x.1``."""
    return _identifier(value.debugName().split(".")[0])


def module_path(node: torch._C.Node) -> str:
    """The dotted path of the module whose code holds ``node`` (``layer1.0.conv1``), '' at the top."""
    names = []
    for instance, type_name in re.findall(r"([^.(]+)\(([^)]*)\)", node.getModuleHierarchy()):
        if instance == "UNKNOWN_INSTANCE" or type_name == "UNKNOWN_TYPE":
            break
        if instance != "SELF":  # a method called on the same module (self._forward_impl)
            names.append(instance)
    return ".".join(names)


class _Translator:
    """Walks an inlined TorchScript graph and builds the equivalent FX graph."""

    def __init__(self, module: torch.jit.ScriptModule, known_ops: Container[Any]):
        self.module = module
        self.known_ops = known_ops
        self.graph = torch.fx.Graph()
        self.holder = torch.nn.Module()  # owns the get_attr targets
        self.values: dict[int, Any] = {}  # TorchScript value id -> concrete value or _Traced
        self.attribute_paths: dict[int, str] = {}  # TorchScript value id -> GetAttr chain ("layer1.0.conv1")
        self.attribute_nodes: dict[str, torch.fx.Node] = {}
        self.op_paths: dict[torch.fx.Node, str] = {}

    # --- entry point -----------------------------------------------------------------
    def translate(self, example_inputs: tuple[torch.Tensor, ...]) -> torch.fx.GraphModule:
        ts_graph = self.module.inlined_graph
        self_value, *inputs = ts_graph.inputs()
        if len(inputs) != len(example_inputs):
            names = ", ".join(_input_name(v) for v in inputs)
            raise ConversionError(
                f"{self.module.original_name}.forward takes {len(inputs)} input(s) ({names}), "
                f"but {len(example_inputs)} example input(s) were given"
            )
        self.values[self_value.unique()] = self.module
        self.attribute_paths[self_value.unique()] = ""
        for value, example in zip(inputs, example_inputs):
            node = self.graph.placeholder(_input_name(value))
            self.values[value.unique()] = _Traced(node, example)
        with torch.no_grad():
            self._run_block(ts_graph.nodes())
        outputs = [self._fx_output(self.values[v.unique()]) for v in ts_graph.outputs()]
        self.graph.output(outputs[0] if len(outputs) == 1 else tuple(outputs))
        self._set_sources()
        return torch.fx.GraphModule(self.holder, self.graph)

    def _fx_output(self, value: Any) -> Any:
        if isinstance(value, _Traced):
            return value.node
        if isinstance(value, (list, tuple)):
            return type(value)(self._fx_output(v) for v in value)
        if isinstance(value, dict):
            return {k: self._fx_output(v) for k, v in value.items()}
        raise ConversionError(f"model output {value!r:.60} is not computed from the inputs")

    def _set_sources(self) -> None:
        """Name each op by its module path; a module with several ops adds the node name."""
        counts: dict[str, int] = {}
        for path in self.op_paths.values():
            counts[path] = counts.get(path, 0) + 1
        for node, path in self.op_paths.items():
            node.meta["source"] = path if path and counts[path] == 1 else ".".join(p for p in (path, node.name) if p)

    # --- walking ---------------------------------------------------------------------
    def _run_block(self, nodes: Iterable[torch._C.Node]) -> None:
        for node in nodes:
            handler = _STRUCTURAL.get(node.kind())
            if handler is not None:
                handler(self, node)
            else:
                self._run_op(node)

    def _value(self, v: torch._C.Value) -> Any:
        return self.values[v.unique()]

    def _bind(self, node: torch._C.Node, result: Any) -> None:
        """Bind an op's result: the value of its one output, or a sequence over several outputs."""
        self._bind_all(node, [result] if node.outputsSize() == 1 else list(result or []))

    def _bind_all(self, node: torch._C.Node, results: list[Any]) -> None:
        for v, r in zip(node.outputs(), results):
            self.values[v.unique()] = r

    def _where(self, node: torch._C.Node) -> str:
        """The module path of ``node``, else of what it reads, else of the node whose block holds it."""
        candidates = [node, *(v.node() for v in node.inputs())]
        owner = node.owningBlock().owningNode()
        if owner is not None:
            candidates += [owner, *(v.node() for v in owner.inputs())]
        return next((path for path in map(module_path, candidates) if path), "the model")

    # --- ops -------------------------------------------------------------------------
    def _run_op(self, node: torch._C.Node) -> None:
        kind = node.kind()
        schema = script_ops.op_schema(node) if node.schema() != "(no schema)" else None
        if schema is None and kind not in script_ops.SCALAR_OPS:
            raise ConversionError(f"{self._where(node)}: TorchScript node {kind} is not supported by qnnpy")
        args = [self._value(v) for v in node.inputs()]
        if not _contains_traced(args):
            self._bind(node, script_ops.evaluate(kind, schema, args))
        elif not any(_has_tensor(v.type()) for v in node.outputs()):
            if kind not in script_ops.METADATA_OPS:
                raise ConversionError(
                    f"{self._where(node)}: {kind} reads the values of a tensor computed from the inputs "
                    "(data-dependent code); qnnpy converts graphs whose control flow depends on shapes only"
                )
            self._bind(node, script_ops.evaluate(kind, schema, [_example(a) for a in args]))
        elif schema is None:
            raise ConversionError(f"{self._where(node)}: TorchScript node {kind} on a model tensor is not supported")
        else:
            self._add_fx_op(node, schema, args)

    def _dequantize_list(self, node: torch._C.Node, tensors: list[Any]) -> None:
        """``aten::dequantize`` of a tensor list: one ``torch.dequantize`` per element."""
        results = []
        for t in tensors:
            fx_node = self.graph.call_function(torch.dequantize, (self._fx_arg(t, None),))
            self.op_paths[fx_node] = module_path(node)
            results.append(_Traced(fx_node, torch.dequantize(_example(t))))
        self._bind(node, results)

    def _add_fx_op(self, node: torch._C.Node, schema: torch._C.FunctionSchema, args: list[Any]) -> None:
        if node.kind() == "aten::dequantize" and isinstance(args[0], (list, tuple)):
            return self._dequantize_list(node, list(args[0]))
        op = script_ops.python_op(node.kind(), schema, self.known_ops)
        if node.kind().startswith("aten::") and _computes_in_float(node.kind(), args):
            # Float ops keep their aten overload, which the float converters (qnnpy.convert.float_aten) take.
            op = script_ops.PythonOp("call_function", script_ops.overload(schema))
        inputs = list(node.inputs())
        fx_args = [self._fx_arg(a, self.attribute_paths.get(v.unique())) for a, v in zip(args, inputs)]
        positional, keywords = script_ops.split_arguments(schema, script_ops.decode_enums(schema, fx_args))
        ex_positional, ex_keywords = script_ops.split_arguments(
            schema, script_ops.decode_enums(schema, [_example(a) for a in args]))
        try:
            if op.fx_op == "call_method":
                example = getattr(ex_positional[0], op.target)(*ex_positional[1:], **ex_keywords)
            else:
                example = op.target(*ex_positional, **ex_keywords)
        except Exception as e:
            raise ConversionError(f"{self._where(node)}: {node.kind()} failed on the example inputs: {e}") from e
        fx_node = self.graph.create_node(op.fx_op, op.target, positional, keywords)
        self.op_paths[fx_node] = module_path(node)
        outputs = list(node.outputs())
        if len(outputs) == 1:
            result: Any = _Traced(fx_node, example)
        else:
            result = [_Traced(self.graph.call_function(operator.getitem, (fx_node, i)), e) for i, e in enumerate(example)]
        self._bind(node, result)
        if script_ops.in_place_base(node.kind()) is not None:
            self.values[inputs[0].unique()] = result  # later readers of the written tensor see the result

    def _fx_arg(self, value: Any, path: str | None) -> Any:
        if isinstance(value, _Traced):
            return value.node
        if isinstance(value, (list, tuple)):
            return type(value)(self._fx_arg(v, None) for v in value)
        if isinstance(value, (torch.Tensor, torch.ScriptObject)):
            return self._attribute_node(value, path)
        return value

    def _attribute_node(self, value: Any, path: str | None) -> torch.fx.Node:
        key = path if path else f"_constant_{id(value)}"
        if key not in self.attribute_nodes:
            name = _identifier(path) if path else "_constant"
            while hasattr(self.holder, name) or hasattr(torch.fx.GraphModule, name):
                name = f"{name}_"
            setattr(self.holder, name, value)
            self.attribute_nodes[key] = self.graph.get_attr(name)
        return self.attribute_nodes[key]

    # --- structural nodes ------------------------------------------------------------
    def _constant(self, node: torch._C.Node) -> None:
        try:
            value = node.output().toIValue()
        except RuntimeError:
            value = None  # a function reference: unused once the graph is inlined
        self._bind(node, value)

    def _get_attribute(self, node: torch._C.Node) -> None:
        owner = node.input()
        name = node.s("name")
        value = getattr(self._value(owner), name)
        parent = self.attribute_paths.get(owner.unique())
        if parent is not None:
            self.attribute_paths[node.output().unique()] = f"{parent}.{name}" if parent else name
        self._bind(node, value)

    def _construct(self, node: torch._C.Node) -> None:
        items = [self._value(v) for v in node.inputs()]
        if node.kind() == "prim::DictConstruct":  # keys and values alternate
            self._bind(node, dict(zip(items[::2], items[1::2])))
        else:
            self._bind(node, tuple(items) if node.kind() == "prim::TupleConstruct" else items)

    def _unpack(self, node: torch._C.Node) -> None:
        value = self._value(node.input())
        if isinstance(value, _Traced):  # a tensor list returned by one op
            value = [_Traced(self.graph.call_function(operator.getitem, (value.node, i)), e)
                     for i, e in enumerate(value.example)]
        self._bind_all(node, list(value))

    def _get_item(self, node: torch._C.Node) -> None:
        container, index = (self._value(v) for v in node.inputs())
        if isinstance(container, _Traced):  # an element of a tensor list returned by one op
            item = _Traced(self.graph.call_function(operator.getitem, (container.node, index)), container.example[index])
        else:
            item = container[index]
        self._bind(node, item)

    def _identity(self, node: torch._C.Node) -> None:
        self._bind(node, self._value(node.input()))

    def _uninitialized(self, node: torch._C.Node) -> None:
        self._bind(node, None)

    def _if(self, node: torch._C.Node) -> None:
        condition = self._value(node.input())
        if _contains_traced(condition):
            raise ConversionError(f"{self._where(node)}: an if-condition depends on tensor values")
        block = list(node.blocks())[0 if condition else 1]
        self._run_block(block.nodes())
        self._bind_all(node, [self._value(v) for v in block.outputs()])

    def _loop(self, node: torch._C.Node) -> None:
        trip_count, condition, *carried = (self._value(v) for v in node.inputs())
        if _contains_traced(trip_count) or _contains_traced(condition):
            raise ConversionError(f"{self._where(node)}: a loop bound depends on tensor values")
        block = next(iter(node.blocks()))
        iteration, *block_carried = block.inputs()
        step = 0
        while condition and step < trip_count:
            self.values[iteration.unique()] = step
            for v, c in zip(block_carried, carried):
                self.values[v.unique()] = c
            self._run_block(block.nodes())
            condition, *carried = (self._value(v) for v in block.outputs())
            step += 1
        self._bind_all(node, carried)

    def _raise(self, node: torch._C.Node) -> None:
        message, *kind = (self._value(v) for v in node.inputs())
        raise ConversionError(f"{self._where(node)} raises {kind[0] if kind else 'an exception'} "
                              f"on the example inputs: {message}")


_STRUCTURAL = {
    "prim::Constant": _Translator._constant,
    "prim::GetAttr": _Translator._get_attribute,
    "prim::ListConstruct": _Translator._construct,
    "prim::TupleConstruct": _Translator._construct,
    "prim::DictConstruct": _Translator._construct,
    "prim::ListUnpack": _Translator._unpack,
    "prim::TupleUnpack": _Translator._unpack,
    "prim::TupleIndex": _Translator._get_item,
    "aten::__getitem__": _Translator._get_item,
    "prim::unchecked_cast": _Translator._identity,
    "prim::Uninitialized": _Translator._uninitialized,
    "prim::If": _Translator._if,
    "prim::Loop": _Translator._loop,
    "prim::RaiseException": _Translator._raise,
}


def capture_torchscript(module: torch.jit.ScriptModule, example_inputs: tuple[torch.Tensor, ...],
                        known_ops: Container[Any] = frozenset()) -> CapturedGraph:
    """Translate a ScriptModule's inlined forward graph to FX and record every node's output.

    ``known_ops`` (the keys of the converter table) decides between the Python
    forms of an ``aten::`` op (``torch.X``, ``torch.nn.functional.X``, ``Tensor.X``).
    """
    for i, x in enumerate(example_inputs):
        if not is_input_tensor(x):
            raise ConversionError(f"example input {i} must be a float tensor, int64 / int32 indices or a bool mask, "
                                  f"got {describe_input(x)}")
    captured = capture_fx(_Translator(module, known_ops).translate(example_inputs), example_inputs)
    captured.kind = f"TorchScript module {module.original_name}"
    return captured

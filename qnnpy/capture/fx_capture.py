"""Capture of eager-mode and FX-converted quantized models with torch.fx.

The model is traced symbolically, then run once on the example inputs so every
node carries its example output: shapes, dtypes and the quantization
parameters the converters read.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from qnnpy.errors import ConversionError


@dataclass
class CapturedGraph:
    """A traced model and the example output of each of its nodes (by node name). ``kind`` says what the model
    was, for messages ("GraphModule", "TorchScript module ResNet", ...); ``output_names`` names the flattened
    outputs of a model that returns a dict or a dataclass (None otherwise)."""

    module: torch.fx.GraphModule
    values: dict[str, Any] = field(default_factory=dict)
    kind: str = ""
    output_names: list[str] | None = None

    def nodes(self) -> list[torch.fx.Node]:
        return list(self.module.graph.nodes)


def node_source(node: torch.fx.Node) -> str:
    """Where a node sits in the PyTorch model: the module path, else the FX node name."""
    if "source" in node.meta:  # named by a capture front end (TorchScript) or kept through a decomposition
        return node.meta["source"]
    if node.op == "call_module":
        return str(node.target)
    stack = node.meta.get("nn_module_stack")
    if stack:
        path, _ = list(stack.values())[-1]  # innermost enclosing module: (path, type)
        if path:
            return f"{path}.{node.name}"
    return node.name


class _Recorder(torch.fx.Interpreter):
    def __init__(self, module: torch.fx.GraphModule):
        super().__init__(module)
        self.values: dict[str, Any] = {}

    def run_node(self, n: torch.fx.Node) -> Any:
        out = super().run_node(n)
        # A copy: a later in-place op (e.g. ReLU6(inplace=True) in FX models) must not change the record.
        self.values[n.name] = out.clone() if isinstance(out, torch.Tensor) else out
        return out


class FxTracingError(ConversionError):
    """torch.fx's symbolic tracing failed on the model (data-dependent Python, ``**kwargs``...)."""


def _trace(model: torch.nn.Module) -> torch.fx.GraphModule:
    if isinstance(model, torch.fx.GraphModule):
        return model
    try:
        return torch.fx.symbolic_trace(model)
    except Exception as e:
        raise FxTracingError(f"torch.fx could not trace {type(model).__name__}: {type(e).__name__}: {e}") from e


def is_input_tensor(x: Any) -> bool:
    """Whether ``x`` can be a model input: a float tensor, int64 / int32 indices, or a bool mask."""
    return isinstance(x, torch.Tensor) and (x.is_floating_point() or x.dtype in (torch.int64, torch.int32, torch.bool))


def describe_input(x: Any) -> str:
    return f"a {x.dtype} tensor" if isinstance(x, torch.Tensor) else type(x).__name__


def capture_fx(model: torch.nn.Module, example_inputs: tuple[torch.Tensor, ...]) -> CapturedGraph:
    """Trace ``model`` and record every node's output on ``example_inputs``."""
    gm = _trace(model)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(example_inputs) != len(placeholders):
        names = ", ".join(n.target for n in placeholders)
        raise ConversionError(
            f"{type(model).__name__}.forward takes {len(placeholders)} input(s) ({names}), "
            f"but {len(example_inputs)} example input(s) were given"
        )
    for n, x in zip(placeholders, example_inputs):
        if not is_input_tensor(x):
            raise ConversionError(f"example input '{n.target}' must be a float tensor, int64 / int32 indices or a "
                                  f"bool mask, got {describe_input(x)}")
    recorder = _Recorder(gm)
    with torch.no_grad():
        recorder.run(*example_inputs)
    return CapturedGraph(gm, recorder.values, kind=type(model).__name__)

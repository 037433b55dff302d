"""State shared by the converters while one model is converted."""
from __future__ import annotations

from typing import Any

import torch
import torch.fx

from qnnpy import _core
from qnnpy.capture.fx_capture import CapturedGraph
from qnnpy.errors import ConversionError
from qnnpy.quantized_types import ACTIVATION_DTYPES, PER_TENSOR_SCHEMES


def op_name(gm: torch.fx.GraphModule, node: torch.fx.Node) -> str:
    """A readable name of what a node calls: module class, function or Tensor method."""
    if node.op == "call_module":
        cls = type(gm.get_submodule(node.target))
        return f"{cls.__module__}.{cls.__qualname__}"
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    if node.op == "call_function":
        target = node.target
        if isinstance(target, (torch._ops.OpOverloadPacket, torch._ops.OpOverload)):
            return f"torch.ops.{target}"
        name = getattr(target, "__name__", str(target))
        for namespace, prefix in ((torch, "torch"), (torch.nn.functional, "torch.nn.functional")):
            if getattr(namespace, name, None) is target:
                return f"{prefix}.{name}"
        return f"{getattr(target, '__module__', None) or 'builtins'}.{getattr(target, '__qualname__', name)}"
    return node.op


class ConversionContext:
    """Maps FX nodes to graph values and offers the helpers converters share."""

    def __init__(self, captured: CapturedGraph):
        self.captured = captured
        self.graph = _core.Graph()
        self.env: dict[str, int] = {}

    # --- reading the PyTorch side -------------------------------------------------
    def module(self, node: torch.fx.Node) -> torch.nn.Module:
        return self.captured.module.get_submodule(node.target)

    def example(self, arg: Any) -> Any:
        """The example value of an argument: a node's recorded output, or the constant itself."""
        if isinstance(arg, torch.fx.Node):
            return self.captured.values[arg.name]
        return arg

    def source(self, node: torch.fx.Node) -> str:
        """Where the node sits in the PyTorch model: the module path, else the FX node name."""
        if "source" in node.meta:  # named by a capture front end (TorchScript)
            return node.meta["source"]
        if node.op == "call_module":
            return str(node.target)
        stack = node.meta.get("nn_module_stack")
        if stack:
            path, _ = list(stack.values())[-1]  # innermost enclosing module: (path, type)
            if path:
                return f"{path}.{node.name}"
        return node.name

    def value(self, arg: Any, node: torch.fx.Node) -> int:
        """The graph value id of a tensor argument of ``node``."""
        if not isinstance(arg, torch.fx.Node) or arg.name not in self.env:
            raise ConversionError(f"{self.source(node)}: argument {arg!r:.60} is not a converted tensor")
        return self.env[arg.name]

    # --- building the qnnpy graph -------------------------------------------------
    def quantized_output(self, node: torch.fx.Node) -> dict[str, Any]:
        """Output dtype, qparams and shape of ``node`` as PyTorch produced them."""
        out = self.captured.values[node.name]
        if not isinstance(out, torch.Tensor) or not out.is_quantized:
            raise ConversionError(
                f"{self.source(node)} ({op_name(self.captured.module, node)}): computes in float here (its output "
                f"is {getattr(out, 'dtype', type(out).__name__)}); qnnpy converts this op on quantized tensors only"
            )
        if out.dtype not in ACTIVATION_DTYPES or out.qscheme() not in PER_TENSOR_SCHEMES:
            accepted = " or ".join(str(d).removeprefix("torch.") for d in ACTIVATION_DTYPES)
            raise ConversionError(
                f"{self.source(node)}: output {out.dtype} / {out.qscheme()} is not supported "
                f"(activations must be {accepted}, per tensor)"
            )
        return {
            "out_dtype": ACTIVATION_DTYPES[out.dtype],
            "out_scale": float(out.q_scale()),
            "out_zero_point": int(out.q_zero_point()),
            "expected_shape": list(out.shape),
        }

    def add(
        self,
        node: torch.fx.Node,
        op: str,
        inputs: list[Any],
        ints: dict[str, list[int]] | None = None,
        floats: dict[str, float] | None = None,
    ) -> int:
        """Add one IR node for ``node``; the output takes PyTorch's recorded qparams."""
        return self.graph.add_node(
            op,
            [self.value(a, node) for a in inputs],
            self.source(node),
            self.source(node),
            ints=ints or {},
            floats=floats or {},
            **self.quantized_output(node),
        )

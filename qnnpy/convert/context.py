"""State shared by the converters while one model is converted."""
from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.fx

from qnnpy import _core
from qnnpy.capture.fx_capture import CapturedGraph, node_source
from qnnpy.errors import ConversionError
from qnnpy.quantized_types import ACTIVATION_DTYPES, PER_TENSOR_SCHEMES, is_quantized, is_tensor

# The dtypes of unquantized values (float ops' inputs, outputs and constants), and the IR's name of each.
PLAIN_DTYPES = {torch.float32: "float32", torch.int64: "int64", torch.int32: "int32", torch.bool: "bool"}
# Constants above this size are refused (the graph file and TVM's params hold them whole).
MAX_CONSTANT_BYTES = 2 << 30


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
        return node_source(node)

    def value(self, arg: Any, node: torch.fx.Node) -> int:
        """The graph value id of a tensor argument of ``node``; a constant tensor (a ``get_attr``: parameter,
        buffer, folded constant) becomes a ``float_constant`` node the first time it is used."""
        if isinstance(arg, torch.fx.Node) and arg.name not in self.env and arg.op == "get_attr" \
                and is_tensor(self.example(arg)):
            self.env[arg.name] = self.constant(arg)
        if not isinstance(arg, torch.fx.Node) or arg.name not in self.env:
            raise ConversionError(f"{self.source(node)}: argument {arg!r:.60} is not a converted tensor")
        return self.env[arg.name]

    def plain_dtype(self, dtype: torch.dtype, node: torch.fx.Node) -> str:
        """The IR dtype of an unquantized tensor of ``dtype``; other dtypes are refused naming the node."""
        if dtype not in PLAIN_DTYPES:
            accepted = ", ".join(str(d).removeprefix("torch.") for d in PLAIN_DTYPES)
            raise ConversionError(f"{self.source(node)} ({op_name(self.captured.module, node)}): a "
                                  f"{str(dtype).removeprefix('torch.')} tensor; float ops take {accepted}")
        return PLAIN_DTYPES[dtype]

    def constant(self, node: torch.fx.Node) -> int:
        """A constant tensor as a ``float_constant`` node: a function param of the Relax module named after the
        PyTorch attribute. A quantized constant is its float values quantized again with its qparams (exact);
        a 0-dim float64 one (a Python number PyTorch wrapped) is float32, as PyTorch's promotion computes it."""
        t = self.example(node).detach()
        where = self.source(node)
        name = str(node.target).replace(".", "_")
        if t.nbytes > MAX_CONSTANT_BYTES:
            raise ConversionError(f"{where}: constant '{node.target}' holds {t.nbytes / 2**30:.1f} GiB, over qnnpy's "
                                  f"limit of {MAX_CONSTANT_BYTES // 2**30} GiB for one constant")
        if t.is_quantized:
            if t.qscheme() not in PER_TENSOR_SCHEMES or t.dtype not in ACTIVATION_DTYPES:
                raise ConversionError(f"{where}: quantized constant '{node.target}' ({t.dtype}, {t.qscheme()}) is not "
                                      "supported as an operand (only uint8 / int8 per tensor)")
            values = self.graph.add_node("float_constant", [], where, f"{name}_float", "float32",
                                         params={"value": t.dequantize().contiguous().numpy()})
            return self.graph.add_node("quantize", [values], where, name, ACTIVATION_DTYPES[t.dtype],
                                       out_scale=float(t.q_scale()), out_zero_point=int(t.q_zero_point()))
        if t.dtype == torch.float64 and t.dim() == 0:
            t = t.float()
        dtype = self.plain_dtype(t.dtype, node)
        return self.graph.add_node("float_constant", [], where, name, dtype, params={"value": t.contiguous().numpy()},
                                   expected_shape=list(t.shape))

    def scalar(self, value: float | int | bool, dtype: str, node: torch.fx.Node) -> int:
        """A Python number as a scalar constant of ``dtype`` (inlined in the Relax module as ``R.const``)."""
        array = np.array(value, dtype={"float32": np.float32, "int64": np.int64, "int32": np.int32, "bool": np.bool_}[dtype])
        if dtype == "float32" and np.isnan(array):
            raise ConversionError(f"{self.source(node)}: the number {value} (NaN) is not supported as an operand")
        return self.graph.add_node("float_constant", [], self.source(node), f"{self.source(node)}_scalar", dtype,
                                   params={"value": array}, export_params=False)

    def cast(self, value_id: int, dtype: str, node: torch.fx.Node) -> int:
        """``value_id`` as ``dtype``: itself when it has that dtype, else a ``float_cast``. A quantized value (a
        PT2E constant folded from a dequantize of constants reaches a float op so) is dequantized first."""
        info = self.graph.value(value_id)
        if info.get("scale") is not None:
            value_id = self.graph.add_node("dequantize", [value_id], self.source(node), f"{info['name']}_float", "float32")
            info = self.graph.value(value_id)
        if info["dtype"] == dtype:
            return value_id
        return self.graph.add_node("float_cast", [value_id], self.source(node), f"{info['name']}_{dtype}", dtype,
                                   expected_shape=list(info["shape"]))

    def add_plain(self, node: torch.fx.Node, op: str, inputs: list[int], ints: dict[str, list[int]] | None = None,
                  floats: dict[str, float] | None = None, params: dict[str, np.ndarray] | None = None,
                  suffix: str = "", dtype: str | None = None, shape: list[int] | None = None) -> int:
        """Add a float op node of value ids ``inputs``; its output takes ``node``'s example dtype and shape unless
        ``dtype`` / ``shape`` are given (an intermediate node of a converter, named with ``suffix``)."""
        example = self.example(node)
        if is_tensor(example):
            dtype = dtype or self.plain_dtype(example.dtype, node)
            shape = list(example.shape) if shape is None else shape
        where = self.source(node)
        return self.graph.add_node(op, inputs, where, where + suffix, dtype, ints=ints or {}, floats=floats or {},
                                   expected_shape=shape or [], params=params or {})

    # --- building the qnnpy graph -------------------------------------------------
    def quantized_output(self, node: torch.fx.Node) -> dict[str, Any]:
        """Output dtype, qparams and shape of ``node`` as PyTorch produced them."""
        out = self.captured.values[node.name]
        if not is_quantized(out):
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

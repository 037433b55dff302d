"""Islands of the canonical QDQ form: the float computation between the
``R.dequantize`` of integer tensors and one ``R.quantize``.

An island is read through the bindings of the function's dataflow block: a
float variable bound in the block is looked through to the call that computes it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import tvm
from tvm import tirx
from tvm import relax

INTEGER_DTYPES = ("int8", "uint8", "int16", "uint16", "int32")


class NotLowerable(Exception):
    """An island the pass leaves in float; the message says why."""


def op_name(expr: Any) -> str | None:
    """``"relax.nn.conv2d"`` -> ``"nn.conv2d"``; None for a non-call."""
    if isinstance(expr, relax.Call) and hasattr(expr.op, "name"):
        return str(expr.op.name).removeprefix("relax.")
    return None


def dtype_of(expr: Any) -> str:
    return str(expr.ty.dtype)


def shape_of(expr: Any) -> tuple[int, ...]:
    """The static shape of ``expr``; NotLowerable where an extent is symbolic (the rules need every extent)."""
    dims = expr.ty.shape
    if not all(isinstance(d, tirx.IntImm) for d in dims):
        raise NotLowerable(f"symbolic shape {[str(d) for d in dims]}: the integer rules need static shapes")
    return tuple(int(d) for d in dims)


@dataclass
class QParams:
    """Per-tensor or per-channel quantization parameters read from the module."""

    scale: np.ndarray  # float32, rank 0 or 1
    zero_point: np.ndarray  # int64, rank 0 or 1
    axis: int

    @property
    def per_tensor(self) -> bool:
        return self.scale.size == 1 and self.zero_point.size == 1

    def scalar(self, what: str) -> tuple[np.float32, int]:
        if not self.per_tensor:
            raise NotLowerable(f"{what} is quantized per channel")
        return np.float32(self.scale.reshape(-1)[0]), int(self.zero_point.reshape(-1)[0])


@dataclass
class Dequantized:
    """``R.dequantize(data, scale, zero_point, axis)`` of an integer tensor."""

    data: Any  # the integer Relax expression
    q: QParams


class Bindings:
    """The variables bound in one dataflow block and the known values of params."""

    def __init__(self, block: Any, params: dict[str, np.ndarray]):
        self.value = {b.var: b.value for b in block.bindings}
        self.params = params

    def resolve(self, expr: Any) -> Any:
        """Looks through variables bound in the block to the expression that computes them."""
        while isinstance(expr, relax.Var) and expr in self.value:
            expr = self.value[expr]
        return expr

    def constant(self, expr: Any, what: str) -> np.ndarray:
        """The value of a constant or of a param whose value is known."""
        expr = self.resolve(expr)
        if isinstance(expr, tvm.ir.expr.Constant):
            return expr.value.numpy()
        if isinstance(expr, relax.Var) and expr.name in self.params:
            return np.asarray(self.params[expr.name])
        if op_name(expr) == "multiply":  # e.g. TFLite's bias scale s_in * s_w, in float32
            a, b = (self.constant(arg, what) for arg in expr.args)
            return np.multiply(a, b, dtype=np.float32) if a.dtype == np.float32 else a * b
        raise NotLowerable(f"{what} is not a constant or a param with a known value")

    def dequantized(self, expr: Any, what: str) -> Dequantized:
        """The integer tensor and qparams behind a dequantized float operand."""
        call = self.resolve(expr)
        if op_name(call) != "dequantize":
            raise NotLowerable(f"{what} is {op_name(call) or type(call).__name__}, not a dequantize")
        data = call.args[0]
        if dtype_of(data) not in INTEGER_DTYPES:
            raise NotLowerable(f"{what} dequantizes a {dtype_of(data)} tensor")
        scale = self.constant(call.args[1], f"{what}'s scale").astype(np.float32)
        zero_point = self.constant(call.args[2], f"{what}'s zero point").astype(np.int64)
        return Dequantized(data, QParams(scale, zero_point, int(call.attrs.axis)))


@dataclass
class Island:
    """One ``R.quantize`` binding and what it needs to be lowered."""

    name: str  # the quantize's variable name (the IR value name in qnnpy's modules)
    root: Any  # the float expression quantized
    out: QParams
    out_dtype: str
    out_shape: tuple[int, ...]
    bindings: Bindings

    def call(self, expr: Any) -> Any:
        return self.bindings.resolve(expr)

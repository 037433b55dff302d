"""What a TorchScript op node means in Python: the callable an FX node calls, and scalar evaluation.

TorchScript graphs name ops by kind (``aten::max_pool2d``, ``quantized::conv2d``)
and pass every argument positionally in schema order. The TorchScript front end
turns tensor ops into FX nodes that call the same Python callables an FX trace
of an eager model records (``torch.max_pool2d``, ``torch.ops.quantized.conv2d``),
so one converter table serves both. Non-tensor ops (sizes, comparisons, list
building) are evaluated on the example inputs here.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable, Container

import torch
import torch.nn.functional as F

from qnnpy.errors import ConversionError

# c10::ScalarType and c10::MemoryFormat enum values, as TorchScript stores them in int constants.
_SCALAR_TYPES = {
    0: torch.uint8, 1: torch.int8, 2: torch.int16, 3: torch.int32, 4: torch.int64, 5: torch.float16,
    6: torch.float32, 7: torch.float64, 11: torch.bool, 12: torch.qint8, 13: torch.quint8, 14: torch.qint32,
    15: torch.bfloat16,
}
_SCALAR_TYPE_CODES = {dtype: code for code, dtype in _SCALAR_TYPES.items()}
_MEMORY_FORMATS = {0: torch.contiguous_format, 1: torch.preserve_format, 2: torch.channels_last,
                   3: torch.channels_last_3d}
_ENUM_ARGUMENTS = {"ScalarType": _SCALAR_TYPES, "MemoryFormat": _MEMORY_FORMATS}


@dataclass(frozen=True)
class PythonOp:
    """How an FX node calls an op: ``call_function`` with a callable or ``call_method`` with a name."""

    fx_op: str
    target: Any


def op_schema(node: torch._C.Node) -> torch._C.FunctionSchema:
    """The schema of an op node (its overload is the one TorchScript resolved)."""
    return torch._C.parse_schema(node.schema())


def overload(schema: torch._C.FunctionSchema) -> Any:
    """The op overload a TorchScript node's schema names (``torch.ops.aten.add.Tensor``)."""
    namespace, name = schema.name.split("::")
    packet = getattr(getattr(torch.ops, namespace), name)
    return getattr(packet, schema.overload_name or "default")


# aten ops whose Python forms take schema arguments as keywords only (Tensor.to: memory_format), so
# the positional TorchScript arguments only fit the op overload (torch.ops.aten.to.dtype, ...).
_OVERLOAD_ONLY = frozenset({"aten::to"})


def python_op(kind: str, schema: torch._C.FunctionSchema, known: Container[Any] = frozenset()) -> PythonOp:
    """The Python callable an FX trace would record for a TorchScript op kind.

    ``aten::X`` has up to three Python forms: ``torch.X``, ``torch.nn.functional.X``
    and the Tensor method ``X``; the first one in ``known`` (callables, or
    ``"Tensor.X"`` for methods: the keys of a converter table) wins, else the
    first that exists, else the op overload itself. Every other namespace
    (``quantized::X``) becomes the op packet ``torch.ops.<namespace>.X``.
    In-place kinds (``aten::relu_``) map to their out-of-place op.
    """
    namespace, name = kind.split("::")
    if namespace != "aten":
        return PythonOp("call_function", getattr(getattr(torch.ops, namespace), name))
    if kind in _OVERLOAD_ONLY:
        return PythonOp("call_function", overload(schema))
    base = in_place_base(kind) or name
    forms = [PythonOp("call_function", getattr(m, base)) for m in (torch, F) if callable(getattr(m, base, None))]
    if schema.arguments and schema.arguments[0].name == "self" and callable(getattr(torch.Tensor, base, None)):
        forms.append(PythonOp("call_method", base))
    for form in forms:
        if (f"Tensor.{form.target}" if form.fx_op == "call_method" else form.target) in known:
            return form
    return forms[0] if forms else PythonOp("call_function", overload(schema))


def in_place_base(kind: str) -> str | None:
    """``relu`` for ``aten::relu_``; None for an op that does not write into its first argument."""
    name = kind.split("::")[1]
    if name.endswith("_") and not name.endswith("__") and kind.startswith("aten::"):
        return name[:-1]
    return None


def decode_enums(schema: torch._C.FunctionSchema, args: list[Any]) -> list[Any]:
    """Turn the ints TorchScript stores for dtype and memory format arguments into torch objects."""
    out = []
    for spec, value in zip(schema.arguments, args):
        type_name = str(spec.real_type).removeprefix("Optional[").removesuffix("]")
        table = _ENUM_ARGUMENTS.get(type_name)
        if table is not None and isinstance(value, int) and not isinstance(value, bool):
            if value not in table:
                raise ConversionError(f"{schema.name}: unknown {type_name} value {value}")
            value = table[value]
        out.append(value)
    return out


def split_arguments(schema: torch._C.FunctionSchema, args: list[Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Positional args, and keyword-only ones by name, as the Python binding of the op takes them."""
    positional = [a for spec, a in zip(schema.arguments, args) if not spec.kwarg_only]
    keywords = {spec.name: a for spec, a in zip(schema.arguments, args) if spec.kwarg_only}
    return tuple(positional), keywords


def _append(items: list, value: Any) -> list:
    items.append(value)
    return items


def _extend(items: list, values: list) -> None:
    items.extend(values)


def _size(t: torch.Tensor, dim: int | None = None) -> Any:
    return list(t.shape) if dim is None else t.shape[dim]


# Ops on sizes, flags and lists: evaluated in Python on the example values.
SCALAR_OPS: dict[str, Callable[..., Any]] = {
    "aten::size": _size,
    "aten::dim": lambda t: t.dim(),
    "aten::numel": lambda t: t.numel(),
    "aten::len": len,
    "aten::eq": operator.eq, "aten::ne": operator.ne, "aten::lt": operator.lt,
    "aten::le": operator.le, "aten::gt": operator.gt, "aten::ge": operator.ge,
    "aten::__is__": operator.is_, "aten::__isnot__": operator.is_not, "aten::__not__": operator.not_,
    "aten::__and__": operator.and_, "aten::__or__": operator.or_,
    "aten::add": operator.add, "aten::sub": operator.sub, "aten::mul": operator.mul,
    "aten::floordiv": operator.floordiv, "aten::div": operator.truediv, "aten::neg": operator.neg,
    "aten::remainder": operator.mod,
    "aten::Int": int, "aten::IntImplicit": int, "aten::Float": float, "aten::FloatImplicit": float,
    "aten::Bool": bool, "aten::ScalarImplicit": lambda t: t.item(),
    "aten::append": _append, "aten::extend": _extend,
    "aten::format": lambda fmt, *values: fmt.format(*values),
    "aten::warn": lambda *a: None,
    "aten::q_scale": lambda t: t.q_scale(), "aten::q_zero_point": lambda t: t.q_zero_point(),
    "aten::is_floating_point": lambda t: t.is_floating_point(),
    "prim::dtype": lambda t: _SCALAR_TYPE_CODES[t.dtype], "prim::device": lambda t: t.device,
    "prim::is_quantized": lambda t: t.is_quantized,
    "prim::min": min, "prim::max": max,
}

# Scalar ops that only read a tensor's metadata (static once the example inputs fix the shapes).
METADATA_OPS = frozenset({
    "aten::size", "aten::dim", "aten::numel", "aten::len", "aten::q_scale", "aten::q_zero_point",
    "aten::is_floating_point", "prim::dtype", "prim::device", "prim::is_quantized",
})


def evaluate(kind: str, schema: torch._C.FunctionSchema | None, args: list[Any]) -> Any:
    """Run a non-traced op on concrete values: Python semantics for scalar ops, else the op overload."""
    scalar = SCALAR_OPS.get(kind)
    if scalar is not None and not (schema is not None and _returns_tensor(schema)):
        return scalar(*args)
    if schema is None:
        raise ConversionError(f"TorchScript op {kind} cannot be evaluated by qnnpy")
    positional, keywords = split_arguments(schema, decode_enums(schema, args))
    return overload(schema)(*positional, **keywords)


def _returns_tensor(schema: torch._C.FunctionSchema) -> bool:
    return any("Tensor" in str(r.type) for r in schema.returns)

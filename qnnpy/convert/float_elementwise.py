"""Converters of element-wise aten ops computed in float (the float ops of ``src/ops/float_unary.cpp`` and
``float_binary.cpp``): operands cast to the dtype PyTorch computes in, numbers as scalar constants."""
from __future__ import annotations

from typing import Any, Callable

import torch
import torch.fx

from qnnpy.convert.context import ConversionContext
from qnnpy.convert.float_args import bind, operands, promoted, refuse

Converter = Callable[[ConversionContext, torch.fx.Node], int]
_aten = torch.ops.aten

# aten op -> IR op of one input. Float math casts an integer input to float32 (PyTorch returns float).
_UNARY = {
    "exp": "float_exp", "expm1": "float_expm1", "log": "float_log", "log2": "float_log2", "log10": "float_log10",
    "log1p": "float_log1p", "sqrt": "float_sqrt", "rsqrt": "float_rsqrt", "reciprocal": "float_reciprocal",
    "sin": "float_sin", "cos": "float_cos", "tan": "float_tan", "sinh": "float_sinh", "cosh": "float_cosh",
    "tanh": "float_tanh", "asin": "float_asin", "acos": "float_acos", "atan": "float_atan", "asinh": "float_asinh",
    "acosh": "float_acosh", "atanh": "float_atanh", "erf": "float_erf", "sigmoid": "float_sigmoid",
    "silu": "float_silu", "hardsigmoid": "float_hardsigmoid", "hardswish": "float_hardswish",
    "isnan": "float_isnan", "isinf": "float_isinf",
}
# Ops of one input that keep an integer input's dtype.
_UNARY_INTEGER = {"abs": "float_abs", "neg": "float_neg", "sign": "float_sign"}
# Rounding: the identity on integers, as in PyTorch.
_ROUNDING = {"ceil": "float_ceil", "floor": "float_floor", "round": "float_round", "trunc": "float_trunc"}

# aten op -> IR op of two inputs computed in the output's dtype (arithmetic).
_ARITHMETIC = {
    "add": "float_add", "sub": "float_sub", "mul": "float_mul", "div": "float_div", "pow": "float_pow",
    "maximum": "float_maximum", "minimum": "float_minimum", "fmod": "float_fmod", "remainder": "float_remainder",
    "atan2": "float_atan2", "bitwise_and": "float_bitwise_and", "bitwise_or": "float_bitwise_or",
    "bitwise_xor": "float_bitwise_xor",
}
# aten op -> IR op of two inputs computed in their promoted dtype, giving bool.
_TESTS = {
    "eq": "float_eq", "ne": "float_ne", "lt": "float_lt", "le": "float_le", "gt": "float_gt", "ge": "float_ge",
    "logical_and": "float_logical_and", "logical_or": "float_logical_or", "logical_xor": "float_logical_xor",
}
_DIVISION_MODES = {None: "float_div", "trunc": "float_trunc_divide", "floor": "float_floor_divide"}


def _unary(ir_op: str, keeps_integers: bool) -> Converter:
    def convert(ctx: ConversionContext, node: torch.fx.Node) -> int:
        x = node.args[0]
        dtype = promoted(ctx, node, x) if keeps_integers else "float32"
        return ctx.add_plain(node, ir_op, operands(ctx, node, [x], dtype))
    convert.__doc__ = f"``{ir_op}`` of one tensor (an integer one cast to float32 where PyTorch computes in float)."
    return convert


def convert_rounding(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """ceil / floor / round / trunc: the float op on float32, the identity on integers (as in PyTorch)."""
    x = node.args[0]
    if promoted(ctx, node, x) != "float32":
        return ctx.value(x, node)
    if node.target == _aten.round.decimals and bind(node)["decimals"]:
        raise refuse(ctx, node, "round with decimals is not supported")
    return ctx.add_plain(node, _ROUNDING[node.target._opname], operands(ctx, node, [x], "float32"))


def convert_relu(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """relu: ``float_relu`` on float32, max(x, 0) on integers."""
    x = node.args[0]
    dtype = promoted(ctx, node, x)
    if dtype == "float32":
        return ctx.add_plain(node, "float_relu", operands(ctx, node, [x], dtype))
    return ctx.add_plain(node, "float_maximum", operands(ctx, node, [x, 0], dtype))


def convert_logical_not(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """logical_not of any dtype (zero is false), bool out."""
    x = node.args[0]
    return ctx.add_plain(node, "float_logical_not", operands(ctx, node, [x], promoted(ctx, node, x)))


def convert_bitwise_not(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """bitwise_not: ``float_logical_not`` on bool, ``float_bitwise_not`` on integers."""
    x = node.args[0]
    dtype = promoted(ctx, node, x)
    return ctx.add_plain(node, "float_logical_not" if dtype == "bool" else "float_bitwise_not",
                         operands(ctx, node, [x], dtype))


def _arithmetic(ir_op: str) -> Converter:
    def convert(ctx: ConversionContext, node: torch.fx.Node) -> int:
        args = bind(node)
        names = [a.name for a in node.target._schema.arguments]
        dtype = ctx.plain_dtype(ctx.example(node).dtype, node)
        op = ir_op
        if ir_op == "float_div":
            op = _DIVISION_MODES.get(args.get("rounding_mode"))
            if op is None:
                raise refuse(ctx, node, f"division with rounding_mode={args['rounding_mode']!r} is not supported")
        first, second = operands(ctx, node, [args[names[0]], args[names[1]]], dtype)
        alpha = args.get("alpha")
        if ir_op in ("float_add", "float_sub") and alpha not in (None, 1):  # add / sub's alpha * other
            second = ctx.add_plain(node, "float_mul", [second, ctx.scalar(alpha, dtype, node)], suffix="_alpha",
                                   shape=list(ctx.graph.value(second)["shape"]))
        return ctx.add_plain(node, op, [first, second])
    convert.__doc__ = f"``{ir_op}`` of two tensors, or a tensor and a number, in the output's dtype."
    return convert


def _test(ir_op: str) -> Converter:
    def convert(ctx: ConversionContext, node: torch.fx.Node) -> int:
        first, second = node.args[:2]
        dtype = promoted(ctx, node, first, second)
        return ctx.add_plain(node, ir_op, operands(ctx, node, [first, second], dtype))
    convert.__doc__ = f"``{ir_op}`` of two tensors, or a tensor and a number, compared in their promoted dtype."
    return convert


def convert_where(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """where(condition, x, y): the branches in their promoted dtype, a non-bool condition tested != 0."""
    condition, x, y = node.args[:3]
    cond = ctx.value(condition, node)
    if ctx.graph.value(cond)["dtype"] != "bool":
        cond = ctx.cast(cond, "bool", node)
    dtype = ctx.plain_dtype(ctx.example(node).dtype, node)
    return ctx.add_plain(node, "float_where", [cond, *operands(ctx, node, [x, y], dtype)])


def convert_clamp(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """clamp(x, min, max) (numbers or tensors, either None): ``float_maximum`` then ``float_minimum``, which
    propagate NaN as torch.clamp does."""
    args = bind(node)
    dtype = ctx.plain_dtype(ctx.example(node).dtype, node)
    y = operands(ctx, node, [args["self"]], dtype)[0]
    for bound, op in ((args.get("min"), "float_maximum"), (args.get("max"), "float_minimum")):
        if bound is not None:
            y = ctx.add_plain(node, op, [y, operands(ctx, node, [bound], dtype)[0]], suffix=f"_{op[6:]}")
    return y


def convert_hardtanh(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """hardtanh (relu6) of a float tensor: ``float_clamp`` to [min_val, max_val]."""
    args = bind(node)
    return ctx.add_plain(node, "float_clamp", operands(ctx, node, [args["self"]], "float32"),
                         floats={"min": float(args["min_val"]), "max": float(args["max_val"])})


def convert_gelu(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """GELU, erf form or (``approximate="tanh"``) tanh form."""
    approximate = bind(node)["approximate"]
    if approximate not in ("none", "tanh"):
        raise refuse(ctx, node, f"gelu with approximate={approximate!r} is not supported")
    return ctx.add_plain(node, "float_gelu", operands(ctx, node, [node.args[0]], "float32"),
                         ints={"approximate": [int(approximate == "tanh")]})


def convert_elu(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """elu(x, alpha, scale, input_scale)."""
    args = bind(node)
    return ctx.add_plain(node, "float_elu", operands(ctx, node, [args["self"]], "float32"),
                         floats={k: float(args[k]) for k in ("alpha", "scale", "input_scale")})


def convert_leaky_relu(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """leaky_relu(x, negative_slope)."""
    args = bind(node)
    return ctx.add_plain(node, "float_leaky_relu", operands(ctx, node, [args["self"]], "float32"),
                         floats={"negative_slope": float(args["negative_slope"])})


def convert_to_copy(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """_to_copy / to.dtype / type_as...: a ``float_cast`` to the output's dtype, nothing when it is the same."""
    return ctx.cast(ctx.value(node.args[0], node), ctx.plain_dtype(ctx.example(node).dtype, node), node)


def convert_copy(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """copy(self, src): ``src``'s values in ``self``'s dtype and shape (cast, then broadcast)."""
    args = bind(node)
    value = operands(ctx, node, [args["src"]], ctx.plain_dtype(ctx.example(node).dtype, node))[0]
    if list(ctx.example(args["src"]).shape) == list(ctx.example(node).shape):
        return value
    return ctx.add_plain(node, "float_expand", [value], ints={"shape": list(ctx.example(node).shape)})


def convert_alias(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """clone / alias / contiguous / detach / lift_fresh_copy: the output is the input."""
    return ctx.value(node.args[0], node)


def convert_dropout(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """dropout / feature_dropout in eval mode (train False, or p 0): the output is the input."""
    args = bind(node)
    if args["train"] and args["p"]:
        raise refuse(ctx, node, "dropout with train=True samples random masks; convert the model in eval mode")
    return ctx.value(args["input"], node)


def _tensor_overloads(name: str) -> list[Any]:
    """The overloads of an aten op on tensors: .Tensor / .Scalar and their kin, else .default (aten.add.default
    and the like add Python ints)."""
    packet = getattr(_aten, name)
    names = [o for o in ("Tensor", "Scalar", "Tensor_mode", "Scalar_mode", "Tensor_Tensor", "Tensor_Scalar")
             if o in packet.overloads()]
    return [getattr(packet, o) for o in (names or ["default"])]


def elementwise_converters() -> dict[Any, Converter]:
    """The element-wise float converters by aten op overload."""
    table: dict[Any, Converter] = {}
    for name, ir_op in {**_UNARY, **_UNARY_INTEGER}.items():
        table[getattr(_aten, name).default] = _unary(ir_op, name in _UNARY_INTEGER)
    for name in _ROUNDING:
        table[getattr(_aten, name).default] = convert_rounding
    table[_aten.round.decimals] = convert_rounding
    for name, ir_op in {**_ARITHMETIC, **_TESTS}.items():
        for overload in _tensor_overloads(name):
            table[overload] = _test(ir_op) if name in _TESTS else _arithmetic(ir_op)
    table.update({
        _aten.relu.default: convert_relu,
        _aten.logical_not.default: convert_logical_not,
        _aten.bitwise_not.default: convert_bitwise_not,
        _aten.where.self: convert_where,
        _aten.clamp.default: convert_clamp,
        _aten.clamp.Tensor: convert_clamp,
        _aten.hardtanh.default: convert_hardtanh,
        _aten.gelu.default: convert_gelu,
        _aten.elu.default: convert_elu,
        _aten.leaky_relu.default: convert_leaky_relu,
        _aten._to_copy.default: convert_to_copy,
        _aten.copy.default: convert_copy,
        _aten.clone.default: convert_alias,
        _aten.alias.default: convert_alias,
        _aten.lift_fresh_copy.default: convert_alias,
        _aten.detach.default: convert_alias,
        _aten.contiguous.default: convert_alias,
        _aten.dropout.default: convert_dropout,
        _aten.feature_dropout.default: convert_dropout,
    })
    return table

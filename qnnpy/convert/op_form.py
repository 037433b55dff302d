"""Converter table entries for one PyTorch form of an op (``ops.CONVERTERS``, ``dynamic_ops.DYNAMIC_CONVERTERS``)."""
from __future__ import annotations

from typing import Any, Callable

import torch.fx

from qnnpy.convert.context import ConversionContext, op_name
from qnnpy.errors import ConversionError
from qnnpy.quantized_types import is_quantized


class OpForm:
    """A table entry for one PyTorch form of an op: the op's converter, called with the arguments the form fixes.

    ``description`` names the form and what it becomes, as the docstring of a converter does.
    """

    def __init__(self, converter: Callable[..., int], description: str, **arguments: Any):
        self.converter = converter
        self.description = description
        self.arguments = arguments

    def __call__(self, ctx: ConversionContext, node: torch.fx.Node) -> int:
        return self.converter(ctx, node, **self.arguments)


class AtenForm(OpForm):
    """A table entry for an aten op: ``converter`` for the anchor of a quantized island (a quantized example
    output), None where qnnpy has no integer form of the op; ``float_converter`` for the op computing in float
    (qnnpy.convert.float_aten), None where it has no float form."""

    def __init__(self, converter: Callable[..., int] | None, description: str,
                 float_converter: Callable[[ConversionContext, torch.fx.Node], int] | None = None, **arguments: Any):
        super().__init__(converter, description, **arguments)
        self.float_converter = float_converter

    def __call__(self, ctx: ConversionContext, node: torch.fx.Node) -> int:
        example = ctx.example(node)
        if is_quantized(example):
            if self.converter is not None:
                try:
                    return super().__call__(ctx, node)
                except (ConversionError, ValueError):
                    if self.float_converter is None:
                        raise
            elif self.float_converter is None:
                raise ConversionError(f"{ctx.source(node)}: {op_name(ctx.captured.module, node)} on quantized tensors "
                                      "has no integer form in qnnpy")
            return float_island(ctx, node, self.float_converter)
        if self.float_converter is None:
            raise ConversionError(
                f"{ctx.source(node)}: {op_name(ctx.captured.module, node)} computes in float here (the quantizer "
                "left it outside a quantized island) and qnnpy has no float form of it; quantize it "
                "(annotate it in the quantizer) or leave it out of the model")
        return self.float_converter(ctx, node)


def float_island(ctx: ConversionContext, node: torch.fx.Node, float_converter: Callable[[ConversionContext, torch.fx.Node], int]) -> int:
    """A PT2E island ``dequantize -> op -> quantize`` in the form PT2E defines its numerics: the quantized inputs
    dequantized, the op's float form, a quantize to the island's output qparams. For an island whose integer form
    does not take this instance of the op (an add whose operands broadcast, ...)."""
    where = ctx.source(node)
    values = ctx.captured.values
    saved_env: dict[str, int] = {}
    saved_values: dict[str, Any] = {node.name: values[node.name]}
    for a in node.all_input_nodes:
        if a.name in ctx.env and is_quantized(values.get(a.name)):
            saved_env[a.name], saved_values[a.name] = ctx.env[a.name], values[a.name]
            ctx.env[a.name] = ctx.graph.add_node("dequantize", [saved_env[a.name]], where, f"{where}_in", "float32")
            values[a.name] = values[a.name].dequantize()
    values[node.name] = saved_values[node.name].dequantize()
    try:
        y = float_converter(ctx, node)
    finally:
        ctx.env.update(saved_env)
        values.update(saved_values)
    if fused_relu(node):  # the island's ReLU, which the capture folded into its anchor
        y = ctx.graph.add_node("float_relu", [y], where, f"{where}_relu", "float32")
    return ctx.graph.add_node("quantize", [y], where, f"{where}_q", **ctx.quantized_output(node))


def fused_relu(node: torch.fx.Node) -> bool:
    """Whether the PT2E capture folded the ReLU after this island's anchor into it (pt2e_capture.py)."""
    return bool(node.meta.get("pt2e_fused_relu", False))

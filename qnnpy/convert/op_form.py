"""Converter table entries for one PyTorch form of an op (``ops.CONVERTERS``, ``dynamic_ops.DYNAMIC_CONVERTERS``)."""
from __future__ import annotations

from typing import Any, Callable

import torch.fx

from qnnpy.convert.context import ConversionContext, op_name
from qnnpy.errors import ConversionError


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
    """A table entry for an aten op of a PT2E graph: ``converter`` for the anchor of a quantized island
    (a quantized example output), ``float_converter`` for the op left in float, or an error naming the op
    when it has no float form."""

    def __init__(self, converter: Callable[..., int], description: str,
                 float_converter: Callable[[ConversionContext, torch.fx.Node], int] | None = None, **arguments: Any):
        super().__init__(converter, description, **arguments)
        self.float_converter = float_converter

    def __call__(self, ctx: ConversionContext, node: torch.fx.Node) -> int:
        if ctx.example(node).is_quantized:
            return super().__call__(ctx, node)
        if self.float_converter is None:
            raise ConversionError(
                f"{ctx.source(node)}: {op_name(ctx.captured.module, node)} computes in float here (the quantizer "
                "left it outside a quantized island) and qnnpy has no float form of it; quantize it "
                "(annotate it in the quantizer) or leave it out of the model")
        return self.float_converter(ctx, node)

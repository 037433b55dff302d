"""A converter table entry for one PyTorch form of an op (``ops.CONVERTERS``, ``dynamic_ops.DYNAMIC_CONVERTERS``)."""
from __future__ import annotations

from typing import Any, Callable

import torch.fx

from qnnpy.convert.context import ConversionContext


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

"""A symbolic input dimension (a sequence length): the model converted at three sizes, generalized by the core.

PyTorch's captures specialize every shape, so the converter sees one size at a time. :func:`convert_symbolic`
converts the model at the example's size, at ``max`` and at ``max - 1`` (the example inputs resized along their
axis), and ``_core.generalize`` fits every integer attribute that differs (reshape targets, slice ends) as
affine in the size, holds the constants that follow it (causal masks, rotary tables computed from positions) at
``max`` and cuts them to the run's size, and checks the fit by rebuilding the graph at the other sizes.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from qnnpy import _core
from qnnpy.errors import ConversionError
from qnnpy.module import QDQModule


@dataclass(frozen=True)
class DynamicDim:
    """An input dimension whose size varies at run time, e.g. the sequence length of a transformer.

    ``axes`` holds, for each example input in order, the axis that carries the size (``None`` for an input without
    it): ``DynamicDim(axes=(1,), max=128)`` for ``input_ids`` of shape ``(1, S)``; ``(1, 1)`` for ``input_ids``
    and ``attention_mask``. ``max`` bounds the size (constants that follow it, such as a causal mask, are kept at
    that size); ``name`` is the Relax symbolic variable. The example's size must be below ``max - 1``: the
    model is converted and checked at three sizes.
    """

    axes: tuple[int | None, ...]
    max: int
    name: str = "seq"


def _example_size(spec: DynamicDim, inputs: Sequence[torch.Tensor]) -> int:
    if len(spec.axes) != len(inputs):
        raise ConversionError(f"DynamicDim.axes names {len(spec.axes)} input(s); the model takes {len(inputs)}")
    sizes = set()
    for index, (axis, x) in enumerate(zip(spec.axes, inputs)):
        if axis is None:
            continue
        if not isinstance(x, torch.Tensor) or not 0 <= axis < x.dim():
            raise ConversionError(f"DynamicDim: input {index} has no axis {axis}")
        sizes.add(int(x.shape[axis]))
    if len(sizes) != 1:
        raise ConversionError(f"DynamicDim: the example inputs must agree on the size along {spec.axes}, got {sorted(sizes)}")
    size = sizes.pop()
    if not 1 <= size < spec.max - 1:
        raise ConversionError(f"DynamicDim: the example's size {size} must be at least 1 and below max - 1 = "
                              f"{spec.max - 1} (the model is converted at the example's size, max - 1 and max)")
    return size


def resized(inputs: Sequence[torch.Tensor], axes: Sequence[int | None], size: int) -> tuple[torch.Tensor, ...]:
    """The inputs with ``size`` entries along their axis: the example's entries repeated cyclically."""
    out = []
    for axis, x in zip(axes, inputs):
        if axis is not None:
            x = x.index_select(axis, torch.arange(size) % x.shape[axis])
        out.append(x)
    return tuple(out)


def convert_symbolic(convert: Callable[[tuple[torch.Tensor, ...]], QDQModule], inputs: Sequence[torch.Tensor],
                     spec: DynamicDim, model_name: str) -> QDQModule:
    """``convert`` (inputs -> module) run at the example's size, ``spec.max`` and ``spec.max - 1``, and the
    graphs generalized into one with the symbolic dim."""
    size = _example_size(spec, inputs)
    example = convert(tuple(inputs))
    with warnings.catch_warnings():  # the same model again: its warnings were said once
        warnings.simplefilter("ignore")
        at_max = convert(resized(inputs, spec.axes, spec.max))
        below_max = convert(resized(inputs, spec.axes, spec.max - 1))
    axes = [(index, axis) for index, axis in enumerate(spec.axes) if axis is not None]
    try:
        graph = _core.generalize(example.graph, at_max.graph, below_max.graph, spec.name, size, spec.max, axes)
    except ValueError as e:
        raise ConversionError(f"{model_name} cannot take a symbolic '{spec.name}': {e}") from e
    return QDQModule(graph, example.torch_nodes)

"""What an FX node calls, as the capture front ends and the converter read it: its bare op name, whether it
samples random numbers, the out-of-place form of an in-place aten op."""
from __future__ import annotations

from typing import Any

import torch
import torch.fx

# Python-level spellings of random ops (aten overloads carry the nondeterministic_seeded tag).
_RANDOM_NAMES = {"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "bernoulli",
                 "normal", "multinomial", "uniform_", "normal_", "exponential_", "poisson"}


def target_name(node: torch.fx.Node) -> str:
    """The bare name of what a node calls: ``roll`` for torch.roll, aten.roll.default and Tensor.roll."""
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        return target._opname
    if isinstance(target, str):
        return target.split(".")[-1]
    return getattr(target, "__name__", str(target))


def is_random(node: torch.fx.Node) -> bool:
    """Whether the node samples random numbers (its value differs from run to run). An op that samples only for
    its dropout (scaled_dot_product_attention, dropout) is not random with a dropout probability of 0 or in eval
    mode."""
    if isinstance(node.target, torch._ops.OpOverload):
        if torch.Tag.nondeterministic_seeded not in node.target.tags:
            return False
        schema = node.target._schema.arguments
        args = {a.name: a.default_value for a in schema if a.has_default_value()}
        args |= dict(zip([a.name for a in schema], node.args)) | dict(node.kwargs)
        return not (args.get("dropout_p") == 0.0 or args.get("train") is False)
    return target_name(node) in _RANDOM_NAMES


def functional(target: Any) -> Any:
    """The out-of-place form of an in-place aten op (``aten.relu.default`` for ``aten.relu_.default``), else
    ``target`` itself."""
    if isinstance(target, torch._ops.OpOverload):
        name = target._opname
        if name.endswith("_") and not name.endswith("__"):
            packet = getattr(torch.ops.aten, name[:-1], None)
            out_of_place = getattr(packet, target._overloadname, None) if packet is not None else None
            if out_of_place is not None:
                return out_of_place
    return target


# Ops whose output values PyTorch leaves undefined (uninitialized memory, whose bytes may spell NaN).
_UNDEFINED_VALUES = {"empty", "empty_strided", "new_empty", "new_empty_strided", "empty_like"}


def folded_value(node: torch.fx.Node, value: torch.Tensor) -> torch.Tensor:
    """The value a node computed from constants alone folds to: its recorded value, or zeros for ``empty`` and its
    kin, whose values are undefined (a module's float constant may not hold the NaN their memory may spell)."""
    return torch.zeros_like(value) if target_name(node) in _UNDEFINED_VALUES else value

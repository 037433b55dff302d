"""The input a model expects and the check that it runs on the inputs it is given: for the messages of
``from_torch`` and the command line when an example input has the wrong shape."""
from __future__ import annotations

from typing import Sequence

import torch


def check_model_runs(model: torch.nn.Module, inputs: Sequence[torch.Tensor], given: str) -> None:
    """Runs ``model`` on ``inputs`` once; if PyTorch fails, a ``ValueError`` saying that the inputs
    (``given``: how the caller names them) do not fit, with the input the model expects and the last line
    of PyTorch's message."""
    try:
        with torch.no_grad():
            model(*inputs)
    except Exception as e:
        expected = expected_input_text(model)
        hint = f"; it expects {expected}" if expected else ""
        last_line = ([line for line in str(e).splitlines() if line.strip()] or [type(e).__name__])[-1].strip()
        raise ValueError(f"{given}: the model does not run on inputs of this shape{hint} ({last_line})") from e


def expected_input_text(model: torch.nn.Module) -> str | None:
    """What the model takes, for a message: the example shapes recorded in an exported (PT2E) graph, else
    the input of the first layer with a weight ("(N, 3, H, W), the input of conv1 (Conv2d)"); None if unknown."""
    if isinstance(model, torch.fx.GraphModule):
        shapes = [tuple(n.meta["val"].shape) for n in model.graph.nodes
                  if n.op == "placeholder" and isinstance(n.meta.get("val"), torch.Tensor)]
        if shapes:
            return " and ".join(",".join(map(str, s)) for s in shapes)
    for name, layer in model.named_modules():
        kind = getattr(layer, "original_name", type(layer).__name__)  # a TorchScript module's class name
        weight, groups = _weight_and_groups(layer)
        if weight is None or weight.dim() < 2 or "Embedding" in kind:
            continue
        channels = weight.shape[0] if "Transpose" in kind else weight.shape[1] * groups
        shape = f"(..., {channels})" if weight.dim() == 2 else f"(N, {channels}, {'L' if weight.dim() == 3 else 'H, W'})"
        return f"{shape}, the input of its first layer {name or 'the model'} ({kind})"
    return None


def _weight_and_groups(layer: torch.nn.Module) -> tuple[torch.Tensor | None, int]:
    """A layer's weight and group count: a float module's attribute, a quantized module's ``weight()``, or
    the unpacked ``_packed_params`` of a TorchScript quantized module; (None, 1) for a layer without."""
    packed = getattr(layer, "_packed_params", None)
    if isinstance(packed, torch.ScriptObject) and packed._has_method("unpack"):
        groups = int(packed.groups()) if packed._has_method("groups") else 1
        return packed.unpack()[0], groups
    weight = getattr(layer, "weight", None)
    try:
        weight = weight() if callable(weight) else weight
    except Exception:  # a method that is not a weight accessor
        return None, 1
    return (weight, int(getattr(layer, "groups", 1))) if isinstance(weight, torch.Tensor) else (None, 1)

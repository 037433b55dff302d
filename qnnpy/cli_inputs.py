"""What the command line reads besides model files: shapes, counts, input arrays; and the input shape a
model expects, for the message when --input-shape is wrong."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from qnnpy.errors import InputFileError

if TYPE_CHECKING:
    import torch


def parse_shape(text: str) -> tuple[int, ...]:
    """``"1,3,224,224"`` -> ``(1, 3, 224, 224)``; every dimension a positive integer."""
    try:
        shape = tuple(int(part) for part in text.replace(" ", "").split(","))
    except ValueError:
        shape = ()
    if not shape or any(d <= 0 for d in shape):
        raise argparse.ArgumentTypeError(f"{text!r} is not a shape: give positive integers separated by commas, e.g. 1,3,224,224")
    return shape


def positive_int(text: str) -> int:
    """An integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def generated_inputs(shape: tuple[int, ...], count: int, seed: int) -> list["torch.Tensor"]:
    """``count`` standard-normal tensors of ``shape`` from a generator seeded with ``seed``."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=generator) for _ in range(count)]


def read_inputs(path: Path, shape: tuple[int, ...], dtype: str = "float32") -> list["torch.Tensor"]:
    """Inputs from a ``.npy`` array shaped like one input or stacked as ``(N, *shape)``: float32, or for an
    index input (``dtype`` "int64" / "int32", an embedding's) the integer array as that dtype."""
    import numpy as np
    import torch

    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise InputFileError(f"cannot read inputs from {path}: {e}") from e
    if tuple(array.shape) == shape:
        array = array[None]
    if tuple(array.shape[1:]) != shape:
        raise InputFileError(f"{path} holds an array of shape {tuple(array.shape)}; the module's input is {shape} "
                             f"(give one input of that shape or N stacked as (N, {', '.join(map(str, shape))}))")
    if dtype != "float32" and array.dtype.kind not in "iu":
        raise InputFileError(f"{path} holds {array.dtype} values; the module's input takes {dtype} indices")
    return [torch.from_numpy(np.ascontiguousarray(a, dtype=np.dtype(dtype))) for a in array]


def expected_input_text(model: "torch.nn.Module") -> str | None:
    """What the model takes, for a message: the example shapes recorded in an exported (PT2E) graph, else
    the input of the first layer with a weight ("(N, 3, H, W), the input of conv1 (Conv2d)"); None if unknown."""
    import torch

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


def _weight_and_groups(layer: "torch.nn.Module") -> tuple["torch.Tensor | None", int]:
    """A layer's weight and group count: a float module's attribute, a quantized module's ``weight()``, or
    the unpacked ``_packed_params`` of a TorchScript quantized module; (None, 1) for a layer without."""
    import torch

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

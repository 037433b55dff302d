"""What the command line reads besides model files: shapes, counts, input arrays."""
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

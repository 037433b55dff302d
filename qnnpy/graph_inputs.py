"""The arrays a graph's inputs take: float32, int64 / int32 indices (embedding lookups) or bool masks."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from qnnpy import _core


def input_dtypes(graph: _core.Graph) -> list[np.dtype]:
    """The numpy dtype of each graph input, in order."""
    return [np.dtype(graph.value(i)["dtype"]) for i in graph.inputs]


def input_arrays(graph: _core.Graph, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """``inputs`` as C-contiguous arrays of their graph input's dtype.

    A float input takes any real numeric array (cast to float32, as before integer inputs existed); an
    index input takes integer arrays only: a float array where indices are expected, or a complex or
    non-numeric one anywhere, raises ``ValueError`` naming the input, rather than being truncated.
    """
    names = [graph.value(i)["name"] for i in graph.inputs]
    arrays = []
    for name, dtype, x in zip(names, input_dtypes(graph), inputs):
        a = np.asarray(x)
        if a.dtype.kind not in "biuf":
            raise ValueError(f"input '{name}' takes a real numeric array, got {type(x).__name__} of {a.dtype}")
        if dtype.kind == "i" and a.dtype.kind not in "iu":
            raise ValueError(f"input '{name}' takes {dtype} indices, got an array of {a.dtype}")
        if dtype.kind == "b" and a.dtype.kind != "b":
            raise ValueError(f"input '{name}' takes a bool mask, got an array of {a.dtype}")
        arrays.append(np.asarray(a, dtype=dtype, order="C"))  # rank 0 stays rank 0 (ascontiguousarray makes it 1-D)
    arrays.extend(np.asarray(x) for x in inputs[len(names):])  # too many: the core names the count
    return arrays

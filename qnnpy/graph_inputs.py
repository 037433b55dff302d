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


def checked_input_arrays(graph: _core.Graph, inputs: Sequence[np.ndarray], any_batch: bool = False) -> list[np.ndarray]:
    """:func:`input_arrays`, after checking the number of inputs and each one's shape against the graph's
    inputs (dim 0 may differ with ``any_batch``): a ``ValueError`` naming the input, for runners (TVM's)
    that would otherwise stop on their own shape checks."""
    infos = [graph.value(i) for i in graph.inputs]
    if len(inputs) != len(infos):
        names = ", ".join(f"'{info['name']}'" for info in infos)
        raise ValueError(f"the module takes {len(infos)} input(s) ({names}), got {len(inputs)}")
    arrays = input_arrays(graph, inputs)
    for info, array in zip(infos, arrays):
        expected = tuple(info["shape"])
        same_rank = array.ndim == len(expected)
        if array.shape != expected and not (any_batch and same_rank and array.shape[1:] == expected[1:]):
            wanted = "(any batch" + "".join(f", {d}" for d in expected[1:]) + ")" if any_batch else str(expected)
            raise ValueError(f"input '{info['name']}' must have shape {wanted}, got {array.shape}")
    return arrays

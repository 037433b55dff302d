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


def checked_input_arrays(graph: _core.Graph, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """:func:`input_arrays`, after checking the number of inputs and each one's shape against the graph's
    inputs (dim 0 may differ with a dynamic batch, the axes of a symbolic dim within its bound): a
    ``ValueError`` naming the input, for runners (TVM's) that would otherwise stop on their own shape checks."""
    infos = [graph.value(i) for i in graph.inputs]
    if len(inputs) != len(infos):
        names = ", ".join(f"'{info['name']}'" for info in infos)
        raise ValueError(f"the module takes {len(infos)} input(s) ({names}), got {len(inputs)}")
    arrays = input_arrays(graph, inputs)
    free = free_axes(graph)
    for index, (info, array) in enumerate(zip(infos, arrays)):
        expected = tuple(info["shape"])
        loose = free.get(index, {})
        same = array.ndim == len(expected) and all(
            d == e or axis in loose for axis, (d, e) in enumerate(zip(array.shape, expected)))
        if not same:
            wanted = "(" + ", ".join(loose.get(axis, str(e)) for axis, e in enumerate(expected)) + ")"
            raise ValueError(f"input '{info['name']}' must have shape {wanted}, got {array.shape}")
    symbolic_size(graph, arrays)
    return arrays


def free_axes(graph: _core.Graph) -> dict[int, dict[int, str]]:
    """The input axes whose extent may differ from the graph's, by input index: axis -> how to name its size in a
    message (``any batch``, ``seq <= 64``)."""
    free: dict[int, dict[int, str]] = {}
    if graph.dynamic_batch:
        for index in range(len(graph.inputs)):
            free.setdefault(index, {})[0] = "any batch"
    symbolic = graph.symbolic_dim
    if symbolic is not None:
        for index, axis in symbolic["input_axes"]:
            free.setdefault(index, {})[axis] = f"{symbolic['name']} <= {symbolic['max']}"
    return free


def symbolic_size(graph: _core.Graph, arrays: Sequence[np.ndarray]) -> int | None:
    """The size of the graph's symbolic dim in a run on ``arrays`` (None without one): ValueError when the inputs
    disagree on it or it is outside [1, max]."""
    symbolic = graph.symbolic_dim
    if symbolic is None:
        return None
    sizes = {}
    for index, axis in symbolic["input_axes"]:
        array = arrays[index]
        if axis < np.ndim(array):
            sizes[graph.value(graph.inputs[index])["name"]] = int(np.shape(array)[axis])
    found = set(sizes.values())
    name, bound = symbolic["name"], symbolic["max"]
    if len(found) != 1:
        raise ValueError(f"the inputs disagree on '{name}': " + ", ".join(f"'{k}' {v}" for k, v in sizes.items()))
    size = found.pop()
    if not 1 <= size <= bound:
        raise ValueError(f"'{name}' must be in [1, {bound}] (the bound the module was converted with), got {size}")
    return size

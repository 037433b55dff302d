"""Float data movement (float_permute, float_expand, float_slice, float_pad, float_flip) against NumPy, on 1 and 2
threads: the runtime copies the trailing axes that read one contiguous run of the input at once, transposes the
last two axes 8 rows at a time, and splits large outputs among the workers; every path must give NumPy's values.
Shapes are large enough to split (above 64 Ki outputs) and odd, so that blocks and slices end inside rows."""
from __future__ import annotations

import numpy as np
import pytest

from qnnpy import _core
from qnnpy.module import QDQModule


def _run(op: str, x: np.ndarray, threads: int, ints: dict, floats: dict | None = None) -> np.ndarray:
    g = _core.Graph()
    y = g.add_node(op, [g.add_input("x", list(x.shape))], "test", "y", "float32", ints=ints, floats=floats or {})
    g.mark_output(y)
    return QDQModule(g).run(x, threads=threads).dequantized


def _x(shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


PERMUTES = [
    ((1, 32, 161, 67), (0, 1, 3, 2)),  # a transpose of the last two axes (attention's keys)
    ((3, 37, 29, 11), (0, 2, 1, 3)),  # the last axis kept: contiguous runs
    ((5, 9, 7, 13), (3, 1, 0, 2)),  # neither
    ((2, 3, 41, 1, 700), (0, 1, 4, 3, 2)),  # a transpose through an axis of extent 1
    ((1, 1, 93, 5), (0, 1, 3, 2)),  # few rows to transpose
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape,perm", PERMUTES)
def test_permute(shape, perm, threads):
    x = _x(shape)
    np.testing.assert_array_equal(_run("float_permute", x, threads, {"perm": list(perm)}), np.transpose(x, perm))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape,target", [
    ((1, 4, 1, 161, 67), (1, 4, 8, 161, 67)),  # grouped-query attention's repeated keys: blocks of 161 x 67
    ((3, 1, 97), (2, 3, 250, 97)),  # a leading axis and a broadcast one
    ((7, 1), (7, 20001)),  # the last axis broadcast: no run to copy
])
def test_expand(shape, target, threads):
    x = _x(shape)
    np.testing.assert_array_equal(_run("float_expand", x, threads, {"shape": list(target)}), np.broadcast_to(x, target))


@pytest.mark.parametrize("threads", [1, 2])
def test_slice_pad_flip(threads):
    x = _x((6, 131, 129))
    np.testing.assert_array_equal(_run("float_slice", x, threads, {"axis": [1], "begin": [3], "end": [120], "step": [2]}),
                                  x[:, 3:120:2])
    np.testing.assert_array_equal(_run("float_slice", x, threads, {"axis": [0], "begin": [1], "end": [5]}), x[1:5])
    padded = _run("float_pad", x, threads, {"pads": [1, 0, 2, 3, 0, 5], "mode": [0]}, {"value": 1.5})
    np.testing.assert_array_equal(padded, np.pad(x, [(1, 0), (2, 3), (0, 5)], constant_values=1.5))
    np.testing.assert_array_equal(_run("float_flip", x, threads, {"axes": [2]}), x[:, :, ::-1])
    np.testing.assert_array_equal(_run("float_flip", x, threads, {"axes": [0, 1]}), x[::-1, ::-1])

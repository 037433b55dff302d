"""Integer Winograd F(2x2, 3x3) (the AVX2 set's 3x3 stride-1 convs) against the scalar set's direct
GEMM, every byte of every node, tolerance 0: padding 0 to 2, odd output sizes (overhanging tiles), int8
and uint8 inputs with zero points at the ends of their ranges, batches, 2 threads, and the layers it
must leave to the direct GEMM (sums past int32, strides, dilation, groups, odd channel counts, small
odd outputs)."""
from __future__ import annotations

import numpy as np
import pytest

from qnnpy import _core

pytestmark = pytest.mark.skipif(not _core.cpu_has_avx2(), reason="this CPU has no AVX2")


def _graph(cin: int, cout: int, h: int, w: int, pad: int, dtype: str, zp: int, batch: int = 1, stride: int = 1,
           dilation: int = 1, groups: int = 1, weights: np.ndarray | None = None, seed: int = 0) -> _core.Graph:
    rng = np.random.default_rng(seed)
    g = _core.Graph()
    x = g.add_node("quantize", [g.add_input("x", [batch, cin, h, w])], "q", "q", dtype, 0.05, zp)
    config = np.array([2, stride, stride, pad, pad, dilation, dilation, 0, 0, groups, 0], np.int64)
    if weights is None:
        weights = rng.integers(-128, 128, (cout, cin // groups, 3, 3), dtype=np.int8)
        weights[rng.random(weights.shape) < 0.2] = -128
    y = g.add_conv2d(x, "conv", "conv", 3, config, weights, rng.uniform(1e-4, 1e-3, cout), np.zeros(cout, np.int64),
                     0, rng.standard_normal(cout).astype(np.float32), False, dtype, 0.5, 0 if dtype == "int8" else 3)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    return g


def _compare(g: _core.Graph, shape: tuple[int, ...], threads: int = 1) -> str:
    """The AVX2 run against the scalar one at every node; returns the AVX2 set's conv kernel."""
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32) * 8  # many bytes at the ends
    avx2 = _core.Executor(g, "int32_bias", "avx2", threads)
    _, got = avx2.run([x], True)
    _, want = _core.Executor(g, "int32_bias", "scalar", 1).run([x], True)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    return avx2.node_kernels()[1]


@pytest.mark.parametrize("cin, cout, h, w, pad", [
    (64, 64, 8, 8, 1),     # whole tiles
    (18, 20, 13, 15, 1),   # odd output sizes: the last tile row and column overhang
    (32, 17, 12, 11, 0),   # no padding; 17 output channels (vector tail of the output transform)
    (34, 40, 11, 13, 2),   # padding 2; 34 input channels (vector tail of the input transform)
    (2, 8, 2, 8, 1),       # one tile row of 4 tiles
])
@pytest.mark.parametrize("dtype, zp", [("uint8", 0), ("uint8", 255), ("int8", -128), ("int8", 127)])
def test_winograd_equals_direct(cin, cout, h, w, pad, dtype, zp):
    assert _compare(_graph(cin, cout, h, w, pad, dtype, zp), (1, cin, h, w)) == "winograd"


@pytest.mark.parametrize("threads", [1, 2])
def test_winograd_batches_and_threads(threads):
    # 39 x 41 outputs: 20 x 21 tiles per image, tasks of consecutive tiles that start and end inside
    # tile rows, 3 images.
    assert _compare(_graph(16, 24, 39, 41, 1, "uint8", 100, batch=3), (3, 16, 39, 41), threads) == "winograd"


def test_small_odd_outputs_take_the_direct_gemm():
    # 7 x 7 outputs (ResNet-18's layer4): 8 x 8 in tiles, 31% of the work for nothing.
    assert _compare(_graph(16, 8, 7, 7, 1, "uint8", 9), (1, 16, 7, 7)) != "winograd"


def test_sums_past_int32_fall_back_to_the_direct_gemm():
    # 2048 input channels of weights -128: the transformed GEMM's sums could reach 1020 * 1152 * 2048 > 2^31.
    weights = np.full((2, 2048, 3, 3), -128, np.int8)
    g = _graph(2048, 2, 4, 4, 1, "uint8", 0, weights=weights)
    assert _compare(g, (1, 2048, 4, 4)) != "winograd"


@pytest.mark.parametrize("cin, stride, dilation, groups", [(16, 2, 1, 1), (16, 1, 2, 1), (16, 1, 1, 2), (15, 1, 1, 1)])
def test_layers_winograd_does_not_take(cin, stride, dilation, groups):
    g = _graph(cin, 8, 9, 9, 1, "uint8", 7, stride=stride, dilation=dilation, groups=groups)
    assert _compare(g, (1, cin, 9, 9)) != "winograd"

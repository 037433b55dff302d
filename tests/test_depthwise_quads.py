"""The depthwise path over quads of interleaved input rows (kernels.h, DepthwiseQuads) against
the scalar set, which runs the other depthwise kernel (depthwise_row), bit for bit: window sizes
that take one or two quads of rows and one to four output rows per quad, strides along x,
dilations, padding, channel tails, batches, two workers, every profile; inputs above the AVX2
clamp bound, sparse (put back after the kernel) and dense (steps run depthwise_row), and the
cases that keep depthwise_row (stride 2 along y, int8 inputs, a zero point above the bound)."""
from __future__ import annotations

import numpy as np
import pytest

from qnnpy import _core


def _depthwise_graph(c: int, shape: tuple[int, int, int], kernel: tuple[int, int], stride: int | tuple[int, int],
                     pad: int, dil: int, weight: np.ndarray, input_dtype: str, input_zp: int,
                     rng: np.random.Generator) -> _core.Graph:
    g = _core.Graph()
    x = g.add_node("quantize", [g.add_input("x", [shape[0], c, shape[1], shape[2]])], "q", "q", input_dtype, 0.05,
                   input_zp)
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    config = np.array([2, sh, sw, pad, pad, dil, dil, 0, 0, c, 0], np.int64)
    y = g.add_conv2d(x, "features.dw", "conv", 3, config, weight,
                     rng.uniform(1e-3, 5e-2, c), np.zeros(c, np.int64), 0, rng.standard_normal(c).astype(np.float32),
                     True, "uint8", 0.3, 5)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    return g


def _kernel_and_outputs(g: _core.Graph, x: np.ndarray, profile: str, isa: str, threads: int):
    ex = _core.Executor(g, profile, isa, threads)
    out, captured = ex.run([x], True)
    return [k for k in ex.node_kernels() if k], out, captured


def _assert_equal_to_scalar(g: _core.Graph, x: np.ndarray, profile: str, isa: str, threads: int = 2) -> list[str]:
    kernels, out, captured = _kernel_and_outputs(g, x, profile, isa, threads)
    ref_kernels, ref_out, ref_captured = _kernel_and_outputs(g, x, profile, "scalar", 1)
    assert ref_kernels == ["depthwise"]
    for name in ref_captured:
        np.testing.assert_array_equal(captured[name], ref_captured[name], err_msg=f"{name} ({profile}, {isa})")
    np.testing.assert_array_equal(out[0], ref_out[0])
    return kernels


GEOMETRIES = [
    # channels, (batch, h, w), kernel, stride (y, x), padding, dilation
    (32, (1, 12, 11), (3, 3), (1, 1), 1, 1),  # one quad, two output rows per quad
    (35, (2, 9, 10), (3, 3), (1, 2), 1, 1),   # stride 2 along x; channel tail 3
    (24, (1, 13, 9), (5, 5), (1, 1), 2, 1),   # two quads, four output rows per quad
    (40, (2, 11, 12), (5, 5), (1, 2), 2, 1),
    (16, (1, 10, 10), (3, 3), (1, 1), 2, 2),  # dilation: one output row per quad
    (13, (1, 7, 9), (1, 3), (1, 1), 0, 1),    # one kernel row: four output rows per quad
    (67, (1, 8, 7), (4, 2), (1, 1), 1, 1),    # four kernel rows fill the quad
    (8, (3, 5, 6), (7, 7), (1, 1), 3, 1),     # two quads, one output row per quad
    (35, (2, 9, 10), (3, 3), (2, 2), 1, 1),   # stride 2 along y: the row kernel
]


@pytest.mark.parametrize("case", GEOMETRIES,
                         ids=lambda c: f"c{c[0]}_{c[2][0]}x{c[2][1]}_s{c[3][0]}{c[3][1]}_p{c[4]}_d{c[5]}")
@pytest.mark.parametrize("profile", ["int32_bias", "fbgemm", "fixed_point"])
@pytest.mark.parametrize("threads", [1, 2])
def test_quads_equal_the_row_kernel(case, profile, threads, vector_isa):
    c, shape, kernel, stride, pad, dil = case
    rng = np.random.default_rng(c * 31 + kernel[0])
    w = rng.integers(-128, 128, (c, 1, *kernel), dtype=np.int8)
    g = _depthwise_graph(c, shape, kernel, stride, pad, dil, w, "uint8", 60, rng)
    # Bytes up to 60 + 3 * 3.5 / 0.05: some above the clamp bound (127 for int8 weights), as
    # PyTorch's 7-bit activations have outside their calibrated range.
    x = (rng.standard_normal((shape[0], c, shape[1], shape[2])) * 1.2).astype(np.float32)
    want = "depthwise_quads" if stride[0] == 1 else "depthwise"
    assert _assert_equal_to_scalar(g, x, profile, vector_isa, threads) == [want]


@pytest.mark.parametrize("spread", [0.5, 3.0, 20.0], ids=["spread-0.5", "spread-3", "spread-20"])
def test_bytes_above_the_bound_are_put_back_exactly(spread, vector_isa):
    """Extreme weights make the AVX2 bound 127: bytes above it are clamped in the quads and their
    excess added back after the kernel, or (dense) the step runs depthwise_row."""
    rng = np.random.default_rng(5)
    c, shape = 48, (2, 14, 13)
    w = np.where(rng.random((c, 1, 3, 3)) < 0.5, -128, 127).astype(np.int8)
    x = (rng.standard_normal((shape[0], c, shape[1], shape[2])) * spread).astype(np.float32)
    x[0, :, :3] *= 10  # the first rows of one image dense, the rest as drawn
    for stride in ((1, 1), (1, 2)):
        g = _depthwise_graph(c, shape, (3, 3), stride, 1, 1, w, "uint8", 100, rng)
        for profile in ("fbgemm", "fixed_point"):
            assert _assert_equal_to_scalar(g, x, profile, vector_isa) == ["depthwise_quads"]


def test_int8_inputs_keep_the_row_kernel(vector_isa):
    rng = np.random.default_rng(9)
    w = rng.integers(-128, 128, (16, 1, 3, 3), dtype=np.int8)
    g = _depthwise_graph(16, (1, 8, 8), (3, 3), 1, 1, 1, w, "int8", -3, rng)
    x = rng.standard_normal((1, 16, 8, 8)).astype(np.float32)
    assert _assert_equal_to_scalar(g, x, "fbgemm", vector_isa) == ["depthwise"]


def test_a_zero_point_above_the_avx2_bound_keeps_the_row_kernel_there(vector_isa):
    """The border is zx: on AVX2 it must lie within the clamp bound (127 here); vpdpbusd needs no bound."""
    rng = np.random.default_rng(10)
    w = np.full((16, 1, 3, 3), -128, np.int8)
    g = _depthwise_graph(16, (1, 8, 8), (3, 3), 1, 1, 1, w, "uint8", 200, rng)
    x = rng.standard_normal((1, 16, 8, 8)).astype(np.float32)
    want = "depthwise" if vector_isa == "avx2" else "depthwise_quads"
    assert _assert_equal_to_scalar(g, x, "fbgemm", vector_isa) == [want]

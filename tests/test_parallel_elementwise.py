"""Element-wise nodes split over workers (add, max_pool2d): with 2 threads each large node runs in
slices (runtime/parallel.h, parallel_slices), and the bytes must be those of 1 thread and of PyTorch's.
The shapes are large enough to split (more than 2 x 32 Ki outputs) and odd, so that slices end inside
images, inside rows and inside vectors. The quantize node (one worker) is checked alike: its planes
of odd pixel counts go to NHWC through interleave_planes."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from qnnpy import _core


def _quantize_graph(shape: list[int]) -> _core.Graph:
    g = _core.Graph()
    q = g.add_node("quantize", [g.add_input("x", shape)], "q", "q", "uint8", 0.02, 120)
    g.mark_output(q)
    return g


def _add_graph(shape: list[int], relu: int) -> _core.Graph:
    g = _core.Graph()
    x = g.add_input("x", shape)
    a = g.add_node("quantize", [x], "a", "a", "uint8", 0.02, 120)
    b = g.add_node("quantize", [x], "b", "b", "uint8", 0.037, 10)
    g.mark_output(g.add_node("add", [a, b], "add", "add", "uint8", 0.05, 128, ints={"relu": [relu]}))
    return g


def _max_pool_graph(shape: list[int], kernel: int, stride: int, padding: int, dilation: int) -> _core.Graph:
    g = _core.Graph()
    a = g.add_node("quantize", [g.add_input("x", shape)], "a", "a", "uint8", 0.02, 120)
    g.mark_output(g.add_node("max_pool2d", [a], "pool", "pool", "uint8", 0.02, 120,
                             ints={"kernel": [kernel, kernel], "stride": [stride, stride],
                                   "padding": [padding, padding], "dilation": [dilation, dilation],
                                   "ceil_mode": [0]}))
    return g


def _torch_quantize(x: np.ndarray, scale: float, zero_point: int) -> torch.Tensor:
    return torch.quantize_per_tensor(torch.from_numpy(x), scale, zero_point, torch.quint8)


def _quantize(x: np.ndarray) -> np.ndarray:
    return _torch_quantize(x, 0.02, 120).int_repr().numpy()


def _add(x: np.ndarray, relu: int) -> np.ndarray:
    """PyTorch's quantized add under the current engine."""
    add = torch.ops.quantized.add_relu if relu else torch.ops.quantized.add
    return add(_torch_quantize(x, 0.02, 120), _torch_quantize(x, 0.037, 10), 0.05, 128).int_repr().numpy()


def _max_pool(x: np.ndarray, kernel: int, stride: int, padding: int, dilation: int) -> np.ndarray:
    """The definition on PyTorch's quantized input (padding never wins). PyTorch's fbgemm engine gives
    it; its QNNPACK engine's dilated max_pool2d does not (2.6% of this file's dilated case differ)."""
    q = _quantize(x).astype(np.int32)
    padded = np.pad(q, ((0, 0), (0, 0), (padding, padding), (padding, padding)), constant_values=-1)
    window = dilation * (kernel - 1) + 1
    oh = (padded.shape[2] - window) // stride + 1
    ow = (padded.shape[3] - window) // stride + 1
    taps = [padded[:, :, ky * dilation:ky * dilation + (oh - 1) * stride + 1:stride,
                   kx * dilation:kx * dilation + (ow - 1) * stride + 1:stride]
            for ky in range(kernel) for kx in range(kernel)]
    return np.max(taps, axis=0).astype(np.uint8)


# name: (graph, input shape, the expected bytes for an input)
CASES = {
    "quantize 2x5x81x87": (lambda: _quantize_graph([2, 5, 81, 87]), [2, 5, 81, 87], _quantize),
    "quantize 3x40001": (lambda: _quantize_graph([3, 40001]), [3, 40001], _quantize),
    "quantize 2x3x61x67": (lambda: _quantize_graph([2, 3, 61, 67]), [2, 3, 61, 67], _quantize),
    "add 2x37x33x35": (lambda: _add_graph([2, 37, 33, 35], 0), [2, 37, 33, 35], lambda x: _add(x, 0)),
    "add relu 1x64x56x56": (lambda: _add_graph([1, 64, 56, 56], 1), [1, 64, 56, 56], lambda x: _add(x, 1)),
    "max_pool2d 3x3 s2 p1 3x24x75x69": (lambda: _max_pool_graph([3, 24, 75, 69], 3, 2, 1, 1), [3, 24, 75, 69],
                                        lambda x: _max_pool(x, 3, 2, 1, 1)),
    "max_pool2d 3x3 s1 p1 d2 1x40x47x61": (lambda: _max_pool_graph([1, 40, 47, 61], 3, 1, 1, 2), [1, 40, 47, 61],
                                           lambda x: _max_pool(x, 3, 1, 1, 2)),
}


@pytest.mark.parametrize("engine, profile", [("fbgemm", "fbgemm"), ("qnnpack", "int32_bias")])
@pytest.mark.parametrize("case", sorted(CASES))
def test_two_threads_equal_pytorch(case, engine, profile, vector_isa):
    build, shape, reference = CASES[case]
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32) * 0.6
    torch.backends.quantized.engine = engine
    want = reference(x)
    g = build()
    for isa, threads in (("scalar", 1), ("scalar", 2), (vector_isa, 1), (vector_isa, 2)):
        (got,), _ = _core.Executor(g, profile, isa, threads).run([x], False)
        np.testing.assert_array_equal(got, want, err_msg=f"{isa}, {threads} thread(s)")


@pytest.mark.parametrize("op, shapes", [
    ("float_silu", [(3, 129, 257)]),
    ("float_mul", [(3, 129, 257), (3, 129, 257)]),
    ("float_add", [(3, 129, 257), (257,)]),          # a row broadcast: one run per row
    ("float_mul", [(3, 129, 257), ()]),              # a scalar: one run cut into pieces
    ("float_add", [(3, 1, 257), (3, 129, 1)]),       # both broadcast: runs of one element
])
def test_float_elementwise_nodes_split_over_workers_give_the_values_of_one_thread(op, shapes):
    """Float element-wise nodes (runtime/ops/plain_values.h: element_spans, for_each_broadcast_run_parallel) split
    large outputs over the workers; every element is computed alone, so 2 threads give 1 thread's bits, and the
    values are PyTorch's."""
    g = _core.Graph()
    xs = [np.random.default_rng(i).standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)]
    ids = [g.add_input(f"x{i}", list(x.shape)) for i, x in enumerate(xs)]
    g.mark_output(g.add_node(op, ids, "test", "y", "float32"))
    one, two = ([*_core.Executor(g, "int32_bias", "", threads).run(xs, False)[0]][0] for threads in (1, 2))
    np.testing.assert_array_equal(one, two)
    tensors = [torch.from_numpy(x) for x in xs]
    expected = {"float_silu": lambda: torch.nn.functional.silu(tensors[0]), "float_mul": lambda: tensors[0] * tensors[1],
                "float_add": lambda: tensors[0] + tensors[1]}[op]().numpy()
    if op == "float_silu":
        assert np.abs(one - expected).max() <= 4 * np.finfo(np.float32).eps * max(1.0, np.abs(expected).max())
    else:
        np.testing.assert_array_equal(one, expected)

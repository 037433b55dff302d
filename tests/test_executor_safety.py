"""The executor: refused arguments, a graph that cannot change under it, runs from several
threads, every output returned in its own integer dtype."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from qnnpy import _core
from qnnpy.module import QDQModule


def two_output_graph() -> _core.Graph:
    """x -> quantize (uint8) -> relu -> dequantize; outputs: the float result and the quantized input."""
    g = _core.Graph()
    x = g.add_input("x", [2, 4])
    q = g.add_node("quantize", [x], "quant", "xq", "uint8", 0.1, 128)
    r = g.add_node("relu", [q], "act", "r", "uint8", 0.1, 128)
    d = g.add_node("dequantize", [r], "dequant", "out", "float32")
    g.mark_output(d)
    g.mark_output(q)
    return g


X = np.array([[-1.0, -0.05, 0.25, 3.0], [0.0, 12.7, -12.8, 0.1]], np.float32)


def test_every_output_is_returned_in_its_integer_dtype():
    result = QDQModule(two_output_graph()).run(X)
    expected_q = np.clip(np.rint(X / np.float32(0.1)) + 128, 0, 255)
    assert [o.quantized.dtype for o in result.outputs] == [np.uint8, np.uint8]
    np.testing.assert_array_equal(result.outputs[1].quantized, expected_q)
    np.testing.assert_array_equal(result.outputs[0].quantized, np.maximum(expected_q, 128))
    assert result.quantized is result.outputs[0].quantized
    np.testing.assert_array_equal(result.outputs[1].dequantized, ((expected_q - 128) * np.float32(0.1)).astype(np.float32))


def test_no_graph_is_refused():
    with pytest.raises((ValueError, TypeError), match="no graph given|incompatible"):
        _core.Executor(None)


@pytest.mark.parametrize("threads", [0, -3, 257, 10**6])
def test_thread_counts_are_bounded(threads):
    with pytest.raises(ValueError, match=r"threads must be in \[1, 256\]"):
        _core.Executor(two_output_graph(), "int32_bias", "", threads)


def test_a_bad_qnnpy_isa_is_refused_naming_the_variable(monkeypatch):
    """QNNPY_ISA is read at each default_isa() call (an executor with isa "" takes it)."""
    monkeypatch.setenv("QNNPY_ISA", "fastest")
    with pytest.raises(ValueError, match=r"QNNPY_ISA=fastest: unknown isa 'fastest' \(expected auto, scalar"):
        _core.default_isa()
    with pytest.raises(ValueError, match="QNNPY_ISA=fastest: unknown isa"):
        _core.Executor(two_output_graph(), "int32_bias", "", 1)


def test_a_graph_run_by_an_executor_can_no_longer_change():
    g = two_output_graph()
    _core.Executor(g)
    with pytest.raises(RuntimeError, match="in use by an executor"):
        g.add_node("relu", [1], "more", "r2", "uint8", 0.1, 128)
    with pytest.raises(RuntimeError, match="in use by an executor"):
        g.mark_output(1)


def test_runs_from_several_threads_with_timing_reads_agree():
    g = two_output_graph()
    executor = _core.Executor(g, "int32_bias", "", 2)
    expected = executor.run([X], False)[0][1]

    def run_and_read(_: int) -> np.ndarray:
        out = executor.run([X], False)[0][1]
        assert len(executor.node_seconds()) == 3 and len(executor.node_kernels()) == 3
        return out

    with ThreadPoolExecutor(max_workers=4) as pool:
        for out in pool.map(run_and_read, range(32)):
            np.testing.assert_array_equal(out, expected)


def test_the_executor_outlives_the_module_and_graph_references():
    module = QDQModule(two_output_graph())
    first = module.run(X)
    executor = next(iter(module._executors.values()))
    del module
    np.testing.assert_array_equal(executor.run(X).quantized, first.quantized)


@pytest.mark.parametrize("bias", [np.nan, np.inf])
def test_non_finite_float_bias_is_refused(bias):
    g = _core.Graph()
    x = g.add_input("x", [1, 2])
    q = g.add_node("quantize", [x], "quant", "xq", "uint8", 0.1, 128)
    with pytest.raises(ValueError, match=r"fc: bias\[0\] = (nan|inf) is not finite"):
        g.add_linear(q, "fc", "fc", np.ones((1, 2), np.int8), np.array([0.1], np.float32), np.array([0], np.int32), -1,
                     np.array([bias], np.float32), False, "uint8", 0.2, 0)

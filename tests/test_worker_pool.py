"""The worker pool under the conditions that change its path: helpers blocked after an idle pause
(woken at the start of a run, steered off the caller's CPU) and a forked child (the parent's helpers
do not exist there). Two threads must give the one-thread bytes in every case."""
from __future__ import annotations

import os
import time

import numpy as np

from qnnpy import _core


def _conv_graph() -> _core.Graph:
    """A conv large enough (42 million multiply-adds) for the runtime to split it over 2 workers."""
    rng = np.random.default_rng(7)
    g = _core.Graph()
    x = g.add_node("quantize", [g.add_input("x", [1, 32, 48, 48])], "q", "q", "uint8", 0.05, 120)
    config = np.array([2, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0], np.int64)
    y = g.add_conv2d(x, "conv", "conv", 3, config, rng.integers(-128, 128, (64, 32, 3, 3), dtype=np.int8),
                     rng.uniform(1e-4, 1e-3, 64), np.zeros(64, np.int64), 0,
                     rng.standard_normal(64).astype(np.float32), True, "uint8", 0.3, 0)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    return g


def _input() -> np.ndarray:
    return np.random.default_rng(8).standard_normal((1, 32, 48, 48)).astype(np.float32) * 3


def test_two_threads_after_idle_pauses_equal_one_thread():
    g, x = _conv_graph(), _input()
    (want,), _ = _core.Executor(g, "int32_bias", "", 1).run([x], False)
    two = _core.Executor(g, "int32_bias", "", 2)
    for pause in (0.0, 0.03, 0.0, 0.05, 0.002):
        time.sleep(pause)  # past the helpers' 0.5 ms spin: they block, and the run wakes them
        (got,), _ = two.run([x], False)
        np.testing.assert_array_equal(got, want)


def _run_in_forked_child(executor: _core.Executor, x: np.ndarray, want: np.ndarray) -> None:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a pool of its own, the same bytes
        try:
            (got,), _ = executor.run([x], False)
            os.write(write_end, b"same" if np.array_equal(got, want) else b"different")
        finally:
            os._exit(0)
    os.close(write_end)
    deadline = time.monotonic() + 60
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    if done[0] == 0:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        raise AssertionError("the forked child's run did not finish in 60 s")
    assert os.waitstatus_to_exitcode(done[1]) == 0
    assert os.read(read_end, 16) == b"same"
    os.close(read_end)


def test_forked_child_runs_two_threads():
    g, x = _conv_graph(), _input()
    two = _core.Executor(g, "int32_bias", "", 2)
    (want,), _ = two.run([x], False)
    for _ in range(8):
        # A run that wakes blocked helpers, then fork() at once: a helper may still be leaving the pool's
        # condition variable, which the child inherits counting it as a waiter that never leaves.
        time.sleep(0.01)
        two.run([x], False)
        _run_in_forked_child(two, x, want)

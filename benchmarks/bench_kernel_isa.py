"""The AVX2 and AVX-512 forms of the add and pool kernels, node by node.

Run: .venv/bin/python -P benchmarks/bench_kernel_isa.py [--runs 201]

Each case is a small graph built in the IR whose timed node runs one kernel family;
it runs on the avx2 and the avx512vnni kernel sets, 1 thread, in interleaved rounds,
and the node's median and minimum wall times are reported. Needs a CPU with AVX-512 VNNI.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Callable

import numpy as np

from qnnpy import _core

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_latency import cpu_model, load_average  # noqa: E402


def add_case(c: int, hw: int) -> tuple[_core.Graph, tuple[int, ...]]:
    g = _core.Graph()
    x = g.add_input("x", [1, c, hw, hw])
    a = g.add_node("quantize", [x], "a", "a", "uint8", 0.02, 120)
    b = g.add_node("quantize", [x], "b", "b", "uint8", 0.037, 10)
    g.mark_output(g.add_node("add", [a, b], "add", "add", "uint8", 0.05, 128, ints={"relu": [1]}))
    return g, (1, c, hw, hw)


def pool_case(op: str, c: int, hw: int, **ints: list[int]) -> tuple[_core.Graph, tuple[int, ...]]:
    g = _core.Graph()
    a = g.add_node("quantize", [g.add_input("x", [1, c, hw, hw])], "a", "a", "uint8", 0.02, 120)
    g.mark_output(g.add_node(op, [a], op, op, "uint8", 0.02, 120, ints=ints))
    return g, (1, c, hw, hw)


CASES: list[tuple[str, str, Callable[[], tuple[_core.Graph, tuple[int, ...]]]]] = [
    ("add (float), 64 x 56 x 56", "fbgemm", lambda: add_case(64, 56)),
    ("add (fixed point), 64 x 56 x 56", "int32_bias", lambda: add_case(64, 56)),
    ("add (fixed point), 24 x 56 x 56", "int32_bias", lambda: add_case(24, 56)),
    ("max_pool2d 3x3 s2, 64 x 112 x 112", "fbgemm",
     lambda: pool_case("max_pool2d", 64, 112, kernel=[3, 3], stride=[2, 2], padding=[1, 1], dilation=[1, 1],
                       ceil_mode=[0])),
    ("adaptive_avg_pool2d to 1x1, 1280 x 7 x 7", "fbgemm",
     lambda: pool_case("adaptive_avg_pool2d", 1280, 7, output_size=[1, 1])),
    ("adaptive_avg_pool2d to 1x1, 512 x 14 x 14", "fbgemm",
     lambda: pool_case("adaptive_avg_pool2d", 512, 14, output_size=[1, 1])),
    ("avg_pool2d 3x3 s1, 64 x 28 x 28", "fbgemm",
     lambda: pool_case("avg_pool2d", 64, 28, kernel=[3, 3], stride=[1, 1], padding=[1, 1], ceil_mode=[0],
                       count_include_pad=[1], divisor_override=[0])),
]


def node_times(graph: _core.Graph, shape: tuple[int, ...], profile: str, runs: int) -> dict[str, list[float]]:
    """Seconds of the graph's last node per run, on each kernel set, interleaved."""
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32) * 3
    executors = {isa: _core.Executor(graph, profile, isa, 1) for isa in ("avx2", "avx512vnni")}
    times = {isa: [] for isa in executors}
    for _ in range(runs):
        for isa, ex in executors.items():
            ex.run([x], False)
            times[isa].append(ex.node_seconds()[-1])
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=201)
    args = parser.parse_args()
    if not _core.cpu_has_avx512_vnni():
        sys.exit("this CPU has no AVX-512 VNNI: nothing to compare")
    lines = [f"CPU: {cpu_model()}, 1 thread, {args.runs} interleaved runs per kernel set, "
             f"load average before: {load_average()}.", "",
             "| kernel, shape | AVX2 median / min (us) | AVX-512 median / min (us) | AVX-512 / AVX2 (medians) |",
             "|---|---|---|---|"]
    for name, profile, build in CASES:
        graph, shape = build()
        t = node_times(graph, shape, profile, args.runs)
        med = {isa: statistics.median(v) * 1e6 for isa, v in t.items()}
        low = {isa: min(v) * 1e6 for isa, v in t.items()}
        lines.append(f"| {name} | {med['avx2']:.1f} / {low['avx2']:.1f} | {med['avx512vnni']:.1f} / "
                     f"{low['avx512vnni']:.1f} | {med['avx512vnni'] / med['avx2']:.2f}x |")
        print(lines[-1], flush=True)
    lines += ["", f"Load average after: {load_average()}."]
    print("\n".join(lines))


if __name__ == "__main__":
    main()

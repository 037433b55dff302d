"""Per-node latency of qnnpy's integer runtime with 1 and 2 threads: where a second thread pays.

Run: .venv/bin/python -P benchmarks/bench_threads.py [--model mobilenet_v2] [--runs 31] [--profile int32_bias]
     [--gap-ms 20]

For each thread count, an executor of the model (qnnpy.zoo's quantized torchvision model,
1x3x224x224) runs in interleaved rounds; per round and per thread count, one untimed run
(wakes the worker pool) then one timed run, whose wall time, process CPU time (all
threads) and per-node wall times are kept. Reported: medians of the totals, the load
average, and per node the median and the minimum with 1 and 2 threads, largest first.
On a machine shared with other work the second core is often taken, and the wall times
of 2 threads suffer first: the minimum of a node's times is then the estimate of its
time when both cores are free, and nodes are marked slower on the minima; compare the
CPU time and say the load.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

import qnnpy
from qnnpy import _core, zoo

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_latency import cpu_model, load_average  # noqa: E402


def node_label(node: dict, shapes: dict[str, list[int]]) -> str:
    return f"{node['source'] or node['op']} {'x'.join(map(str, shapes[node['output']]))}"


def measure(graph: _core.Graph, x: np.ndarray, profile: str, thread_counts: tuple[int, ...], runs: int,
            gap: float = 0.0) -> dict:
    """{threads: (wall seconds per run, CPU seconds per run, node seconds per run)}; each round's untimed run
    follows ``gap`` seconds of idle time."""
    executors = {t: _core.Executor(graph, profile, "", t) for t in thread_counts}
    results = {t: ([], [], []) for t in thread_counts}
    for ex in executors.values():
        for _ in range(3):
            ex.run([x], False)
    for _ in range(runs):
        for t, ex in executors.items():
            time.sleep(gap)
            ex.run([x], False)
            wall, cpu = time.perf_counter(), time.process_time()
            ex.run([x], False)
            results[t][0].append(time.perf_counter() - wall)
            results[t][1].append(time.process_time() - cpu)
            results[t][2].append(ex.node_seconds())
    return results


def report(name: str, module: qnnpy.QDQModule, profile: str, results: dict, load_before: str) -> list[str]:
    nodes = module.nodes()
    shapes = {v["name"]: v["shape"] for v in module.graph.values()}
    lines = [f"### {name}, profile {profile}", "",
             f"Load average (1/5/15 min) before: {load_before}, after: {load_average()}.", "",
             "| threads | wall ms (median) | CPU ms (median, all threads) | sum of node medians ms |",
             "|---|---|---|---|"]
    medians, minima = {}, {}
    for t, (wall, cpu, per_node) in results.items():
        medians[t] = np.median(np.array(per_node), axis=0)
        minima[t] = np.min(np.array(per_node), axis=0)
        lines.append(f"| {t} | {statistics.median(wall) * 1e3:.2f} | {statistics.median(cpu) * 1e3:.2f} | "
                     f"{medians[t].sum() * 1e3:.2f} |")
    lines.append("")
    if set(medians) >= {1, 2}:
        one, two = minima[1], minima[2]
        slower = [i for i in range(len(nodes)) if two[i] > one[i] * 1.05 and one[i] > 2e-6]
        lines.append(f"Sum of the node minima: 1 thread {one.sum() * 1e3:.2f} ms, 2 threads {two.sum() * 1e3:.2f} ms "
                     f"({one.sum() / two.sum():.2f}x). Nodes whose 2-thread minimum is more than 5% above the "
                     f"1-thread one: {len(slower)} ({(two[slower] - one[slower]).sum() * 1e3:.3f} ms in all).")
        lines.append("")
        lines.append("| node (output shape) | op | 1 thread ms, median / min | 2 threads ms, median / min | "
                     "speed-up of the minima |")
        lines.append("|---|---|---|---|---|")
        for i in sorted(range(len(nodes)), key=lambda i: -one[i])[:25]:
            mark = " (slower)" if i in slower else ""
            lines.append(f"| {node_label(nodes[i], shapes)} | {nodes[i]['op']} | {medians[1][i] * 1e3:.3f} / "
                         f"{one[i] * 1e3:.3f} | {medians[2][i] * 1e3:.3f} / {two[i] * 1e3:.3f} | "
                         f"{one[i] / max(two[i], 1e-9):.2f}x{mark} |")
        lines.append("")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="mobilenet_v2", help="a torchvision quantizable model name")
    parser.add_argument("--runs", type=int, default=31)
    parser.add_argument("--profile", nargs="+", default=["int32_bias", "fbgemm"])
    parser.add_argument("--gap-ms", type=float, default=0.0,
                        help="idle time before each round's untimed run (a server between requests)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    module = qnnpy.from_torch(zoo.quantized_torchvision(args.model), (x,))
    lines = [f"CPU: {cpu_model()} ({_core.default_isa()} kernels), {args.model} 1x3x224x224, "
             f"medians of {args.runs} interleaved rounds, {args.gap_ms:g} ms idle before each.", ""]
    for profile in args.profile:
        load_before = load_average()
        results = measure(module.graph, x.numpy(), profile, (1, 2), args.runs, args.gap_ms / 1e3)
        lines += report(args.model, module, profile, results, load_before)
    print("\n".join(lines))


if __name__ == "__main__":
    main()

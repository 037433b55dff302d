"""Single-image latency: qnnpy integer runtime vs PyTorch fbgemm vs PyTorch qnnpack.

Run: .venv/bin/python -P benchmarks/bench_latency.py [--runs 15] [--out benchmarks/RESULTS.md] [--avx2 | --avxvnni]

--avx2 runs every contender on its AVX2 code: qnnpy's avx2 kernel set (QNNPY_ISA), FBGEMM's AVX2
kernels (FBGEMM_ENABLE_INSTRUCTIONS) and ATen's (ATEN_CPU_CAPABILITY), the way an AVX2-only CPU
would, on a CPU that has more; it is not a measurement of an AVX2-only CPU. --avxvnni does the same
with qnnpy on its avxvnni set (vpdpbusd on ymm), as on a CPU with AVX-VNNI and no AVX-512, where
FBGEMM (whose instruction sets are AVX2 and AVX-512 variants) runs its AVX2 kernels.

All figures come from one process and one run: medians of repeated forwards at
1x3x224x224 (all contenders interleaved round by round), ratios against PyTorch
measured in the same run, 2-thread scaling, the
load average while measuring, time per kernel kind, and per-layer GMAC/s of the
slowest convs against the measured ceiling of the kernel each used (register-only
loops: vpdpbusd on zmm for gemm_u8s8 and depthwise_quads under the avx512vnni kernels, on ymm
under avxvnni, vpmaddubsw + vpmaddwd + vpaddd for them under avx2, vpmaddwd + vpaddd for gemm_s16 and
depthwise).
"""
from __future__ import annotations

import argparse
import collections
import copy
import os
import platform
import statistics
import sys
import time
import warnings
from typing import Callable

import numpy as np
import torch

import qnnpy
from qnnpy import _core, zoo


# The variables that put each contender on its AVX2 code (--avx2; --avxvnni sets QNNPY_ISA=avxvnni).
AVX2_ENV = (("QNNPY_ISA", "avx2"), ("FBGEMM_ENABLE_INSTRUCTIONS", "AVX2"), ("ATEN_CPU_CAPABILITY", "avx2"))


def cpu_model() -> str:
    """The CPU's model name with its family / model numbers and the SIMD flags the kernels use (the model
    name alone, e.g. "AMD EPYC", does not tell a Zen 3 from a Zen 5)."""
    fields: dict[str, str] = {}
    try:
        for line in open("/proc/cpuinfo"):
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        return platform.processor() or "unknown"
    flags = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "asimddp") if f in fields.get("flags", "").split()]
    name = fields.get("model name", platform.processor() or "unknown")
    return f"{name} (family {fields.get('cpu family', '?')} model {fields.get('model', '?')}; {' '.join(flags) or 'no SIMD flags'})"


def interleaved_medians(contenders: dict[str, tuple[Callable[[], None], Callable[[], object]]], runs: int,
                        warmup: int = 3) -> dict[str, float]:
    """Median ms of each contender's call, measured in interleaved rounds so that a change
    in the machine's load affects all of them alike. Each contender is (setup, call);
    setup (e.g. selecting PyTorch's engine) is not timed. In each round a contender's
    timed call follows an untimed one, so every figure is a steady-state (warm caches,
    awake worker threads) latency, as if the contender ran alone in a loop."""
    for setup, call in contenders.values():
        setup()
        for _ in range(warmup):
            call()
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(runs):
        for name, (setup, call) in contenders.items():
            setup()
            # PyTorch's qnnpack worker threads keep spinning for ~10 ms after a run and
            # would take the second core from the next contender.
            time.sleep(0.05)
            call()
            t = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) * 1e3 for name, ts in times.items()}


def conv_macs(module: qnnpy.QDQModule) -> dict[int, float]:
    """MACs of each conv/linear node, by node index."""
    values = {v["name"]: v for v in module.graph.values()}
    params = module.params
    macs = {}
    for i, n in enumerate(module.nodes()):
        if n["op"] in ("conv2d", "linear"):
            w = params[n["params"]["weight"]]
            out = values[n["output"]]["shape"]
            pixels = int(np.prod(out)) // w.shape[0]
            macs[i] = pixels * w.size
    return macs


def load_average() -> str:
    return "/".join(f"{v:.2f}" for v in os.getloadavg())


def bench_model(name: str, model: torch.nn.Module, runs: int, peaks: dict[str, float]) -> list[str]:
    x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    module = qnnpy.from_torch(model, (x,))
    xn = x.numpy()
    torch.backends.quantized.engine = "qnnpack"
    qnnpack_model = copy.deepcopy(model)
    lines = [f"### {name}", ""]
    rows = []
    load_before = load_average()
    def engine(name: str) -> Callable[[], None]:
        return lambda: setattr(torch.backends.quantized, "engine", name)

    for threads in (1, 2):
        torch.set_num_threads(threads)
        with torch.no_grad():
            t = interleaved_medians({
                "fbgemm": (engine("fbgemm"), lambda: model(x)),
                "qnnpack": (engine("qnnpack"), lambda: qnnpack_model(x)),
                "ours": (engine("fbgemm"), lambda: module.run(xn, profile="fbgemm", threads=threads)),
                "ours_i32": (engine("fbgemm"), lambda: module.run(xn, profile="int32_bias", threads=threads)),
            }, runs)
        rows.append((threads, t["ours"], t["ours_i32"], t["fbgemm"], t["qnnpack"]))
    torch.backends.quantized.engine = "fbgemm"
    lines.append(f"Load average (1/5/15 min) before: {load_before}, after: {load_average()}.")
    lines.append("")
    lines.append("| threads | qnnpy fbgemm profile (ms) | qnnpy int32_bias (ms) | PyTorch fbgemm (ms) | PyTorch qnnpack (ms) | qnnpy / fbgemm | qnnpy / qnnpack |")
    lines.append("|---|---|---|---|---|---|---|")
    for threads, ours, ours_i32, fb, qn in rows:
        lines.append(f"| {threads} | {ours:.2f} | {ours_i32:.2f} | {fb:.2f} | {qn:.2f} | {ours / fb:.2f}x | {ours_i32 / qn:.2f}x |")
    lines.append("")
    (_, ours1, _, fb1, _), (_, ours2, _, fb2, _) = rows
    lines.append(f"2-thread speed-up: qnnpy {ours1 / ours2:.2f}x, PyTorch fbgemm {fb1 / fb2:.2f}x.")
    lines.append("")
    # Per-layer breakdown, single thread, fbgemm profile.
    executor = _core.Executor(module.graph, "fbgemm", "", 1)
    per_node = []
    for _ in range(max(5, runs // 2)):
        executor.run([xn], False)
        per_node.append(executor.node_seconds())
    kernels = executor.node_kernels()
    seconds = np.median(np.array(per_node), axis=0)
    macs = conv_macs(module)
    nodes = module.nodes()
    total = seconds.sum()
    by_kind = collections.defaultdict(lambda: [0.0, 0])
    for i, n in enumerate(nodes):
        kind = kernels[i] or n["op"]
        by_kind[kind][0] += seconds[i]
        by_kind[kind][1] += 1
    lines.append(f"Single thread, per node (median of {len(per_node)} runs): total {total * 1e3:.2f} ms.")
    lines.append("")
    lines.append("| kernel / op | nodes | ms | share |")
    lines.append("|---|---|---|---|")
    for kind, (t, count) in sorted(by_kind.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"| {kind} | {count} | {t * 1e3:.2f} | {t / total:.0%} |")
    lines.append("")
    lines.append("| layer | kernel | GMAC | ms | GMAC/s | % of the kernel's ceiling |")
    lines.append("|---|---|---|---|---|---|")
    for i in sorted(macs, key=lambda i: -seconds[i])[:10]:
        rate = macs[i] / seconds[i] / 1e9
        u8s8_peak = {"avx512vnni": peaks["vnni"], "avxvnni": peaks["avxvnni"]}.get(_core.default_isa(), peaks["u8s8"])
        u8s8 = kernels[i].startswith("gemm_u8s8") or kernels[i] == "depthwise_quads"
        peak = u8s8_peak if u8s8 else peaks["s16"]
        lines.append(f"| {nodes[i]['source']} | {kernels[i]} | {macs[i] / 1e9:.3f} | {seconds[i] * 1e3:.2f} | {rate:.1f} | "
                     f"{rate / peak:.0%} |")
    lines.append("")
    return lines


def write_report(lines: list[str], out: str | None) -> None:
    """Prints the markdown report and, with ``out``, writes it there too."""
    report = "\n".join(lines)
    print(report)
    if out:
        with open(out, "w") as f:
            f.write(report + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--out", default=None, help="write the markdown report here as well")
    isa = parser.add_mutually_exclusive_group()
    isa.add_argument("--avx2", action="store_true", help="run qnnpy, FBGEMM and ATen on their AVX2 code")
    isa.add_argument("--avxvnni", action="store_true",
                     help="run FBGEMM and ATen on their AVX2 code and qnnpy on its avxvnni kernels")
    args = parser.parse_args()
    if args.avx2 or args.avxvnni:
        env = dict(AVX2_ENV, QNNPY_ISA="avxvnni" if args.avxvnni else "avx2")
        if any(os.environ.get(k) != v for k, v in env.items()):
            # FBGEMM and ATen read their variables once, at their first call: start again with them set.
            os.execve(sys.executable, [sys.executable, "-P", *sys.argv], dict(os.environ, **env))
    warnings.filterwarnings("ignore")
    peaks = {"u8s8": _core.peak_u8s8_gmacs(0.5), "s16": _core.peak_madd_gmacs(0.5),
             "vnni": _core.peak_vnni_gmacs(0.5), "avxvnni": _core.peak_avxvnni_gmacs(0.5)}
    forced = ", ".join(f"{k}={os.environ[k]}" for k, _ in AVX2_ENV if k in os.environ)
    lines = ["# Benchmarks", "", f"CPU: {cpu_model()} ({_core.default_isa()} kernels), torch {torch.__version__}, "
             f"median of {args.runs} interleaved rounds after 3 warm-up runs, input 1x3x224x224"
             f"{'; kernels forced: ' + forced if forced else ''}.", "",
             f"Ceilings measured here (register-only loops, one core): {peaks['u8s8']:.1f} GMAC/s for u8 x s8 "
             f"(vpmaddubsw + vpmaddwd + vpaddd), {peaks['s16']:.1f} GMAC/s for int16 (vpmaddwd + vpaddd), "
             f"{peaks['vnni']:.1f} GMAC/s for u8 x s8 with AVX-512 VNNI (vpdpbusd on zmm; 0: not available), "
             f"{peaks['avxvnni']:.1f} GMAC/s for the avxvnni set (vpdpbusd on ymm; 0: not available).", ""]
    for name, build in (("ResNet-18", lambda: zoo.quantized_resnet18()), ("MobileNetV2", lambda: zoo.quantized_mobilenet_v2())):
        print(f"[bench] {name}: building and calibrating", flush=True)
        lines += bench_model(name, build(), args.runs, peaks)
        print("\n".join(lines[-40:]), flush=True)
    write_report(lines, args.out)


if __name__ == "__main__":
    main()

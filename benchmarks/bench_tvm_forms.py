"""TVM build forms against qnnpy's runtime and PyTorch: single-image latency and compile times.

Run: .venv/bin/python -P benchmarks/bench_tvm_forms.py [--runs 15] [--qdq-runs 3] [--out FILE]

ResNet-18 and MobileNetV2 at 1x3x224x224, one thread, all in one process: PyTorch fbgemm,
qnnpy's runtime and the kernels form (TVM calling qnnpy's kernels, qnnpy.tvm_bridge.kernel_form) under
both profiles, medians of interleaved rounds, ratios measured in the same run. Each call is
timed twice: wall time, and the CPU time of the calling thread (with one thread that is all
the work, and other processes on a shared machine disturb it less). The float QDQ form and the
integer form (TVM without tuned CPU schedules: seconds per image) run a few times on their own,
for reference. The CPU model and the load average are printed:
the machine may be shared.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Callable

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_latency import load_average  # noqa: E402

import qnnpy  # noqa: E402
from qnnpy import tvm_bridge, zoo  # noqa: E402
from qnnpy.tvm_bridge import kernel_form  # noqa: E402


def cpu_description() -> str:
    """Model name, family / model numbers and the SIMD extensions that matter here, from /proc/cpuinfo."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        return "unknown CPU"
    flags = fields.get("flags", "").split()
    simd = [name for flag, name in (("avx2", "AVX2"), ("avx512f", "AVX-512"), ("avx512_vnni", "VNNI")) if flag in flags]
    return (f"{fields.get('model name', 'unknown')} (family {fields.get('cpu family', '?')}, model "
            f"{fields.get('model', '?')}; {', '.join(simd) or 'no AVX2'})")


def timed(fn: Callable[[], object]) -> tuple[object, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def interleaved_times(contenders: dict[str, Callable[[], object]], runs: int,
                      warmup: int = 3) -> dict[str, tuple[float, float]]:
    """(median wall ms, median thread-CPU ms) of each contender's call, in interleaved rounds
    (a load change hits all alike); each timed call follows an untimed one (steady state)."""
    for call in contenders.values():
        for _ in range(warmup):
            call()
    wall: dict[str, list[float]] = {name: [] for name in contenders}
    cpu: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(runs):
        for name, call in contenders.items():
            call()
            w, c = time.perf_counter(), time.thread_time()
            call()
            cpu[name].append(time.thread_time() - c)
            wall[name].append(time.perf_counter() - w)
    return {name: (statistics.median(wall[name]) * 1e3, statistics.median(cpu[name]) * 1e3) for name in contenders}


def bench_model(name: str, model: torch.nn.Module, runs: int, qdq_runs: int) -> list[str]:
    x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    xn = x.numpy()
    module, convert_s = timed(lambda: qnnpy.from_torch(model, (x,)))
    kernels = {}
    compile_s = {}
    for profile in ("fbgemm", "int32_bias"):
        kernels[profile], compile_s[f"kernels form ({profile})"] = timed(
            lambda: kernel_form.build(module, profile=profile))
    qdq, compile_s["float QDQ form"] = timed(lambda: tvm_bridge.build(module, form="qdq"))
    integer, compile_s["integer form (int32_bias)"] = timed(
        lambda: tvm_bridge.build(module, form="integer", profile="int32_bias"))

    for profile, runner in kernels.items():
        if not np.array_equal(runner(xn), module.run(xn, profile=profile).dequantized):
            raise AssertionError(f"{name}: kernels form and runtime differ under {profile}")

    load_before = load_average()
    with torch.no_grad():
        t = interleaved_times({
            "PyTorch fbgemm": lambda: model(x),
            "qnnpy runtime (fbgemm)": lambda: module.run(xn, profile="fbgemm"),
            "kernels form (fbgemm)": lambda: kernels["fbgemm"](xn),
            "qnnpy runtime (int32_bias)": lambda: module.run(xn, profile="int32_bias"),
            "kernels form (int32_bias)": lambda: kernels["int32_bias"](xn),
        }, runs)
    load_after = load_average()
    untuned = {}  # the forms TVM compiles without schedules: a few runs each, not interleaved
    for form, runner in (("float QDQ form", qdq), ("integer form (int32_bias)", integer)):
        runner(xn)
        untuned[form] = statistics.median(timed(lambda: runner(xn))[1] * 1e3 for _ in range(qdq_runs))

    wall_ref, cpu_ref = t["qnnpy runtime (fbgemm)"]
    lines = [f"### {name}", "",
             f"Load average (1/5/15 min) before: {load_before}, after the interleaved rounds: {load_after}.", "",
             "| contender | wall ms | / qnnpy runtime (fbgemm) | / PyTorch fbgemm | thread CPU ms | "
             "/ qnnpy runtime (fbgemm) | / PyTorch fbgemm |", "|---|---|---|---|---|---|---|"]
    wall_fb, cpu_fb = t["PyTorch fbgemm"]
    for contender, (w, c) in t.items():
        lines.append(f"| {contender} | {w:.2f} | {w / wall_ref:.3f}x | {w / wall_fb:.2f}x | {c:.2f} | "
                     f"{c / cpu_ref:.3f}x | {c / cpu_fb:.2f}x |")
    for form, ms in untuned.items():
        lines.append(f"| {form} (median of {qdq_runs}, not interleaved) | {ms:.0f} | {ms / wall_ref:.0f}x | "
                     f"{ms / wall_fb:.0f}x | | | |")
    lines.append("")
    for profile in ("fbgemm", "int32_bias"):
        (kw, kc), (rw, rc) = t[f"kernels form ({profile})"], t[f"qnnpy runtime ({profile})"]
        lines.append(f"Kernels form / runtime under {profile}: **{kw / rw:.3f}x** wall, **{kc / rc:.3f}x** thread CPU.")
        lines.append("")
    lines += ["| compile step | seconds |", "|---|---|", f"| qnnpy.from_torch | {convert_s:.2f} |"]
    lines += [f"| {step} | {s:.2f} |" for step, s in compile_s.items()]
    lines.append("")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="interleaved rounds (default 15)")
    parser.add_argument("--qdq-runs", type=int, default=3,
                        help="runs of the float QDQ and integer forms, untuned in TVM (default 3)")
    parser.add_argument("--out", help="also write the results (markdown) to this file")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.backends.quantized.engine = "fbgemm"
    torch.set_num_threads(1)
    kernel_form.set_num_threads(1)
    lines = ["## TVM build forms, 1x3x224x224, 1 thread", "",
             f"CPU: {cpu_description()}; qnnpy kernels ISA: {qnnpy._core.default_isa()}; "
             f"{args.runs} interleaved rounds.", ""]
    print("\n".join(lines), flush=True)
    models = {"ResNet-18": zoo.quantized_resnet18, "MobileNetV2": zoo.quantized_mobilenet_v2}
    for name, make in models.items():
        model_lines = bench_model(name, make(engine="fbgemm", seed=0), args.runs, args.qdq_runs)
        print("\n".join(model_lines), flush=True)
        lines += model_lines
    if args.out:
        Path(args.out).write_text("\n".join(lines))

if __name__ == "__main__":
    main()

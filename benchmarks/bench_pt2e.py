"""PT2E models: qnnpy's runtime vs PyTorch's torch.compile-d PT2E model (inductor), one thread.

Run: .venv/bin/python -P benchmarks/bench_pt2e.py [--runs 15] [--size 224]

ResNet-18 and MobileNetV2 (torchvision, weights=None, random batch-norm statistics) are
quantized with torchao's X86InductorQuantizer (tests/pt2e_models.py). In one process and
one run: the median latency of the converted GraphModule run eagerly (PT2E's reference,
float dequantize -> op -> quantize), of the same module after torch.compile (inductor with
freezing: oneDNN int8 kernels, the x86 deployment path), and of qnnpy's runtime under the
fbgemm and int32_bias profiles, all interleaved round by round; then how often the compiled
model and qnnpy agree with the reference on the final output (same top-1 class, largest
difference relative to the output's range), and how often qnnpy agrees with the compiled model. qnnpy runs its float-output convs (the ones
X86InductorQuantizer leaves in float) with integer accumulation (the default) and, as
"float layers", in float32 (QNNPY_FLOAT_LAYERS=float when its executor is made).
Each contender's median wall time and median CPU time of the calling thread
(time.thread_time: every contender runs on one thread, and time lost to other processes
on a shared machine does not count) are printed, with the load average before and after.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

import qnnpy

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]
from bench_latency import cpu_model  # noqa: E402
from pt2e_models import inputs, pt2e  # noqa: E402


def medians(calls: dict, runs: int) -> tuple[dict[str, float], dict[str, float]]:
    """Median wall and calling-thread CPU milliseconds per call, the calls interleaved round by round.
    Each timed call follows an untimed one of the same contender: right after PT2E's eager run (which
    sweeps the caches with its float weights) any contender's first call is 2-3 ms slower."""
    for call in calls.values():
        call()
    wall: dict[str, list[float]] = {name: [] for name in calls}
    cpu: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(runs):
        for name, call in calls.items():
            call()
            start, start_cpu = time.perf_counter(), time.thread_time()
            call()
            cpu[name].append((time.thread_time() - start_cpu) * 1e3)
            wall[name].append((time.perf_counter() - start) * 1e3)
    return ({name: statistics.median(t) for name, t in wall.items()},
            {name: statistics.median(t) for name, t in cpu.items()})


def with_float_layers(module: qnnpy.QDQModule, xn: np.ndarray) -> qnnpy.QDQModule:
    """The module again, its float-output convs run in float32 (QNNPY_FLOAT_LAYERS=float is read when
    the executor is made, at the first run)."""
    float_layers = qnnpy.QDQModule(module.graph, module.torch_nodes)
    os.environ["QNNPY_FLOAT_LAYERS"] = "float"
    try:
        float_layers.run(xn, profile="fbgemm")
    finally:
        del os.environ["QNNPY_FLOAT_LAYERS"]
    return float_layers


def agreement(run, reference: list[np.ndarray], xs: list[torch.Tensor]) -> str:
    same = worst = 0.0
    for x, ref in zip(xs, reference):
        got = np.asarray(run(x)).reshape(ref.shape)
        same += int(got.argmax() == ref.argmax())
        worst = max(worst, float(np.abs(got - ref).max() / np.abs(ref).max()))
    return f"top-1 {int(same)}/{len(xs)}, max |diff| {worst:.2%} of max |output|"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--check-inputs", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch._inductor.config.freezing = True
    shape = (1, 3, args.size, args.size)
    print(f"CPU: {cpu_model()}; torch {torch.__version__}; 1 thread; input {shape}; median of {args.runs} runs; "
          f"load average before: {os.getloadavg()}")
    for name in ("resnet18", "mobilenet_v2"):
        gm = pt2e(name, "x86", shape=shape)
        x = inputs(1, seed=5, shape=shape)[0]
        module = qnnpy.from_torch(gm, (x,))
        start = time.perf_counter()
        with torch.no_grad():
            compiled = torch.compile(gm)
            compiled(x)
        compile_s = time.perf_counter() - start
        floats = sum(1 for n in module.nodes() if qnnpy._core.op_info(n["op"])["kind"] == "float")
        xn = x.numpy()
        float_layers = with_float_layers(module, xn)
        with torch.no_grad():
            ms, cpu_ms = medians({
                "PT2E eager (reference)": lambda: gm(x),
                "PT2E torch.compile (inductor)": lambda: compiled(x),
                "qnnpy fbgemm": lambda: module.run(xn, profile="fbgemm"),
                "qnnpy int32_bias": lambda: module.run(xn, profile="int32_bias"),
                "qnnpy fbgemm, float layers": lambda: float_layers.run(xn, profile="fbgemm"),
            }, args.runs)
            xs = inputs(args.check_inputs, seed=7, shape=shape)
            reference = [gm(v).numpy() for v in xs]
            checks = {
                "torch.compile": agreement(lambda v: compiled(v).numpy(), reference, xs),
                "qnnpy fbgemm": agreement(lambda v: module.run(v.numpy(), profile="fbgemm").dequantized, reference, xs),
                "qnnpy int32_bias": agreement(lambda v: module.run(v.numpy(), profile="int32_bias").dequantized,
                                              reference, xs),
                "qnnpy fbgemm, float layers": agreement(
                    lambda v: float_layers.run(v.numpy(), profile="fbgemm").dequantized, reference, xs),
            }
            compiled_outputs = [compiled(v).numpy() for v in xs]
            with_compiled = {
                profile: agreement(lambda v: module.run(v.numpy(), profile=profile).dequantized, compiled_outputs, xs)
                for profile in ("fbgemm", "int32_bias")}
        print(f"\n{name} (X86InductorQuantizer; qnnpy: {len(module.nodes())} ops, {floats} float ops; "
              f"torch.compile took {compile_s:.0f} s)")
        print("| contender | median wall ms | median CPU ms | CPU vs torch.compile |")
        print("|---|---|---|---|")
        for contender, t in ms.items():
            c = cpu_ms[contender]
            print(f"| {contender} | {t:.2f} | {c:.2f} | {c / cpu_ms['PT2E torch.compile (inductor)']:.2f}x |")
        print(f"agreement with the PT2E reference over {len(xs)} inputs:")
        for contender, text in checks.items():
            print(f"  {contender}: {text}")
        print("agreement of qnnpy with torch.compile's outputs (the compiled model as the reference):")
        for profile, text in with_compiled.items():
            print(f"  qnnpy {profile}: {text}")
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()

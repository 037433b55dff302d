"""Where TVM's integer form spends its time: each compiled function of a model timed on its own.

Run: .venv/bin/python -P benchmarks/profile_integer_form.py [--model mobilenet_v2|resnet18] [--threads 1] [--top 12]

TVM 0.27's Relax VM has no profiling mode, so this compiles the integer form with qnnpy's schedule rules (as
``tvm_bridge.build`` does), then times every TIR function of the scheduled module with TVM's time evaluator on
zero-filled arguments of its parameters' shapes (min of 3 repeats of 5 calls), and groups them by what they do:
the int8 GEMMs, the depthwise convs, the functions that pack a layer's input (the previous layer's requantization
fused with its packing: pack_input, pointwise_columns, centered_input, packed_rows, columns), and the rest. The
whole model's median latency is printed beside the sum (the VM's own work and the allocations are the
difference). Prints the CPU; saves nothing.
"""
from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_tvm_forms import cpu_description  # noqa: E402

import qnnpy  # noqa: E402
from qnnpy import tvm_bridge, zoo  # noqa: E402
from qnnpy.tvm_bridge.schedules import scheduled_pipeline  # noqa: E402

# The names rewrite.py gives the functions it emits, by what they do; the fused functions keep the last one.
GROUPS = (("GEMM", ("int8_gemm", "int8_linear")), ("depthwise", ("depthwise",)),
          ("requantize + pack the next input", ("pack_input", "pointwise_columns", "centered_input", "packed_rows",
                                                "columns")))


def group_of(name: str) -> str:
    base = name.rstrip("0123456789")
    for group, suffixes in GROUPS:
        if any(base == s or base.endswith("_" + s) or base.startswith(s) for s in suffixes):
            return group
    return "other (pools, adds, the head)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("mobilenet_v2", "resnet18"), default="mobilenet_v2")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--top", type=int, default=12, help="how many of the slowest functions to list")
    args = parser.parse_args()
    import tvm
    from tvm import tirx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = zoo.quantized_torchvision(args.model)
        x = zoo.calibration_data(1, 1, (3, 224, 224), seed=4)[0]
        module = qnnpy.from_torch(model, (x,))
    tvm_bridge.set_num_threads(args.threads)
    runner = tvm_bridge.build(module, form="integer", profile="fbgemm")
    image = x.numpy()
    for _ in range(3):
        runner(image)
    times = []
    for _ in range(20):
        start = time.perf_counter()
        runner(image)
        times.append(time.perf_counter() - start)

    scheduled = scheduled_pipeline(tvm_bridge.to_target("host"))(runner.relax_module)
    library = next(m for m in runner.executable.mod.imports if m.kind == "llvm")
    device = tvm.cpu()
    rows = []
    for gv, func in scheduled.functions_items():
        if not isinstance(func, tirx.PrimFunc):
            continue
        arguments = [tvm.runtime.tensor(np.zeros([int(d) for d in p.shape], str(p.dtype)), device) for p in func.params]
        seconds = min(library.time_evaluator(gv.name_hint, device, number=5, repeat=3)(*arguments).results)
        rows.append((seconds * 1e3, gv.name_hint))
    rows.sort(reverse=True)
    total = sum(ms for ms, _ in rows)
    print(f"{cpu_description()}; {args.model} 1x3x224x224, integer form, profile fbgemm, {args.threads} thread(s)")
    print(f"whole model: {1e3 * statistics.median(times):.2f} ms (median of 20); its {len(rows)} functions timed "
          f"alone: {total:.2f} ms")
    by_group = collections.defaultdict(float)
    for ms, name in rows:
        by_group[group_of(name)] += ms
    for group, ms in sorted(by_group.items(), key=lambda item: -item[1]):
        print(f"  {group:36s} {ms:7.2f} ms  {100 * ms / total:5.1f}%")
    print(f"slowest {args.top}:")
    for ms, name in rows[:args.top]:
        print(f"  {ms:7.3f} ms  {name if len(name) <= 100 else name[:60] + '...' + name[-37:]}")


if __name__ == "__main__":
    main()

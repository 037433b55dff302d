"""PT2E numerics per layer: each quantized layer of qnnpy's runtime fed PyTorch's inputs, against
PyTorch's run of the converted GraphModule (compare(..., reference_inputs=True)); with --end-to-end,
each layer fed the runtime's own outputs (compare's default), so that differences compound.

Run: .venv/bin/python -P benchmarks/pt2e_per_layer.py [--inputs 4] [--end-to-end]

ResNet-18, MobileNetV2 and MobileNetV3-small (tests/pt2e_models.py: weights=None, random batch-norm
statistics, 1x3x32x32) under X86InductorQuantizer and the XNNPACK-style config. Per profile: the
fraction of identical values over all quantized tensors, the lowest fraction of a layer (and its op)
and the largest difference in steps of any layer. The rows of docs/pt2e.md's per-layer table.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import qnnpy
from qnnpy import _core

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]
from bench_latency import cpu_model  # noqa: E402
from pt2e_models import inputs, pt2e  # noqa: E402

PROFILES = ("fbgemm", "int32_bias")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", type=int, default=4)
    parser.add_argument("--end-to-end", action="store_true", help="feed each layer the runtime's own outputs")
    args = parser.parse_args()
    fed = "the runtime's own outputs" if args.end_to_end else "PyTorch's inputs"
    print(f"CPU: {cpu_model()}; {args.inputs} inputs of 1x3x32x32; every quantized tensor fed {fed}\n")
    print("| model | quantizer | quantized tensors | " + " | ".join(f"{p}: all | {p}: worst layer" for p in PROFILES) + " |")
    print("|---|---|---|" + "---|---|" * len(PROFILES))
    for name in ("resnet18", "mobilenet_v2", "mobilenet_v3_small"):
        for kind in ("x86", "xnnpack"):
            gm = pt2e(name, kind)
            xs = inputs(args.inputs)
            module = qnnpy.from_torch(gm, (xs[0],))
            report = qnnpy.compare(gm, module, xs, profiles=PROFILES, reference_inputs=not args.end_to_end)
            cells = []
            for profile in PROFILES:
                layers = [r for r in report.layers[profile] if _core.op_info(r.op)["kind"] != "float"]
                identical = sum(r.identical for r in layers) / sum(r.total for r in layers)
                worst = min(layers, key=lambda r: r.fraction)
                cells += [f"{identical:.4%}", f"{worst.fraction:.4%} / {max(r.max_lsb for r in layers)} ({worst.op})"]
            print(f"| {name} | {kind} | {len(layers)} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()

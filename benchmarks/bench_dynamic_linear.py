"""Dynamic quantized linear: qnnpy runtime vs PyTorch fbgemm (quantized::linear_dynamic), single thread.

Run: .venv/bin/python -P benchmarks/bench_dynamic_linear.py [--runs 30]

Shapes of a BERT-base encoder layer at sequence length 128 (hidden 768, FFN 3072). Medians of
interleaved runs; the outputs are checked equal (tolerance 0) before timing. The runtime's
dynamic_linear is untuned: its int16 GEMM (AVX2) plus scalar min/max, row packing and an epilogue
whose fused multiply-add is the C library's fmaf (the core is built without -mfma), one thread.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from torch import nn

import qnnpy

SHAPES = {"attention projection 768 -> 768": (768, 768), "FFN in 768 -> 3072": (768, 3072),
          "FFN out 3072 -> 768": (3072, 768)}


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo."""
    with open("/proc/cpuinfo") as f:
        return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "unknown")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--tokens", type=int, default=128)
    args = parser.parse_args()
    torch.backends.quantized.engine = "fbgemm"
    torch.set_num_threads(1)
    print(f"CPU: {cpu_model()}; torch {torch.__version__}; one thread; {args.tokens} tokens; medians of {args.runs}")
    for name, (k, n) in SHAPES.items():
        model = torch.ao.quantization.quantize_dynamic(nn.Sequential(nn.Linear(k, n)).eval(), {nn.Linear})
        x = torch.randn(1, args.tokens, k)
        module = qnnpy.from_torch(model, (x,))
        assert np.array_equal(module.run(x.numpy()).dequantized, model(x).numpy())
        times: dict[str, list[float]] = {"qnnpy": [], "torch": []}
        for _ in range(args.runs):
            start = time.perf_counter()
            module.run(x.numpy())
            times["qnnpy"].append(time.perf_counter() - start)
            start = time.perf_counter()
            with torch.no_grad():
                model(x)
            times["torch"].append(time.perf_counter() - start)
        ours, theirs = (statistics.median(times[k]) * 1e3 for k in ("qnnpy", "torch"))
        print(f"{name:<34} qnnpy {ours:7.3f} ms  PyTorch fbgemm {theirs:7.3f} ms  ratio {ours / theirs:5.2f}x")


if __name__ == "__main__":
    main()

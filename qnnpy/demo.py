"""The main job on the built-in default: quantized ResNet-18 -> QDQ module -> TVM (integer execution), compared
with PyTorch bit for bit.

Run ``python -m qnnpy.demo [--out DIR] [--inputs N]``.
"""
from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import torch

import qnnpy
from qnnpy import tvm_bridge, zoo


def _step(msg: str) -> float:
    print(f"[qnnpy] {msg}", flush=True)
    return time.perf_counter()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qnnpy.demo", description=__doc__)
    parser.add_argument("--out", default="artifacts/resnet18", help="folder for graph.qnnpy and module.py")
    parser.add_argument("--inputs", type=int, default=16, help="number of generated inputs to compare on")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    torch.set_num_threads(1)

    t = _step("building torchvision ResNet-18 (weights=None), fusing, calibrating on generated data, converting (fbgemm)")
    model = zoo.quantized_resnet18(engine="fbgemm")
    inputs = zoo.calibration_data(args.inputs, 1, (3, 224, 224), seed=1000)
    t = _step(f"  done in {time.perf_counter() - t:.1f}s; converting with qnnpy.from_torch")
    module = qnnpy.from_torch(model, (inputs[0],))
    print(module.summary())
    out = module.save(Path(args.out))
    form = tvm_bridge.default_form()
    t = _step(f"  wrote {out}/graph.qnnpy and module.py; compiling with TVM for this CPU ({form} form, "
              "profile fbgemm: the arithmetic of PyTorch's fbgemm engine)")
    runner = tvm_bridge.build(module, form=form, profile="fbgemm")
    _step(f"  compiled in {time.perf_counter() - t:.1f}s; running {len(inputs)} inputs in TVM and PyTorch")

    agreement = qnnpy.compare_tvm(model, module, inputs, runner)
    print(agreement.summary())

    t = _step(f"running qnnpy's integer runtime ({qnnpy._core.default_isa()} kernels) under every profile, "
              "comparing every layer with PyTorch fbgemm")
    report = qnnpy.compare(model, module, inputs)
    for profile in report.layers:
        final = report.final(profile)
        exact_layers = sum(r.identical == r.total for r in report.layers[profile])
        role = "reproduces this engine" if profile == "fbgemm" else "another arithmetic, for information"
        print(f"integer runtime, profile {profile:<11} ({role}) vs PyTorch fbgemm: {exact_layers}/"
              f"{len(report.layers[profile])} layers bit-identical; final output {final.identical}/{final.total} "
              f"identical ({final.fraction:.2%}), max {final.max_lsb} LSB")
    _step(f"  done in {time.perf_counter() - t:.1f}s (int32_bias is the params' canonical meaning, qnnpack "
          "PyTorch's qnnpack engine, fixed_point integer-only hardware: docs/run.md#profiles)")
    exact = agreement.identical == agreement.total and report.all_identical("fbgemm")
    return 0 if exact else 1


if __name__ == "__main__":
    raise SystemExit(main())

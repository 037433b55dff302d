"""qnnpy's integer runtime against ONNX Runtime (int8 QDQ) and PyTorch fbgemm, 1 and 2 threads.

Run: .venv/bin/python -P benchmarks/bench_ort.py [--runs 15] [--out report.md]

The same torchvision architectures under the same seed as qnnpy.zoo: the float model
(fused conv + bn + relu) is exported to ONNX and quantized by
onnxruntime.quantization.quantize_static (QDQ format, per-channel int8 weights, uint8
activations, MinMax calibration on the generated images qnnpy.zoo calibrates PyTorch
with); qnnpy runs PyTorch's eager-mode quantized model converted by qnnpy.from_torch
(fbgemm profile). All contenders are timed in one process, interleaved round by
round (bench_latency.interleaved_medians), at 1x3x224x224. ORT and qnnpy compute
different integer models (different calibration and rounding), so this compares
speed only.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

import qnnpy
from qnnpy import _core, zoo

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_latency import cpu_model, interleaved_medians, load_average, write_report  # noqa: E402

SEED = 0


class _Images(CalibrationDataReader):
    """The generated calibration images, one at a time, under the ONNX input's name."""

    def __init__(self, input_name: str, batches: list[torch.Tensor]):
        self._items = iter([{input_name: b[i:i + 1].numpy()} for b in batches for i in range(b.shape[0])])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._items, None)


def float_model(name: str) -> torch.nn.Module:
    """torchvision's quantizable `name`, float, fused, with qnnpy.zoo's seed (the same weights before quantization)."""
    from torchvision.models import quantization

    torch.manual_seed(SEED)
    model = getattr(quantization, name)(weights=None, quantize=False).eval()
    model.fuse_model()
    return model


def _own_initializers(path: str) -> None:
    """Replaces each Identity of an initializer by a copy of it under the Identity's output name.

    The exporter shares initializers with equal values (e.g. the all-zero biases of convs fused
    with freshly initialised batch norms) through Identity nodes; quantize_static only quantizes
    a bias that is an initializer, and would leave those convs with float biases."""
    model = onnx.load(path)
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    for node in [n for n in graph.node if n.op_type == "Identity" and n.input[0] in inits]:
        copy = onnx.TensorProto()
        copy.CopyFrom(inits[node.input[0]])
        copy.name = node.output[0]
        graph.initializer.append(copy)
        graph.node.remove(node)
    onnx.save(model, path)


def ort_int8_model(name: str, workdir: str) -> str:
    """Path of the QDQ int8 ONNX model of torchvision's `name`."""
    model = float_model(name)
    x = torch.randn(1, 3, 224, 224)
    fp32 = os.path.join(workdir, f"{name}.onnx")
    torch.onnx.export(model, (x,), fp32, input_names=["x"], output_names=["y"], opset_version=17, dynamo=False)
    _own_initializers(fp32)
    int8 = os.path.join(workdir, f"{name}.int8.onnx")
    calibration = zoo.calibration_data(4, 8, (3, 224, 224), SEED + 1)
    quantize_static(fp32, int8, _Images("x", calibration), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    return int8


def ort_session(path: str, threads: int) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def bench(name: str, runs: int, workdir: str) -> list[str]:
    torch_model = zoo.quantized_torchvision(name)
    x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    module = qnnpy.from_torch(torch_model, (x,))
    xn = x.numpy()
    int8_path = ort_int8_model(name, workdir)
    rows = []
    load_before = load_average()
    for threads in (1, 2):
        torch.set_num_threads(threads)
        session = ort_session(int8_path, threads)
        fbgemm = lambda: setattr(torch.backends.quantized, "engine", "fbgemm")
        with torch.no_grad():
            t = interleaved_medians({
                "fbgemm": (fbgemm, lambda: torch_model(x)),
                "ort": (fbgemm, lambda: session.run(None, {"x": xn})),
                "qnnpy": (fbgemm, lambda: module.run(xn, profile="fbgemm", threads=threads)),
            }, runs)
        rows.append((threads, t["qnnpy"], t["fbgemm"], t["ort"]))
    lines = [f"### {name}", "", f"Load average (1/5/15 min) before: {load_before}, after: {load_average()}.", "",
             "| threads | qnnpy (ms) | PyTorch fbgemm (ms) | ONNX Runtime int8 QDQ (ms) | qnnpy / fbgemm | qnnpy / ORT |",
             "|---|---|---|---|---|---|"]
    for threads, ours, fb, onnx_rt in rows:
        lines.append(f"| {threads} | {ours:.2f} | {fb:.2f} | {onnx_rt:.2f} | {ours / fb:.2f}x | {ours / onnx_rt:.2f}x |")
    lines.append("")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--models", nargs="+", default=["resnet18", "mobilenet_v2"])
    parser.add_argument("--out", default=None, help="write the markdown report here as well")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    lines = ["# qnnpy vs ONNX Runtime", "",
             f"CPU: {cpu_model()} ({_core.default_isa()} kernels), torch {torch.__version__}, onnxruntime "
             f"{ort.__version__}, median of {args.runs} interleaved rounds after 3 warm-up runs, input 1x3x224x224.", ""]
    with tempfile.TemporaryDirectory() as workdir:
        for name in args.models:
            print(f"[bench] {name}: quantizing for PyTorch and ONNX Runtime", flush=True)
            lines += bench(name, args.runs, workdir)
            print("\n".join(lines[-8:]), flush=True)
    write_report(lines, args.out)


if __name__ == "__main__":
    main()

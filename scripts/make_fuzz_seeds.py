"""Writes the fuzzers' seed corpora (fuzz/corpus/<target>/) from real quantized models.

The models are the small test models of tests/small_models.py (one per op or op
variant) and, for graph_file, the embedding models of tests/embedding_models.py and small PT2E
models of tests/pt2e_models.py (float ops, a quantized mean), quantized on generated data with
fixed seeds:

- graph_file: each model converted with ``qnnpy.from_torch`` and saved (the bytes of
  ``graph.qnnpy``), and a few graphs built in the IR (``ir_graphs``); the atheris harness of
  saved modules uses the same files;
- packed_state: each quantized conv / transposed conv / linear layer of those models
  as the record fuzz/packed_state.cpp reads (its packed state as qnnpy's reader
  extracts it, and the layer's input and output quantization seen in a forward pass);
- torchscript_archive: a few of the models traced and written with ``torch.jit.save``,
  and the ``data.pkl`` record of each.

Run from the repository root: ``.venv/bin/python -P scripts/make_fuzz_seeds.py``.
"""
from __future__ import annotations

import io
import struct
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import torch
import torch.ao.nn.quantized as nnq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import embedding_models  # noqa: E402  (tests/ is put on the path above)
import pt2e_models  # noqa: E402
import small_models  # noqa: E402

import qnnpy  # noqa: E402
from qnnpy.convert.torch_weight_reader import conv_state, linear_state  # noqa: E402

CORPUS = ROOT / "fuzz" / "corpus"
# The archives are the largest seeds; these few cover conv, linear, transposed conv and 1-D conv.
ARCHIVE_MODELS = ("conv_per_tensor", "conv_transpose2d", "conv1d", "head")
LAYER_KINDS = {nnq.Conv2d: 0, nnq.ConvTranspose2d: 1, nnq.Linear: 2}


def models() -> dict[str, tuple[torch.nn.Module, torch.Tensor]]:
    """name -> (quantized model, example input) of every small test model."""
    out = {}
    for name, (body, shape, per_channel, fuse) in small_models.conv_cases().items():
        out[name] = small_models.quantized(body, shape, per_channel, fuse)
    for name, (body, shape) in small_models.op_cases().items():
        out[name] = small_models.quantized(body, shape)
    out["head"] = small_models.quantized(small_models.Head(linear_relu=True), (3, 10, 10), fuse=[["body.fc", "body.fc_relu"]])
    return out


def _shape(dims: tuple[int, ...]) -> bytes:
    return struct.pack(f"<B{len(dims)}i", len(dims), *dims)


def packed_state_record(layer: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, where: str) -> bytes:
    """The record of fuzz/packed_state.cpp for one quantized layer seen with input x and output y."""
    kind = next(k for cls, k in LAYER_KINDS.items() if isinstance(layer, cls))
    if kind == 2:
        weight, bias = linear_state(layer._packed_params._packed_params, where)
        version, config = 0, np.zeros(0, np.int64)
    else:
        state = conv_state(layer._packed_params, where)
        weight, bias, version, config = state.weight, state.bias, state.version, state.config
    parts = [struct.pack("<Bi", kind, version), struct.pack(f"<B{len(config)}q", len(config), *config.tolist())]
    parts += [_shape(weight.data.shape), weight.data.astype(np.int8).tobytes(), struct.pack("<i", weight.axis)]
    parts += [struct.pack(f"<B{len(weight.scale)}f", len(weight.scale), *weight.scale.tolist())]
    parts += [struct.pack(f"<B{len(weight.zero_point)}i", len(weight.zero_point), *weight.zero_point.tolist())]
    bias_values = [] if bias is None else bias.tolist()
    parts += [struct.pack(f"<BH{len(bias_values)}f", bias is not None, len(bias_values), *bias_values)]
    parts += [struct.pack("<B", "ReLU" in type(layer).__name__)]  # ConvReLU2d, LinearReLU
    parts += [_shape(tuple(x.shape)), struct.pack("<fi", x.q_scale(), x.q_zero_point())]
    parts += [struct.pack("<Bfi", y.dtype == torch.qint8, y.q_scale(), y.q_zero_point())]
    return b"".join(parts)


def layer_records(model: torch.nn.Module, example: torch.Tensor, name: str) -> dict[str, bytes]:
    """file name -> packed_state record of every conv / linear layer of the model (one forward pass)."""
    records: dict[str, bytes] = {}
    hooks = []
    for path, m in model.named_modules():
        if any(isinstance(m, cls) for cls in LAYER_KINDS):
            def hook(m: torch.nn.Module, args: tuple, y: torch.Tensor, path: str = path) -> None:
                records[f"{name}.{path}.bin"] = packed_state_record(m, args[0], y, path)
            hooks.append(m.register_forward_hook(hook))
    with torch.no_grad():
        model(example)
    for h in hooks:
        h.remove()
    return records


def data_pickle(archive: io.BytesIO) -> bytes:
    """The data.pkl record of a TorchScript archive (the atheris harness wraps it into a template archive)."""
    with zipfile.ZipFile(archive) as z:
        return z.read(next(n for n in z.namelist() if n.endswith("/data.pkl")))


def pt2e_graphs() -> dict[str, tuple[torch.fx.GraphModule, tuple[torch.Tensor]]]:
    """Small PT2E models (tests/pt2e_models.py): float islands (X86) and a quantized mean (XNNPACK-style)."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    x = pt2e_models.inputs(1)[0]
    graphs = {f"pt2e_{name}": (pt2e_models.pt2e(name, "x86"), (x,)) for name in ("float_ops", "shuffle_unit")}
    pooled = torch.randn(1, 3, 4, 4, generator=torch.Generator().manual_seed(3))
    prepared = prepare_pt2e(torch.export.export(pt2e_models.ConvPool().eval(), (pooled,)).module(),
                            pt2e_models.quantizer("xnnpack"))
    prepared(pooled)
    graphs["pt2e_float_mean"] = (convert_pt2e(prepared), (pooled,))
    return graphs


def ir_graphs() -> dict[str, bytes]:
    """Graphs built directly in the IR, for paths no small test model takes: a stride-1 depthwise
    conv over uint8 inputs (zero point 0, after a ReLU), which the x86 sets run on quads of rows, and a
    7x7 stride-2 conv of 3 input and 48 output channels, which they run on window columns."""
    rng = np.random.default_rng(4)
    g = qnnpy._core.Graph()
    x = g.add_node("quantize", [g.add_input("x", [1, 16, 10, 9])], "quant", "quant", "uint8", 0.05, 0)
    config = np.array([2, 1, 1, 1, 1, 1, 1, 0, 0, 16, 0], np.int64)  # 3x3, stride 1, padding 1, 16 groups
    y = g.add_conv2d(x, "body.dw", "body_dw", 3, config, rng.integers(-128, 128, (16, 1, 3, 3), dtype=np.int8),
                     rng.uniform(1e-3, 5e-2, 16), np.zeros(16, np.int64), 0, rng.standard_normal(16).astype(np.float32),
                     True, "uint8", 0.1, 0)
    g.mark_output(g.add_node("dequantize", [y], "dequant", "dequant", "float32"))
    graphs = {"depthwise_stride1_quads.qnnpy": g.serialize()}
    g = qnnpy._core.Graph()
    x = g.add_node("quantize", [g.add_input("x", [1, 3, 15, 13])], "quant", "quant", "uint8", 0.05, 128)
    config = np.array([2, 2, 2, 3, 3, 1, 1, 0, 0, 1, 0], np.int64)  # 7x7, stride 2, padding 3
    # Weights within [-64, 63]: pairs of at most 128 leave every input byte within the AVX2 bound.
    y = g.add_conv2d(x, "body.conv", "body_conv", 3, config, rng.integers(-64, 64, (48, 3, 7, 7), dtype=np.int8),
                     rng.uniform(1e-3, 5e-2, 48), np.zeros(48, np.int64), 0, rng.standard_normal(48).astype(np.float32),
                     True, "uint8", 0.1, 0)
    g.mark_output(g.add_node("dequantize", [y], "dequant", "dequant", "float32"))
    graphs["conv_window_columns.qnnpy"] = g.serialize()
    return graphs


def write(target: str, files: dict[str, bytes]) -> None:
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    print(f"{folder.relative_to(ROOT)}: {len(files)} files, {sum(map(len, files.values()))} bytes")


def main() -> None:
    warnings.filterwarnings("ignore")
    torch.backends.quantized.engine = "fbgemm"
    graphs, layers, archives = {}, {}, {}
    for name, (model, example) in models().items():
        graphs[f"{name}.qnnpy"] = qnnpy.from_torch(model, example)._graph.serialize()
        layers.update(layer_records(model, example, name))
        if name in ARCHIVE_MODELS:
            buffer = io.BytesIO()
            torch.jit.save(torch.jit.trace(model, example), buffer)
            archives[f"{name}.pt"] = buffer.getvalue()
            archives[f"{name}.data.pkl"] = data_pickle(buffer)
    for name, (model, inputs) in embedding_models.embedding_cases().items():  # integer (index) inputs
        graphs[f"{name}.qnnpy"] = qnnpy.from_torch(model, inputs)._graph.serialize()
    for name, (model, inputs) in pt2e_graphs().items():  # float ops, float_mean
        graphs[f"{name}.qnnpy"] = qnnpy.from_torch(model, inputs)._graph.serialize()
    graphs.update(ir_graphs())
    write("graph_file", graphs)
    write("packed_state", layers)
    write("torchscript_archive", archives)


if __name__ == "__main__":
    main()

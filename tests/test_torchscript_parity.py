"""TorchScript parity: every op form the eager / FX path converts has a TorchScript route, and
the single-op models convert from TorchScript like from eager mode, bit for bit."""
import operator

import numpy as np
import pytest
import torch
import torch.ao.nn.intrinsic.quantized as nniq
import torch.ao.nn.intrinsic.quantized.dynamic as nniqd
import torch.ao.nn.quantized as nnq
import torch.ao.nn.quantized.dynamic as nnqd
import torch.nn.functional as F
from torch import nn

import qnnpy
from qnnpy.capture import script_ops
from qnnpy.capture.torchscript_capture import _STRUCTURAL
from qnnpy.convert.op_form import AtenForm
from qnnpy.convert.ops import CONVERTERS
from script_models import save_and_load
from small_models import conv_cases, op_cases, quantized

# The TorchScript op kinds each eager / FX form of the converter table becomes in a scripted or
# traced graph (PyTorch 1.13 and later; quantized:: kinds keep their older overloads, e.g. the
# conv2d with stride / padding / dilation / groups arguments). Eager forms that leave no op
# in the graph map to no kind.
SCRIPT_KINDS = {
    nnq.Quantize: ["aten::quantize_per_tensor"],
    torch.quantize_per_tensor: ["aten::quantize_per_tensor"],
    nnq.DeQuantize: ["aten::dequantize"],
    torch.dequantize: ["aten::dequantize"],
    "Tensor.dequantize": ["aten::dequantize"],
    nnq.Conv1d: ["quantized::conv1d"],
    nniq.ConvReLU1d: ["quantized::conv1d_relu"],
    nnq.Conv2d: ["quantized::conv2d"],
    nnq.ConvTranspose2d: ["quantized::conv_transpose2d"],
    nniq.ConvReLU2d: ["quantized::conv2d_relu"],
    nnq.Conv3d: ["quantized::conv3d"],
    nniq.ConvReLU3d: ["quantized::conv3d_relu"],
    nnq.Linear: ["quantized::linear"],
    nniq.LinearReLU: ["quantized::linear_relu"],
    nnq.BatchNorm2d: ["quantized::batch_norm2d"],
    nniq.BNReLU2d: ["quantized::batch_norm2d_relu"],
    torch.cat: ["aten::cat"],
    nnq.Hardswish: ["quantized::hardswish"],
    nn.Hardsigmoid: ["aten::hardsigmoid", "aten::hardsigmoid_"],
    F.hardsigmoid: ["aten::hardsigmoid", "aten::hardsigmoid_"],
    nnq.Sigmoid: ["quantized::sigmoid"],
    nn.Sigmoid: ["aten::sigmoid"],
    torch.sigmoid: ["aten::sigmoid"],
    "Tensor.sigmoid": ["aten::sigmoid"],
    nnq.LeakyReLU: ["quantized::leaky_relu"],
    nn.LeakyReLU: ["aten::leaky_relu", "aten::leaky_relu_"],
    F.leaky_relu: ["aten::leaky_relu", "aten::leaky_relu_"],
    nnq.ELU: ["quantized::elu"],
    nnq.ReLU6: ["quantized::relu6"],
    nn.ReLU6: ["aten::relu6", "aten::hardtanh"],  # releases before 1.13 spell F.relu6 as hardtanh(x, 0, 6)
    F.relu6: ["aten::relu6", "aten::relu6_", "aten::hardtanh", "aten::hardtanh_"],
    nn.Hardtanh: ["aten::hardtanh", "aten::hardtanh_"],
    F.hardtanh: ["aten::hardtanh", "aten::hardtanh_"],
    nn.AvgPool2d: ["aten::avg_pool2d"],
    nn.AvgPool3d: ["aten::avg_pool3d"],
    F.avg_pool3d: ["aten::avg_pool3d"],
    F.avg_pool2d: ["aten::avg_pool2d"],
    nn.Upsample: ["aten::upsample_nearest2d"],
    F.interpolate: ["aten::upsample_nearest2d"],
    "Tensor.mean": ["aten::mean"],
    torch.mean: ["aten::mean"],
    torch.transpose: ["aten::transpose"],
    "Tensor.transpose": ["aten::transpose"],
    torch.permute: ["aten::permute"],
    "Tensor.permute": ["aten::permute"],
    operator.getitem: ["prim::ListUnpack", "aten::__getitem__"],
    nn.ReLU: ["aten::relu", "aten::relu_"],
    F.relu: ["aten::relu", "aten::relu_"],
    torch.relu: ["aten::relu", "aten::relu_"],
    "Tensor.relu": ["aten::relu", "aten::relu_"],
    nn.MaxPool2d: ["aten::max_pool2d"],
    F.max_pool2d: ["aten::max_pool2d"],
    torch.max_pool2d: ["aten::max_pool2d"],
    nn.MaxPool3d: ["aten::max_pool3d"],
    F.max_pool3d: ["aten::max_pool3d"],
    torch.max_pool3d: ["aten::max_pool3d"],
    nn.AdaptiveAvgPool2d: ["aten::adaptive_avg_pool2d"],
    nn.AdaptiveAvgPool3d: ["aten::adaptive_avg_pool3d"],
    F.adaptive_avg_pool3d: ["aten::adaptive_avg_pool3d"],
    F.adaptive_avg_pool2d: ["aten::adaptive_avg_pool2d"],
    torch.flatten: ["aten::flatten"],
    nn.Flatten: ["aten::flatten"],
    nn.Unflatten: ["aten::unflatten"],
    torch.unflatten: ["aten::unflatten"],
    "Tensor.unflatten": ["aten::unflatten"],
    torch.reshape: ["aten::reshape"],
    "Tensor.flatten": ["aten::flatten"],
    "Tensor.reshape": ["aten::reshape"],
    "Tensor.view": ["aten::view"],
    nn.Identity: [],  # forward returns its input: no op
    nn.Dropout: ["aten::dropout", "aten::dropout_"],
    nnq.Dropout: ["aten::dropout", "aten::dropout_"],
    torch.dropout: ["aten::dropout", "aten::dropout_"],
    F.dropout: ["aten::dropout", "aten::dropout_"],
    "Tensor.contiguous": ["aten::contiguous"],
    nn.Tanh: ["aten::tanh"],
    torch.tanh: ["aten::tanh"],
    "Tensor.tanh": ["aten::tanh"],
    nnq.LayerNorm: ["quantized::layer_norm"],
    # The float ops of dynamic-quantized transformers (qnnpy/convert/transformer_ops.py).
    nn.LayerNorm: ["aten::layer_norm"],
    F.layer_norm: ["aten::layer_norm"],
    torch.layer_norm: ["aten::layer_norm"],
    nn.GELU: ["aten::gelu"],
    F.gelu: ["aten::gelu"],
    torch.softmax: ["aten::softmax"],
    F.softmax: ["aten::softmax"],
    "Tensor.softmax": ["aten::softmax"],
    torch.matmul: ["aten::matmul"],
    "Tensor.matmul": ["aten::matmul"],
    operator.matmul: ["aten::matmul"],
    torch.bmm: ["aten::bmm"],
    torch.add: ["aten::add"],
    "Tensor.add": ["aten::add"],
    operator.add: ["aten::add"],
    torch.sub: ["aten::sub"],
    "Tensor.sub": ["aten::sub"],
    operator.sub: ["aten::sub"],
    torch.mul: ["aten::mul"],
    "Tensor.mul": ["aten::mul"],
    operator.mul: ["aten::mul"],
    torch.div: ["aten::div"],
    "Tensor.div": ["aten::div"],
    operator.truediv: ["aten::div"],
    nnq.GroupNorm: ["quantized::group_norm"],
    nnq.InstanceNorm1d: ["quantized::instance_norm"],
    nnq.InstanceNorm2d: ["quantized::instance_norm"],
    nnq.Softmax: ["quantized::softmax"],
    nnqd.Linear: ["quantized::linear_dynamic"],
    nniqd.LinearReLU: ["quantized::linear_relu_dynamic"],
    nnq.Embedding: ["quantized::embedding_byte"],
    nnq.EmbeddingBag: ["quantized::embedding_bag_byte"],
    nn.Embedding: ["aten::embedding"],
    F.embedding: ["aten::embedding"],
    torch.embedding: ["aten::embedding"],
}


def _own_kind(key) -> list[str]:
    """A torch.ops function is its own TorchScript kind (``torch.ops.quantized.add`` -> quantized::add)."""
    if isinstance(key, torch._ops.OpOverloadPacket):
        return [key._qualified_op_name]
    if isinstance(key, torch._ops.OpOverload):
        return [key._schema.name]
    return []


def _schemas(kind: str) -> list:
    """The overloads of ``kind`` a graph calls (not the ``out=`` variants)."""
    schemas = [s for s in torch._C._jit_get_schemas_for_operator(kind)
               if not any(a.name == "out" for a in s.arguments) and "out" not in s.overload_name]
    assert schemas, f"no schema for {kind}"
    return schemas


def _pt2e_only(key) -> bool:
    """An entry for PT2E graphs (torch.export + convert_pt2e), which TorchScript never contains."""
    return isinstance(CONVERTERS[key], AtenForm) or (
        isinstance(key, torch._ops.OpOverload) and key.namespace == "quantized_decomposed")


def test_every_eager_form_has_a_torchscript_route():
    eager_forms = [key for key in CONVERTERS if not _pt2e_only(key)]
    unlisted = [key for key in eager_forms if key not in SCRIPT_KINDS and not _own_kind(key)]
    assert not unlisted, f"eager forms without their TorchScript kinds in SCRIPT_KINDS: {unlisted}"
    missing = []
    for key in eager_forms:
        for kind in SCRIPT_KINDS.get(key, []) + _own_kind(key):
            if kind in _STRUCTURAL:
                continue  # handled by the TorchScript walker itself (list unpacking, indexing)
            for schema in _schemas(kind):
                if isinstance(key, torch._ops.OpOverload) and schema.overload_name != key._overloadname:
                    continue  # a table entry for one overload (aten.to.dtype, PT2E's ops) routes that overload only
                op = script_ops.python_op(kind, schema, CONVERTERS)
                target = f"Tensor.{op.target}" if op.fx_op == "call_method" else op.target
                if target not in CONVERTERS:
                    missing.append(f"{schema.name}.{schema.overload_name} -> {target}")
    assert not missing, missing


def test_older_spellings_have_routes():
    """The spellings of older releases that the issue names resolve to converters."""
    for kind in ("quantized::relu6", "quantized::add_relu", "quantized::add_scalar", "quantized::cat",
                 "quantized::hardswish", "quantized::conv2d", "quantized::linear", "aten::hardtanh_"):
        for schema in _schemas(kind):
            assert script_ops.python_op(kind, schema, CONVERTERS).target in CONVERTERS, (kind, str(schema))
    legacy = [s for s in _schemas("quantized::conv2d") if "stride" in [a.name for a in s.arguments]]
    assert legacy, "the legacy quantized::conv2d overload (stride, padding, dilation, groups)"


def _same_conversion(model: nn.Module, x: torch.Tensor, scripted: torch.jit.ScriptModule) -> None:
    eager = qnnpy.from_torch(model, (x,))
    module = qnnpy.from_torch(scripted, (x,))
    assert [n["op"] for n in module.nodes()] == [n["op"] for n in eager.nodes()]
    assert len(module.params) == len(eager.params)
    for a, b in zip(module.params.values(), eager.params.values()):
        np.testing.assert_array_equal(a, b)
    torch.backends.quantized.engine = "fbgemm"
    report = qnnpy.compare(scripted, module, [x], profiles=["fbgemm"])
    assert report.all_identical("fbgemm"), report.table()


# Single-op models whose forward TorchScript cannot compile (tuple outputs annotated as a tensor,
# recompute_scale_factor): traced instead.
TRACED = {"avg_pool_upsample", "upsample_recomputed_scale"}


def _single_op_models() -> dict:
    cases = {name: (body, shape, True, None) for name, (body, shape) in op_cases().items()}
    cases.update(conv_cases())
    return cases


@pytest.mark.parametrize("name", sorted(_single_op_models()))
def test_single_op_models_convert_from_torchscript_like_eager(name):
    body, shape, per_channel, fuse = _single_op_models()[name]
    model, x = quantized(body, shape, per_channel, fuse)
    mode = "trace" if name in TRACED else "script"
    scripted = save_and_load(torch.jit.trace(model, x) if mode == "trace" else torch.jit.script(model))
    _same_conversion(model, x, scripted)


class _DequantizedList(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a = torch.quantize_per_tensor(x, 0.05, 64, torch.quint8)
        b = torch.quantize_per_tensor(x, 0.02, 10, torch.quint8)
        floats = torch.dequantize([a, b])
        return floats[0], floats[1]


def test_dequantize_of_a_tensor_list_converts():
    x = torch.randn(1, 3, 4, 5)
    scripted = save_and_load(torch.jit.script(_DequantizedList().eval()))
    assert "aten::dequantize" in str(scripted.inlined_graph)
    module = qnnpy.from_torch(scripted, (x,))
    assert [n["op"] for n in module.nodes()].count("dequantize") == 2
    assert [n["op"] for n in module.nodes()].count("quantize") == 2
    with torch.no_grad():
        first, _ = scripted(x)
    np.testing.assert_array_equal(module.run(x.numpy(), profile="fbgemm").dequantized, first.numpy())

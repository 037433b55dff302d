"""Transformer encoders end to end (tests/transformer_models.py): PT2E (X86InductorQuantizer and the
int8-symmetric XNNPACK config) and dynamic quantization (quantize_dynamic: dynamic linears, the rest
float) -> from_torch -> the runtime and TVM against PyTorch, per layer.

Quantized tensors are compared in quantization steps (LSB) with ``qnnpy.compare``. Float tensors
(the float ops around attention, a float head, dynamic_linear outputs fed by float ops) are float32
computations in another order, or with another exp / erf, than PyTorch's kernels
(tests/test_float_transformer_ops.py bounds each op alone); they are compared relative to the
tensor's largest magnitude.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch import nn

import qnnpy
from qnnpy import _core, tvm_bridge
from qnnpy.convert.converter import capture
from qnnpy.errors import ConversionError, UnsupportedOpsError
from transformer_models import (
    dynamic_encoder,
    dynamic_float_arithmetic,
    encoder,
    inputs,
    pt2e_encoder,
    pt2e_torch_encoder_layer,
    token_inputs,
)

FLOAT_KIND = {op for op in _core.op_names() if _core.op_info(op)["kind"] == "float"}
# The float ops every encoder produces (float_sub, float_div with a number...: FloatArithmetic).
ENCODER_FLOAT_OPS = {"float_softmax", "float_layer_norm", "float_gelu", "float_matmul", "float_permute",
                     "float_div"}
# A float op given the same float32 inputs as PyTorch's is within a few ulps of its result (the op
# tests); chains of them between two quantizes (and layer norms, which rescale) keep that size:
# measured <= 4.3e-7 of the tensor's largest magnitude (about 4 ulps of it) on every float tensor of
# the three encoders. Asserted: 16 ulps of the largest magnitude.
FLOAT_RELATIVE = 16 * float(np.finfo(np.float32).eps)


def _float_layer_errors(model: nn.Module, module: qnnpy.QDQModule, xs: list[torch.Tensor],
                        profile: str = "fbgemm") -> dict[str, float]:
    """source -> max over ``xs`` of max |ours - PyTorch's| / max |PyTorch's| for every float-kind node that
    a PyTorch node computes."""
    worst: dict[str, float] = {}
    float32 = {v["name"] for v in module.graph.values() if v["dtype"] == "float32"}
    nodes = [n for n in module.nodes() if n["op"] in FLOAT_KIND and n["output"] in module.torch_nodes
             and n["output"] in float32]
    for x in xs:
        recorded = capture(model, (x,)).values
        result = module.run(x.numpy(), profile=profile, capture=True)
        for n in nodes:
            ref = recorded[module.torch_nodes[n["output"]]].numpy()
            error = float(np.abs(result.intermediates[n["output"]] - ref).max() / np.abs(ref).max())
            worst[n["source"]] = max(worst.get(n["source"], 0.0), error)
    return worst


@pytest.fixture(scope="module", params=["x86", "xnnpack"])
def pt2e_case(request):
    gm = pt2e_encoder(request.param)
    return request.param, gm, qnnpy.from_torch(gm, (inputs(1)[0],))


def test_pt2e_encoder_float_ops_in_summary(pt2e_case):
    kind, _, module = pt2e_case
    ops = {n["op"] for n in module.nodes()}
    assert ENCODER_FLOAT_OPS - {"float_layer_norm"} <= ops
    # X86 leaves layer norms in float; the XNNPACK config quantizes them (quantized_layer_norm) and its GELU
    # island becomes dequantize -> float_gelu -> quantize.
    assert ("float_layer_norm" in ops) == (kind == "x86")
    assert ("quantized_layer_norm" in ops) == (kind == "xnnpack")
    summary = module.summary()
    for op in ops & FLOAT_KIND:
        assert f"{op} x{sum(n['op'] == op for n in module.nodes())}" in summary


def test_pt2e_encoder_quantized_layers_agree_with_pytorch(pt2e_case):
    """Under the fbgemm profile (PT2E's float bias) every quantized tensor agrees with PyTorch's run of the
    converted GraphModule: >= 99.9% identical, <= 1 LSB (measured: 100% identical). Under int32_bias the
    linears' biases are rounded to int32 first, which PT2E does not do: the first linear is within 1 LSB,
    deeper ones compound (measured up to 5 LSB on the XNNPACK config; asserted <= 8)."""
    kind, gm, module = pt2e_case
    xs = inputs(3, seed=3)
    report = qnnpy.compare(gm, module, xs, profiles=("fbgemm", "int32_bias"))
    assert report.layers["fbgemm"], "no quantized tensor compared"
    for row in report.layers["fbgemm"]:
        assert row.fraction >= 0.999 and row.max_lsb <= 1, report.table()
    first_linear = next((r for r in report.layers["int32_bias"] if r.op == "linear"), None)
    assert kind == "x86" or first_linear.max_lsb <= 1, report.table()  # X86 leaves every linear in float
    assert max(r.max_lsb for r in report.layers["int32_bias"]) <= 8, report.table()


def test_pt2e_encoder_float_layers_within_float_rounding(pt2e_case):
    kind, gm, module = pt2e_case
    errors = _float_layer_errors(gm, module, inputs(3, seed=3))
    assert errors and max(errors.values()) <= FLOAT_RELATIVE, errors
    with torch.no_grad():
        ref = gm(inputs(1, seed=4)[0]).numpy()
    out = module.run(inputs(1, seed=4)[0].numpy(), profile="fbgemm").dequantized
    if kind == "xnnpack":  # a quantized head: the dequantized int8 output
        np.testing.assert_array_equal(out, ref)
    else:  # X86's float head
        assert np.abs(out - ref).max() <= FLOAT_RELATIVE * np.abs(ref).max()


def test_pt2e_x86_encoder_in_tvm():
    """Kernels form: each node runs the runtime's runner (bit for bit the runtime). Float form: TVM's own
    float32 softmax / layer_norm / gelu / matmul: within float rounding of PyTorch (measured 1.8e-7 of the
    output's range)."""
    gm = pt2e_encoder("x86")
    x = inputs(1, seed=5)[0]
    module = qnnpy.from_torch(gm, (inputs(1)[0],))
    ours = module.run(x.numpy(), profile="fbgemm").dequantized
    with torch.no_grad():
        ref = gm(x).numpy()
    if tvm_bridge.default_form() == "kernels":
        np.testing.assert_array_equal(np.asarray(tvm_bridge.build(module, form="kernels", profile="fbgemm")(x.numpy())),
                                      ours)
    got = np.asarray(tvm_bridge.build(module, form="qdq", profile="fbgemm")(x.numpy()))
    assert np.abs(got - ref).max() <= FLOAT_RELATIVE * np.abs(ref).max()


def test_pt2e_gelu_tanh_encoder_converts():
    """GELU with approximate="tanh" becomes float_gelu with approximate=1 and agrees like the erf form."""
    gm = pt2e_encoder("x86", gelu="tanh")
    module = qnnpy.from_torch(gm, (inputs(1)[0],))
    assert {tuple(n["ints"]["approximate"]) for n in module.nodes() if n["op"] == "float_gelu"} == {(1,)}
    errors = _float_layer_errors(gm, module, inputs(2, seed=3))
    assert max(errors.values()) <= FLOAT_RELATIVE, errors


@pytest.mark.parametrize("kind", ["x86", "xnnpack"])
def test_pt2e_torch_transformer_encoder_layer(kind):
    """PyTorch's nn.TransformerEncoderLayer: the packed Q / K / V projection taken apart (unflatten, unsqueeze,
    transpose, squeeze, select -> float_slice), aten.scaled_dot_product_attention as one float_attention
    (PyTorch's CPU kernel computes it in blocks: float rounding apart), the GELU MLP. Measured: every quantized
    tensor identical under fbgemm; float tensors within 4.5e-7 of their range."""
    gm = pt2e_torch_encoder_layer(kind)
    module = qnnpy.from_torch(gm, (inputs(1)[0],))
    ops = {n["op"] for n in module.nodes()}
    assert {"float_slice", "float_attention"} <= ops and "float_softmax" not in ops
    xs = inputs(3, seed=3)
    report = qnnpy.compare(gm, module, xs, profiles=("fbgemm",))
    for row in report.layers["fbgemm"]:
        assert row.fraction >= 0.999 and row.max_lsb <= 1, report.table()
    errors = _float_layer_errors(gm, module, xs)
    assert max(errors.values()) <= FLOAT_RELATIVE, errors


def test_attention_with_a_causal_mask_converts_and_agrees():
    """scaled_dot_product_attention with is_causal=True: one float_attention with its causal flag; within float
    rounding of PyTorch's kernel."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from pt2e_models import quantizer

    class Masked(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 16)

        def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
            return nn.functional.scaled_dot_product_attention(self.fc(q), k, k, is_causal=True)

    q, k = torch.randn(1, 2, 8, 16), torch.randn(1, 2, 8, 16)
    prepared = prepare_pt2e(torch.export.export(Masked().eval(), (q, k), strict=True).module(), quantizer("x86"))
    prepared(q, k)
    gm = convert_pt2e(prepared)
    module = qnnpy.from_torch(gm, (q, k))
    assert [n["ints"]["causal"] for n in module.nodes() if n["op"] == "float_attention"] == [[1]]
    with torch.no_grad():
        ref = gm(q, k).numpy()
    out = module.run(q.numpy(), k.numpy(), profile="fbgemm").dequantized
    assert np.abs(out - ref).max() <= FLOAT_RELATIVE * np.abs(ref).max()


def test_pt2e_encoder_with_dynamic_batch_equals_per_sample_runs():
    """The runtime and TVM's float form run a batch of 3 through a module converted at batch 1 (the float
    reshapes of the heads take the symbolic batch: they baked in the example's batch before)."""
    gm = pt2e_encoder("x86")
    module = qnnpy.from_torch(gm, (inputs(1)[0],), dynamic_batch=True)
    batch = torch.cat(inputs(3, seed=9))
    together = module.run(batch.numpy(), profile="fbgemm").dequantized
    for i in range(3):
        np.testing.assert_array_equal(together[i:i + 1], module.run(batch[i:i + 1].numpy(), profile="fbgemm").dequantized)
    got = np.asarray(tvm_bridge.build(module, form="qdq", profile="fbgemm")(batch.numpy()))
    assert np.abs(got - together).max() <= FLOAT_RELATIVE * np.abs(together).max()


@pytest.fixture(scope="module")
def dynamic_case():
    model = dynamic_encoder()
    return model, qnnpy.from_torch(model, (inputs(1)[0],))


def test_dynamic_encoder_converts_to_dynamic_linears_and_float_ops(dynamic_case):
    _, module = dynamic_case
    ops = {n["op"] for n in module.nodes()}
    assert ops == ENCODER_FLOAT_OPS | {"dynamic_linear", "float_add", "float_reshape", "float_constant"}
    assert sum(n["op"] == "dynamic_linear" for n in module.nodes()) == 14  # every nn.Linear


def test_dynamic_encoder_agrees_with_pytorch(dynamic_case):
    """The dynamic linears fed by tensors the runtime computes bit for bit (the input projection and the first
    layer's Q / K / V projections) are bit-exact; the rest are fed by float ops within float rounding, so a
    dynamic linear's input may differ by ulps and, next to a rounding tie, quantize one step apart (at most
    1/255 of its input range times a weight: well under 1e-3 of the output's range). Measured: every
    float tensor within 3e-7 of its range (no such flip on these inputs); asserted: 16 ulps of the range."""
    model, module = dynamic_case
    xs = inputs(3, seed=3)
    report = qnnpy.compare(model, module, xs, profiles=("fbgemm",))
    exact = {"project", "layers.0.q", "layers.0.k", "layers.0.v"}
    rows = {r.source: r for r in report.layers["fbgemm"]}
    assert exact <= rows.keys()
    assert all(rows[s].identical == rows[s].total for s in exact), report.table()
    errors = _float_layer_errors(model, module, xs)
    assert max(errors.values()) <= FLOAT_RELATIVE, errors
    with torch.no_grad():
        ref = model(xs[0]).numpy()
    out = module.run(xs[0].numpy(), profile="fbgemm").dequantized
    assert np.abs(out - ref).max() <= FLOAT_RELATIVE * np.abs(ref).max()


def test_bert_like_dynamic_encoder_from_token_ids_end_to_end():
    """A small BERT: token and position embeddings (float), two encoder layers with dynamic quantized linears, a
    head; int64 inputs. The embeddings and the first layer's Q / K / V projections (fed exact float tensors) are
    bit-exact; the output within float rounding of PyTorch's, in the runtime and in TVM."""
    model = dynamic_encoder(embedding=True)
    example = token_inputs(1)[0]
    module = qnnpy.from_torch(model, example)
    assert module.input_dtypes == ["int64", "int64"]
    ops = {n["op"] for n in module.nodes()}
    assert {"float_embedding", "dynamic_linear"} <= ops and sum(n["op"] == "dynamic_linear" for n in module.nodes()) == 13
    xs = token_inputs(3, seed=4)
    rows = {r.source: r for r in qnnpy.compare(model, module, xs, profiles=("fbgemm",)).layers["fbgemm"]}
    for source in ("tokens", "positions", "layers.0.q", "layers.0.k", "layers.0.v"):
        assert rows[source].identical == rows[source].total > 0, source
    with torch.no_grad():
        ref = model(*xs[0]).numpy()
    out = module.run(*(t.numpy() for t in xs[0]), profile="fbgemm").dequantized
    assert np.abs(out - ref).max() <= FLOAT_RELATIVE * np.abs(ref).max()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = np.asarray(tvm_bridge.build(module, form="qdq", profile="fbgemm")(*(t.numpy() for t in xs[0])))
    assert np.abs(got - ref).max() <= FLOAT_RELATIVE * np.abs(ref).max()


def test_dynamic_encoder_in_tvm(dynamic_case):
    """TVM's float form: the run-time qparams of each dynamic linear, then float32 math in TVM's order."""
    model, module = dynamic_case
    x = inputs(1, seed=5)[0]
    with torch.no_grad():
        ref = model(x).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = np.asarray(tvm_bridge.build(module, form="qdq", profile="fbgemm")(x.numpy()))
    assert np.abs(got - ref).max() <= FLOAT_RELATIVE * np.abs(ref).max()


class _Spectrum(nn.Module):
    """The magnitude of a real FFT: complex values, which qnnpy's float ops do not have."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.fft.rfft(x, dim=-1).abs()


def _with_fft(model: nn.Module) -> nn.Module:
    """The encoder with its first layer's GELU replaced by an FFT, an op qnnpy has no float form of."""
    model.layers[0].gelu = _Spectrum()
    model.layers[0].fc2 = nn.Linear(model.layers[0].fc1.out_features // 2 + 1, model.layers[0].fc2.out_features)
    return model


def test_unrepresentable_float_op_of_a_dynamic_encoder_is_refused_by_module_path():
    model = _with_fft(dynamic_encoder())
    with pytest.raises(UnsupportedOpsError, match=r"layers\.0\.gelu.*fft"):
        qnnpy.from_torch(model, (inputs(1)[0],))


def test_unrepresentable_float_op_of_a_pt2e_encoder_is_refused_by_module_path():
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from pt2e_models import quantizer

    model = _with_fft(encoder())
    prepared = prepare_pt2e(torch.export.export(model, (inputs(1)[0],), strict=True).module(), quantizer("x86"))
    prepared(inputs(1)[0])
    with pytest.raises(UnsupportedOpsError, match=r"layers\.0\.gelu.*fft"):
        qnnpy.from_torch(convert_pt2e(prepared), (inputs(1)[0],))


def test_matmul_with_a_vector_converts():
    """torch.matmul of a matrix and a vector (the vector a parameter: a constant of the module)."""
    class VectorMatmul(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)
            self.v = nn.Parameter(torch.linspace(-1, 1, 8))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.matmul(self.fc(x), self.v)

    model = torch.ao.quantization.quantize_dynamic(VectorMatmul().eval(), {nn.Linear})
    x = torch.randn(3, 8)
    module = qnnpy.from_torch(model, (x,))
    with torch.no_grad():
        ref = model(x).numpy()
    out = module.run(x.numpy()).dequantized
    assert out.shape == ref.shape and np.abs(out - ref).max() <= FLOAT_RELATIVE * np.abs(ref).max()


def test_float_arithmetic_of_a_dynamic_model_is_bit_exact():
    """float_sub, float_mul, float_add, float_div of tensors and of a tensor and a number (a scalar constant): one
    IEEE float32 operation per element each, as PyTorch computes them, after a bit-exact dynamic linear: the
    output is PyTorch's bit for bit."""
    model = dynamic_float_arithmetic()
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(6))
    module = qnnpy.from_torch(model, (x,))
    assert [n["op"] for n in module.nodes()] == [
        "dynamic_linear", "float_sub", "float_mul", "float_constant", "float_add", "float_div", "float_constant",
        "float_sub", "float_constant", "float_mul", "float_constant", "float_div"]
    for scale in (1.0, 30.0):
        np.testing.assert_array_equal(module.run((x * scale).numpy()).dequantized, model(x * scale).numpy())


def test_torchscript_dynamic_models_convert_like_eager(dynamic_case):
    """TorchScript spells the float ops aten::layer_norm, aten::gelu, aten::softmax, aten::matmul, aten::div...:
    a traced encoder gives the eager conversion's ops and outputs; a scripted FloatArithmetic PyTorch's output."""
    model, eager = dynamic_case
    x = inputs(1, seed=7)[0]
    module = qnnpy.from_torch(torch.jit.trace(model, inputs(1)[0]), (inputs(1)[0],))
    assert [n["op"] for n in module.nodes()] == [n["op"] for n in eager.nodes()]
    np.testing.assert_array_equal(module.run(x.numpy()).dequantized, eager.run(x.numpy()).dequantized)
    arithmetic = torch.jit.script(dynamic_float_arithmetic())
    y = torch.randn(4, 16, generator=torch.Generator().manual_seed(8))
    np.testing.assert_array_equal(qnnpy.from_torch(arithmetic, (y,)).run(y.numpy()).dequantized, arithmetic(y).numpy())


def test_saved_and_loaded_encoder_runs_the_same(dynamic_case, tmp_path):
    """The float transformer ops and their params (layer norms' weight and bias) survive save / load."""
    _, module = dynamic_case
    loaded = qnnpy.QDQModule.load(module.save(tmp_path / "encoder"))
    x = inputs(1, seed=10)[0].numpy()
    assert loaded.script() == module.script()
    np.testing.assert_array_equal(loaded.run(x).dequantized, module.run(x).dequantized)

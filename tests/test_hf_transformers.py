"""Hugging Face transformers (tests/hf_models.py: BertModel, GPT2Model, ViTModel built from small configs) through
dynamic quantization and PT2E, converted, run and compared with PyTorch.

Dynamic models: torch.fx cannot trace them, so from_torch traces them with torch.jit.trace (a warning says so);
their dict outputs become named outputs. PT2E: quantized layers fed PyTorch's inputs agree with PyTorch's on at
least 99.9% of their values and within one step (PT2E's float linears sum in another order), float outputs
within 1e-5 of their range. TVM's kernels form equals the runtime bit for bit; its float form is within 1e-5.

torchao 0.18's testing XNNPACKQuantizer makes GPT-2 unrunnable (it turns the number operand of the position-id add
into a float32 tensor, so the position embedding's lookup gets float indices): qnnpy.pt2e_fixups'
integer_scalars_as_tensors, applied before prepare_pt2e, keeps it integer. X86InductorQuantizer quantizes all three here; on a
BERT whose pooler output is dropped it fails with an IndexError, which removing the dead pooler first avoids
(test_x86_quantizer_on_bert_without_its_pooler_output, docs/convert.md).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import qnnpy
from qnnpy import _core
import hf_models
from pt2e_models import quantizer
from qnnpy.pt2e_fixups import dead_code_removed, integer_scalars_as_tensors
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

FLOAT_RELATIVE = 1e-5
OUTPUTS = {"bert": ["last_hidden_state", "pooler_output"], "gpt2": ["last_hidden_state"],
           "vit": ["last_hidden_state", "pooler_output"]}
DYNAMIC_FAST = {"bert"}
PT2E_FAST = {("bert", "xnnpack"), ("gpt2", "x86"), ("gpt2", "xnnpack")}


def _leaves(out: object) -> list[np.ndarray]:
    return [t.detach().numpy() for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]


def _assert_outputs_agree(model: torch.nn.Module, module: qnnpy.QDQModule, xs: list[tuple[torch.Tensor, ...]]) -> None:
    for x in xs:
        with torch.no_grad():
            theirs = _leaves(model(*x))
        ours = module.run(*(t.numpy() for t in x), profile="fbgemm").outputs
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            assert np.abs(o.dequantized - t).max() <= FLOAT_RELATIVE * np.abs(t).max()


def _assert_tvm_forms(module: qnnpy.QDQModule, x: tuple[torch.Tensor, ...]) -> None:
    tvm_bridge = pytest.importorskip("qnnpy.tvm_bridge")
    arrays = [t.numpy() for t in x]
    ours = [o.dequantized for o in module.run(*arrays, profile="fbgemm").outputs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernels = tvm_bridge.build(module, form="kernels", profile="fbgemm")(*arrays)
        qdq = tvm_bridge.build(module, form="qdq", profile="fbgemm")(*arrays)
    for o, k, f in zip(ours, kernels if isinstance(kernels, list) else [kernels], qdq if isinstance(qdq, list) else [qdq]):
        np.testing.assert_array_equal(np.asarray(k), o)
        assert np.abs(np.asarray(f) - o).max() <= FLOAT_RELATIVE * np.abs(o).max()


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n in DYNAMIC_FAST else pytest.mark.slow)
                                  for n in hf_models.MODELS])
def test_dynamic_quantized_model_converts_by_tracing_and_agrees(name):
    model = hf_models.dynamic(name)
    x = hf_models.inputs(name, 1)[0]
    with pytest.warns(UserWarning, match=r"torch.fx could not trace .*torch.jit.trace\(strict=False\)"):
        module = qnnpy.from_torch(model, x)
    assert [o["name"] for o in module.output_info] == OUTPUTS[name]
    dynamic_linears = [n for n in module.nodes() if n["op"] == "dynamic_linear"]
    assert len(dynamic_linears) == sum(isinstance(m, torch.ao.nn.quantized.dynamic.Linear) for m in model.modules())
    _assert_outputs_agree(model, module, hf_models.inputs(name, 2, seed=3))
    _assert_tvm_forms(module, x)


# GPT-2 under the XNNPACK quantizer goes through qnnpy.pt2e_fixups.integer_scalars_as_tensors first (hf_models.pt2e;
# test_xnnpack_quantizer_calibrates_gpt2_after_the_integer_scalar_fixup).
@pytest.mark.parametrize("name, kind", [pytest.param(n, k, marks=() if (n, k) in PT2E_FAST else pytest.mark.slow)
                                        for n in hf_models.MODELS for k in ("x86", "xnnpack")])
def test_pt2e_model_converts_and_agrees(name, kind):
    gm = hf_models.pt2e(name, kind)
    x = hf_models.inputs(name, 1)[0]
    module = qnnpy.from_torch(gm, x)
    assert [o["name"] for o in module.output_info] == OUTPUTS[name]
    xs = hf_models.inputs(name, 2, seed=3)
    report = qnnpy.compare(gm, module, xs, profiles=["fbgemm"], reference_inputs=True)
    quantized = [r for r in report.layers["fbgemm"] if _core.op_info(r.op)["kind"] != "float"]
    assert len(quantized) >= 10
    for layer in quantized:
        assert layer.fraction >= 0.999 and layer.max_lsb <= 1, layer
    _assert_outputs_agree(gm, module, xs)
    _assert_tvm_forms(module, x)


class _LastHiddenState(torch.nn.Module):
    """BERT returning only its last hidden state: the pooler (dense, then tanh) still runs, and nothing reads it."""

    def __init__(self, bert: torch.nn.Module) -> None:
        super().__init__()
        self.bert = bert

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.bert(ids).last_hidden_state


def test_x86_quantizer_on_bert_without_its_pooler_output():
    """torchao 0.18's X86InductorQuantizer fails with IndexError (x86_inductor_quantizer.py:648) when a
    linear -> tanh pattern's output is unused: torch.export keeps the dead pooler, the tanh's source partition has
    no output node. qnnpy.pt2e_fixups.dead_code_removed before prepare_pt2e is the way through (docs/convert.md)."""
    x = hf_models.inputs("bert", 1)[0]
    exported = torch.export.export(_LastHiddenState(hf_models.model("bert")), x, strict=True).module()
    tanh = [n for n in exported.graph.nodes if n.target == torch.ops.aten.tanh.default]
    assert len(tanh) == 1 and not tanh[0].users  # the cause: the pooler's tanh is in the graph, read by nothing
    assert dead_code_removed(exported) >= 2  # the pooler's linear and tanh
    assert not any(n.target == torch.ops.aten.tanh.default for n in exported.graph.nodes)
    prepared = prepare_pt2e(exported, hf_models.quantizer("x86"))
    for calibration in hf_models.inputs("bert", 4, seed=2):
        prepared(*calibration)
    gm = convert_pt2e(prepared)
    module = qnnpy.from_torch(gm, x)
    assert len(module.output_info) == 1, module.output_info
    _assert_outputs_agree(gm, module, hf_models.inputs("bert", 2, seed=3))


def test_xnnpack_quantizer_calibrates_gpt2_after_the_integer_scalar_fixup():
    """The XNNPACK quantizer makes the number operand of GPT-2's position-id add a float32 tensor, and calibration
    stops in aten.embedding (PyTorch's failure, asserted so that this test notices when torchao mends it); with
    integer_scalars_as_tensors the add keeps int64 and the model calibrates (and converts: the test above)."""
    float_model = hf_models.linears_from_conv1d(hf_models.model("gpt2"))
    x = hf_models.inputs("gpt2", 1)[0]
    plain = prepare_pt2e(torch.export.export(float_model, x, strict=True).module(), quantizer("xnnpack"))
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to have one of the following"):
        plain(*x)
    fixed = torch.export.export(float_model, x, strict=True).module()
    assert integer_scalars_as_tensors(fixed) >= 1
    added = [n for n in fixed.graph.nodes if n.op == "get_attr" and n.target.startswith("_integer_operand_")]
    assert added and all(getattr(fixed, n.target).dtype == torch.int64 for n in added)
    prepared = prepare_pt2e(fixed, quantizer("xnnpack"))
    prepared(*x)

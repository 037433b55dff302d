"""Any batch size: from_torch(..., dynamic_batch=True) emits a symbolic batch; the runtime and TVM's float
form, each built once, run batch 1 and 8 with results equal to per-sample runs."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import qnnpy
from dynamic_models import dynamic_cases
from small_models import Head, quantized


@pytest.fixture(scope="module")
def head():
    """Conv, relu, pools, flatten (a reshape to (batch, 32)) and linear, converted at batch 1."""
    model, _ = quantized(Head(False), (3, 17, 17))
    return model, qnnpy.from_torch(model, (torch.randn(1, 3, 17, 17),), dynamic_batch=True)


def _batch() -> torch.Tensor:
    return torch.randn(8, 3, 17, 17, generator=torch.Generator().manual_seed(3))


@pytest.mark.parametrize("profile", ["fbgemm", "int32_bias"])
def test_runtime_runs_any_batch_equal_to_per_sample_runs(head, profile):
    model, module = head
    x = _batch()
    batched = module.run(x.numpy(), profile=profile).quantized
    per_sample = np.concatenate([module.run(x[i:i + 1].numpy(), profile=profile).quantized for i in range(8)])
    np.testing.assert_array_equal(batched, per_sample)
    if profile == "fbgemm":
        np.testing.assert_array_equal(module.run(x.numpy(), profile=profile).dequantized, model(x).numpy())


def test_relax_module_has_a_symbolic_batch(head, tmp_path):
    _, module = head
    script = module.script()
    assert 'x: R.Tensor(("batch", 3, 17, 17), "float32")' in script and "batch = T.int64()" in script
    assert "R.shape([batch, 32])" in script
    reloaded = qnnpy.QDQModule.load(module.save(tmp_path / "m"))
    assert reloaded.dynamic_batch and reloaded.script() == script


def test_tvm_float_form_runs_any_batch_equal_to_per_sample_runs(head):
    pytest.importorskip("tvm")
    from qnnpy import tvm_bridge

    _, module = head
    run = tvm_bridge.build(module)  # a dynamic batch picks the "qdq" form
    assert run.form == "qdq"
    x = _batch()
    per_sample = np.concatenate([run(x[i:i + 1].numpy()) for i in range(8)])
    np.testing.assert_array_equal(run(x.numpy()), per_sample)


@pytest.mark.parametrize("form", ["integer", "kernels"])
def test_static_tvm_forms_refuse_a_dynamic_batch(head, form):
    pytest.importorskip("tvm")
    from qnnpy import tvm_bridge

    with pytest.raises(ValueError, match=f"the '{form}' form needs static shapes .* dynamic batch"):
        tvm_bridge.build(head[1], form=form)


def test_static_module_refuses_another_batch_with_the_way_out():
    model, _ = quantized(Head(False), (3, 17, 17))
    module = qnnpy.from_torch(model, (torch.randn(1, 3, 17, 17),))
    assert not module.dynamic_batch
    with pytest.raises(ValueError, match=r"input batch 8: .*built for batch 1.*dynamic_batch=True"):
        module.run(_batch().numpy())


class FlattenAll(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flatten(x, 0)


def test_model_that_mixes_the_batch_is_refused_naming_the_op():
    model, x = quantized(FlattenAll(), (2, 3, 3))
    with pytest.raises(qnnpy.ConversionError, match=r"cannot take a dynamic batch: .*reshape \(body.*\)"):
        qnnpy.from_torch(model, (x,), dynamic_batch=True)


def test_dynamic_linear_takes_its_qparams_over_the_whole_batch():
    """With dynamic quantization a batch is not a set of independent samples: PyTorch picks the input
    qparams over the batch, and so does the runtime at every batch size."""
    model, shape = dynamic_cases()["dynamic_per_channel"]
    module = qnnpy.from_torch(model, (torch.randn(1, shape[1]),), dynamic_batch=True)
    for batch in (1, 8):
        x = torch.randn(batch, shape[1]) * torch.linspace(0.1, 10, batch)[:, None]
        np.testing.assert_array_equal(module.run(x.numpy()).dequantized, model(x).numpy())

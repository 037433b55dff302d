"""What tvm_bridge.build gives a user: the kernels form by default, the default profile, a warning when
the kernel library is missing, inputs checked with qnnpy's messages, and compare_tvm's refusal of a module
converted from another model."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import qnnpy
from qnnpy import tvm_bridge
from qnnpy.profiles import default_profile, profile_for_engine
from qnnpy.tvm_bridge import kernel_form, runner
from small_models import Head, quantized

SHAPE = (2, 3, 12, 12)


@pytest.fixture(scope="module")
def head():
    model, x = quantized(Head(linear_relu=False), SHAPE[1:])
    return model, qnnpy.from_torch(model, (x,)), x


def test_the_installed_package_has_the_kernels_form():
    """scripts/setup.sh installs as the README says (pip install '.[tvm]', build isolation)."""
    assert tvm_bridge.default_form() == "kernels"


@pytest.mark.parametrize("engine", ["fbgemm", "x86", "onednn", "qnnpack"])
def test_build_takes_the_profile_of_pytorchs_engine(head, engine):
    """fbgemm and qnnpack name their profile; x86 and onednn resolve by the CPU (profiles.profile_for_engine)."""
    _, module, x = head
    profile = profile_for_engine(engine)
    assert profile == {"fbgemm": "fbgemm", "qnnpack": "qnnpack"}.get(engine, profile)
    torch.backends.quantized.engine = engine
    built = tvm_bridge.build(module)
    assert (built.form, built.profile) == ("kernels", profile)
    np.testing.assert_array_equal(built(x.numpy()), module.run(x.numpy(), profile=profile).dequantized)


def test_without_the_kernel_library_build_warns_once_and_takes_the_integer_form(head, monkeypatch):
    _, module, x = head

    def missing() -> str:
        raise FileNotFoundError("libqnnpy_tvm_kernels.so not found")

    monkeypatch.setattr(kernel_form, "kernel_library_path", missing)
    runner._warn_no_kernel_library.cache_clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = tvm_bridge.build(module)
        tvm_bridge.build(module, form="integer")
        tvm_bridge.build(module)
    messages = [str(w.message) for w in caught if "kernel library" in str(w.message)]
    assert len(messages) == 1
    assert "slower than the 'kernels' form" in messages[0] and "pip install '.[tvm]'" in messages[0]
    assert first.form == "integer"
    np.testing.assert_array_equal(first(x.numpy()), module.run(x.numpy(), profile=default_profile()).dequantized)
    runner._warn_no_kernel_library.cache_clear()


@pytest.mark.parametrize("form", ["kernels", "qdq"])
def test_runners_check_their_inputs(head, form):
    _, module, x = head
    built = tvm_bridge.build(module, form=form)
    with pytest.raises(ValueError, match=r"input 'x' must have shape \(2, 3, 12, 12\), got \(2, 3, 12\)"):
        built(x.numpy()[..., 0])
    with pytest.raises(ValueError, match=r"the module takes 1 input\(s\) \('x'\), got 2"):
        built(x.numpy(), x.numpy())
    with pytest.raises(ValueError, match="input 'x' takes a real numeric array"):
        built(np.array(["a"]))


def test_a_dynamic_batch_runner_takes_any_batch_but_checks_the_rest(head):
    model, _, x = head
    module = qnnpy.from_torch(model, (x,), dynamic_batch=True)
    built = tvm_bridge.build(module)
    assert built(np.concatenate([x.numpy()] * 3)).shape[0] == 6
    with pytest.raises(ValueError, match=r"must have shape \(any batch, 3, 12, 12\), got \(2, 3, 12, 11\)"):
        built(x.numpy()[..., :11])


def test_compare_tvm_refuses_a_module_converted_from_another_model(head):
    model, _, x = head
    other, _ = quantized(Head(linear_relu=True), SHAPE[1:], seed=7)
    with pytest.raises(ValueError, match="is not the conversion of this model"):
        qnnpy.compare_tvm(model, qnnpy.from_torch(other, (x,)), [x])

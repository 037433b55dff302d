"""PyTorch's Core ATen opset (tests/core_aten_cases.py): every op is either converted, with samples run here
against PyTorch, or named with the reason it is not. Float results are compared relative to the largest
magnitude of PyTorch's tensor (float32 arithmetic in another order, or another exp / erf, than PyTorch's
kernels); integer and bool results exactly. TVM's kernels form runs the runtime's own code (equal bit for bit);
its float form computes with TVM's own kernels (within float rounding)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import qnnpy
from qnnpy.convert.float_aten import FLOAT_ATEN, FLOAT_TUPLE_OUTPUTS
from core_aten_cases import NOT_CONVERTED, SAMPLES, all_samples, core_ops, op_by_name, sample_graph

# Float32 results within 16 ulps of the tensor's largest magnitude (measured: the worst sample is about 1 ulp).
FLOAT_RELATIVE = 16 * float(np.finfo(np.float32).eps)
# TVM's float form takes its own exp, erf, tanh... (measured: within 1e-6 of the range).
TVM_RELATIVE = 1e-5


def _agrees(ours: np.ndarray, theirs: np.ndarray, relative: float) -> bool:
    if ours.shape != theirs.shape or ours.dtype != theirs.dtype:
        return False
    if theirs.dtype != np.float32:
        return np.array_equal(ours, theirs)
    if not np.array_equal(np.isnan(ours), np.isnan(theirs)):
        return False
    finite = ~np.isnan(theirs)
    scale = float(np.abs(theirs[finite]).max(initial=0.0))
    return bool(np.all(np.abs(ours[finite] - theirs[finite]) <= relative * scale))


def test_every_core_op_is_converted_or_explained():
    names = {str(op).removeprefix("aten.") for op in core_ops()}
    sampled = {str(op).removeprefix("aten.") for op in SAMPLES}
    assert not sampled & set(NOT_CONVERTED), "an op both converted and explained"
    assert names - sampled - set(NOT_CONVERTED) == set(), "core ops neither converted nor explained"
    for name in NOT_CONVERTED:
        op = op_by_name(name)
        assert op not in FLOAT_ATEN and op not in FLOAT_TUPLE_OUTPUTS, f"{name} converts: drop it from NOT_CONVERTED"


def test_every_float_converter_has_a_sample():
    converted = set(FLOAT_ATEN) | set(FLOAT_TUPLE_OUTPUTS)
    assert sorted(map(str, converted - set(SAMPLES))) == []


def test_ops_of_undefined_values_fold_to_zeros():
    """empty / empty_strided leave PyTorch's memory uninitialized (its bytes may spell NaN, which a module's float
    constant may not hold): their folded constants are zeros."""
    module = qnnpy.from_torch(*sample_graph([s for s in all_samples() if s.values_undefined]))
    folded = {name: value for name, value in module.params.items() if "empty" in name}
    assert len(folded) == 2 and not any(value.any() for value in folded.values())


@pytest.mark.parametrize("sample", all_samples(), ids=lambda s: s.name)
def test_sample_converts_and_agrees_with_pytorch(sample):
    gm, examples = sample_graph([sample])
    with torch.no_grad():
        expected = gm(*examples)[0].numpy()
    module = qnnpy.from_torch(gm, examples)
    ours = module.run(*(x.numpy() for x in examples)).outputs[0].dequantized
    if sample.values_undefined:
        assert (ours.shape, ours.dtype) == (expected.shape, expected.dtype)
    else:
        assert _agrees(ours, expected, FLOAT_RELATIVE), (ours, expected)


@pytest.fixture(scope="module")
def all_in_one():
    gm, examples = sample_graph(all_samples())
    module = qnnpy.from_torch(gm, examples)
    arrays = [x.numpy() for x in examples]
    return module, arrays, [out.dequantized for out in module.run(*arrays).outputs]


def test_kernels_form_equals_the_runtime_on_every_sample(all_in_one):
    tvm_bridge = pytest.importorskip("qnnpy.tvm_bridge")
    module, arrays, outputs = all_in_one
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = tvm_bridge.build(module, form="kernels")(*arrays)
    for sample, ours, theirs in zip(all_samples(), got, outputs):
        if not sample.values_undefined:
            np.testing.assert_array_equal(np.asarray(ours), theirs, err_msg=sample.name)


def test_float_form_agrees_with_the_runtime_on_every_sample(all_in_one):
    tvm_bridge = pytest.importorskip("qnnpy.tvm_bridge")
    module, arrays, outputs = all_in_one
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = tvm_bridge.build(module, form="qdq")(*arrays)
    bad = [s.name for s, ours, theirs in zip(all_samples(), got, outputs)
           if not s.values_undefined and not _agrees(np.asarray(ours), theirs, TVM_RELATIVE)]
    assert not bad

"""The integer lowering of canonical QDQ Relax (qnnpy.tvm_bridge.lower_integer): built
for llvm, every lowered tensor equals qnnpy's integer runtime under the same profile
(tolerance 0), for the torchvision zoo and the single-op models; a module in the form
TVM's TFLite importer produces is lowered too; bound params stay int8/int32."""
from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
import tvm
from tvm import relax

import qnnpy
from qnnpy import tvm_bridge, zoo
from qnnpy.runtime import PROFILES
from qnnpy.tvm_bridge import expose_values, lower_integer, lowering_report

MODELS = sorted(zoo.TORCHVISION_MODELS)
SIZE = {"shufflenet_v2_x1_0": 96, "inception_v3": 96}  # as tests/test_zoo_models.py


def run_exposed(module: qnnpy.QDQModule, x: np.ndarray, profile: str, target: str = "llvm"):
    """(names, TVM values, runtime values) of every lowered tensor the runtime captures."""
    lowered = lower_integer(module.to_tvm(), profile, params=module.params, hints=module)
    report = lowering_report(lowered)
    assert report.complete, report.summary()
    ref = module.run(x, profile=profile, capture=True)
    names = [name for name, _ in report.lowered if name in ref.intermediates]
    executable = tvm.compile(expose_values(lowered, names), target=tvm_bridge.to_target(target))
    vm = relax.VirtualMachine(executable, tvm.cpu())
    params = [tvm.runtime.tensor(np.ascontiguousarray(a)) for a in module.params.values()]
    outs = vm["main"](tvm.runtime.tensor(np.ascontiguousarray(x, dtype=np.float32)), *params)
    return names, [o.numpy() for o in outs], [ref.intermediates[n] for n in names]


def assert_identical(module: qnnpy.QDQModule, x: np.ndarray, profile: str, target: str = "llvm") -> None:
    names, got, want = run_exposed(module, x, profile, target)
    assert names, "nothing lowered"
    for name, g, w in zip(names, got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, f"{name}: {g.dtype}{g.shape} vs {w.dtype}{w.shape}"
        diff = np.abs(g.astype(np.int64) - w.astype(np.int64))
        assert diff.max() == 0, f"{name} ({profile}): {(diff != 0).sum()} of {diff.size} differ, max {diff.max()} LSB"


@functools.lru_cache(maxsize=None)
def _zoo(name: str) -> tuple[qnnpy.QDQModule, np.ndarray]:
    size = SIZE.get(name, 64)
    model = zoo.quantized_torchvision(name, image_size=size, calibration_batches=2, batch_size=4)
    x = zoo.calibration_data(1, 2, (3, size, size), seed=7)[0]
    return qnnpy.from_torch(model, (x,)), x.numpy()


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", MODELS)
def test_zoo_integer_form_equals_runtime(name, profile):
    module, x = _zoo(name)
    assert_identical(module, x, profile)


@pytest.mark.parametrize("profile", PROFILES)
def test_build_integer_form_output_equals_runtime(profile):
    module, x = _zoo("resnet18")
    runner = tvm_bridge.build(module, form="integer", profile=profile)
    np.testing.assert_array_equal(runner(x), module.run(x, profile=profile).dequantized)


def _op_case(name: str) -> tuple[qnnpy.QDQModule, np.ndarray]:
    from small_models import conv_cases, op_cases, quantized

    if name in conv_cases():
        body, shape, per_channel, fuse = conv_cases()[name]
        model, x = quantized(body, shape, per_channel, fuse)
    else:
        body, shape = op_cases()[name]
        model, x = quantized(body, shape)
    return qnnpy.from_torch(model, (x,)), x.numpy()


def _op_case_names() -> list[str]:
    from small_models import conv_cases, op_cases

    return sorted(op_cases()) + sorted(conv_cases())


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", _op_case_names())
def test_op_cases_integer_form_equals_runtime(name, profile):
    module, x = _op_case(name)
    assert_identical(module, x, profile)

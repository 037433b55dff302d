"""The amx kernel set: its selection where the CPU and OS allow it, its refusal elsewhere, and its GEMM driver
(tiling, packing, edges, fused requantization) on whole models through the software model of the tiles
(amx_model), which runs on any x86-64 CPU, against the scalar kernels at every intermediate, bit for bit.

The same driver on the AMX instructions is checked by these tests only on a CPU with AMX-INT8 (elsewhere they skip,
with the reason); the C++ driver's twin checks and the disassembly check of the instructions are in
test_kernel_driver.py.
"""
from __future__ import annotations

import platform

import numpy as np
import pytest

import qnnpy
from qnnpy import _core
from profile_cases import RULE_PROFILES
from small_models import small_zoo_modules

X86 = platform.machine() in ("x86_64", "AMD64")
pytestmark = pytest.mark.skipif(not X86, reason="the amx sets are x86-64 kernels")


def test_the_amx_set_is_offered_and_chosen_exactly_where_it_runs(monkeypatch):
    monkeypatch.delenv("QNNPY_ISA", raising=False)
    runs = _core.cpu_has_amx()
    assert ("amx" in _core.runnable_simd_isas()) == runs
    assert "amx_model" not in _core.runnable_simd_isas()  # a test set, never offered or chosen
    assert (_core.default_isa() == "amx") == runs
    assert (_core.amx_unavailable_reason() == "") == runs


def test_qnnpy_isa_amx_is_refused_with_the_reason_where_it_cannot_run(monkeypatch):
    if _core.cpu_has_amx():
        pytest.skip("this CPU runs the amx set")
    reason = _core.amx_unavailable_reason()
    assert reason  # e.g. "this CPU has no AMX-INT8 (cpuid: amx_tile, amx_int8)"
    monkeypatch.setenv("QNNPY_ISA", "amx")
    with pytest.raises(ValueError, match="^QNNPY_ISA=amx: isa 'amx' requested but ") as e:
        _core.default_isa()
    assert reason in str(e.value)
    g = _core.Graph()
    g.mark_output(g.add_node("quantize", [g.add_input("x", [4])], "q", "q", "uint8", 0.1, 0))
    with pytest.raises(ValueError, match="isa 'amx' requested but"):
        _core.Executor(g, "int32_bias", "amx", 1)


def test_the_tdpbusd_peak_is_measured_only_where_the_set_runs():
    assert (_core.peak_amx_gmacs(0.05) > 0) == _core.cpu_has_amx()


# Whole models at small inputs: every conv and linear through the amx GEMM driver (ResNet-18's 3x3 convs read in
# place along output rows, its 7x7 conv1 as window columns, MobileNetV2's 1x1 convs of k = 16 to 960: k tails).
MODEL_INPUTS = {"resnet18": 64, "mobilenet_v2": 64}


@pytest.fixture(scope="module")
def small_models() -> dict[str, tuple[qnnpy.QDQModule, np.ndarray]]:
    return small_zoo_modules(MODEL_INPUTS, seed=7)


@pytest.mark.parametrize("isa", ["amx_model", pytest.param("amx", marks=pytest.mark.skipif(
    not _core.cpu_has_amx(), reason=f"the amx set cannot run here: {_core.amx_unavailable_reason()}"))])
@pytest.mark.parametrize("profile", RULE_PROFILES)
def test_whole_models_on_the_amx_gemm_equal_the_scalar_kernels(small_models, profile, isa):
    for name, (module, x) in small_models.items():
        want = module.run(x, profile=profile, isa="scalar", capture=True)
        got = module.run(x, profile=profile, isa=isa, capture=True, threads=2)
        assert want.intermediates.keys() == got.intermediates.keys()
        for value, a in want.intermediates.items():
            np.testing.assert_array_equal(a, got.intermediates[value], err_msg=f"{name} {value} ({profile}, {isa})")
        np.testing.assert_array_equal(want.quantized, got.quantized, err_msg=name)


def test_the_amx_sets_fuse_the_requantization_into_every_u8s8_gemm(small_models):
    module, x = small_models["resnet18"]
    executor = _core.Executor(module.graph, "fbgemm", "amx_model", 1)
    executor.run([x], False)
    kernels = [k for k in executor.node_kernels() if k]
    assert kernels.count("gemm_u8s8_columns_requantized") == 1  # conv1: 7x7 over 3 channels
    assert kernels.count("gemm_u8s8_runs_requantized") == 19  # the other convs read in place
    assert kernels.count("gemm_u8s8_requantized") == 1  # fc

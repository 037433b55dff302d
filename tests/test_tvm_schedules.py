"""The integer form compiled with qnnpy's schedule rules (qnnpy.tvm_bridge.schedules): each int8 conv
path of the rewrite (pointwise columns, the implicit GEMM over the packed input's stride phases,
gathered columns, the depthwise conv over column phases) and the linear layers' GEMM, at several shapes, tensorized with
VNNI where this CPU has AVX-512 VNNI and vectorized over int32 lanes on an AVX2 target, equal qnnpy's
runtime bit for bit (tolerance 0); so do whole models."""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import qnnpy
from qnnpy import _core, tvm_bridge
from qnnpy.tvm_bridge.schedules import Int8LayersToGemm, scheduled_pipeline, dot_intrinsic
from small_models import ConvBlock, quantized

VNNI = pytest.param("host", marks=pytest.mark.skipif(not _core.cpu_has_avx512_vnni(),
                                                       reason="this CPU has no AVX-512 VNNI (the tensorized GEMM)"))
AVX2 = pytest.param("llvm -mcpu=haswell", marks=pytest.mark.skipif(not _core.cpu_has_avx2(),
                                                                    reason="this CPU has no AVX2"))
# Alder Lake: AVX2 with AVX-VNNI, no AVX-512 (vpdpbusd on ymm, VEX-encoded)
AVXVNNI = pytest.param("llvm -mcpu=alderlake", marks=pytest.mark.skipif(not _core.cpu_has_avx_vnni(),
                                                                         reason="this CPU has no AVX-VNNI"))

# name -> (in channels, out channels, kernel, stride, padding, dilation, groups, input (H, W))
CONVS = {
    "pointwise": (8, 16, 1, 1, 0, 1, 1, (9, 9)),
    "pointwise_odd_channels": (5, 7, 1, 1, 0, 1, 1, (6, 11)),
    "implicit_3x3": (16, 32, 3, 1, 1, 1, 1, (14, 14)),
    "implicit_wide_rows": (6, 12, 3, 1, 1, 1, 1, (5, 28)),
    "implicit_dilated": (4, 8, 3, 1, 2, 2, 1, (10, 32)),
    "implicit_asymmetric": (3, 4, (1, 7), 1, (0, 3), 1, 1, (8, 16)),
    "implicit_stem_stride2": (3, 16, 7, 2, 3, 1, 1, (32, 32)),
    "implicit_pointwise_stride2": (8, 16, 1, 2, 0, 1, 1, (28, 56)),
    "columns_stride2": (4, 6, 5, 2, 2, 1, 1, (15, 15)),
    "columns_narrow": (8, 8, 3, 1, 1, 1, 1, (7, 7)),
    "depthwise": (8, 8, 3, 1, 1, 1, 8, (14, 14)),
    "depthwise_stride2": (16, 16, 3, 2, 1, 1, 16, (15, 30)),
    "depthwise_dilated_5x5": (4, 4, 5, 1, 4, 2, 4, (9, 20)),
    "grouped": (6, 9, 3, 1, 1, 1, 3, (10, 10)),
    "grouped_pointwise_stride2": (16, 8, 1, 2, 0, 1, 4, (12, 20)),
}


def _conv_module(name: str) -> tuple[qnnpy.QDQModule, np.ndarray]:
    cin, cout, kernel, stride, padding, dilation, groups, hw = CONVS[name]
    body = ConvBlock(cin, cout, True, kernel_size=kernel, stride=stride, padding=padding, dilation=dilation,
                     groups=groups)
    model, x = quantized(body, (cin, *hw), True, [["body.conv", "body.relu"]])
    return qnnpy.from_torch(model, (x,)), x.numpy()


def _rewritten_to(module: qnnpy.QDQModule) -> list[str]:
    """The functions Int8LayersToGemm made of the module's layers: "int8_gemm", "depthwise", "int8_linear" (sorted)."""
    rewritten = Int8LayersToGemm()(tvm_bridge.relax_module(module, "integer", "fbgemm", bind_params=True))
    return sorted(gv.name_hint for gv, _ in rewritten.functions_items()
                  if gv.name_hint.rstrip("0123456789") in ("int8_gemm", "depthwise", "int8_linear"))


@pytest.mark.parametrize("target", [VNNI, AVXVNNI, AVX2])
@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv_paths_equal_the_runtime(name, target):
    module, x = _conv_module(name)
    runner = tvm_bridge.build(module, form="integer", profile="fbgemm", target=target)
    np.testing.assert_array_equal(runner(x), module.run(x, profile="fbgemm").dequantized)
    rewritten = _rewritten_to(module)
    if "grouped" in name:  # one GEMM per group (functions TVM finds equal are shared)
        assert rewritten and all(f.startswith("int8_gemm") for f in rewritten)
    else:
        assert rewritten == (["depthwise"] if "depthwise" in name else ["int8_gemm"])


def _linear_module(name: str) -> tuple[qnnpy.QDQModule, np.ndarray]:
    """A wide linear layer on two rows, or an op case of tests/test_tvm_lowering.py with linears."""
    if name == "wide_linear":
        torch.manual_seed(0)
        model, x = quantized(torch.nn.Linear(150, 70), (150,))
        return qnnpy.from_torch(model, (x,)), x.numpy()
    from test_tvm_lowering import _op_case

    return _op_case(name)


@pytest.mark.parametrize("target", [VNNI, AVXVNNI, AVX2])
@pytest.mark.parametrize("name, linears", [("wide_linear", 1), ("pools_linear", 1), ("linear_on_rank4", 2)])
def test_linear_layers_equal_the_runtime(name, linears, target):
    module, x = _linear_module(name)
    runner = tvm_bridge.build(module, form="integer", profile="fbgemm", target=target)
    np.testing.assert_array_equal(runner(x), module.run(x, profile="fbgemm").dequantized)
    assert sum(f.startswith("int8_linear") for f in _rewritten_to(module)) == linears


@pytest.mark.parametrize("target", [VNNI, AVXVNNI, AVX2])
def test_a_transposed_conv_is_the_gemm_of_its_spread_input(target):
    """The op case's stride-2 transposed conv with output padding becomes a GEMM over its input spread by the
    stride (its grouped, dilated one stays TVM's conv2d_transpose); equal to the runtime."""
    from test_tvm_lowering import _op_case

    module, x = _op_case("conv_transpose2d")
    rewritten = Int8LayersToGemm()(tvm_bridge.relax_module(module, "integer", "fbgemm", bind_params=True))
    names = [gv.name_hint for gv, _ in rewritten.functions_items()]
    assert "spread_input" in names and sum(n.startswith("int8_gemm") for n in names) == 2  # the first conv's too
    runner = tvm_bridge.build(module, form="integer", profile="fbgemm", target=target)
    np.testing.assert_array_equal(runner(x), module.run(x, profile="fbgemm").dequantized)


@pytest.mark.parametrize("target", [VNNI, AVXVNNI, AVX2])
def test_a_conv3d_is_the_gemm_of_its_depth_taps(target):
    """The op case's conv3d (strides, padding, dilation) and grouped conv3d (depth padding) become GEMMs over the
    depth taps of each output frame, as the runtime computes them; equal to the runtime."""
    from test_tvm_lowering import _op_case

    module, x = _op_case("conv3d")
    rewritten = Int8LayersToGemm()(tvm_bridge.relax_module(module, "integer", "fbgemm", bind_params=True))
    names = [gv.name_hint for gv, _ in rewritten.functions_items()]
    assert sum(n.startswith("depth_taps") for n in names) == 2 and any(n.startswith("int8_gemm") for n in names)
    assert "R.nn.conv3d(" not in rewritten.script()
    runner = tvm_bridge.build(module, form="integer", profile="fbgemm", target=target)
    np.testing.assert_array_equal(runner(x), module.run(x, profile="fbgemm").dequantized)


@pytest.mark.parametrize("profile", ["int32_bias", "fixed_point", "x86", "onednn_amx"])
def test_every_requantization_follows_the_gemm(profile):
    module, x = _conv_module("implicit_3x3")
    runner = tvm_bridge.build(module, form="integer", profile=profile)
    np.testing.assert_array_equal(runner(x), module.run(x, profile=profile).dequantized)


@pytest.mark.skipif(not _core.cpu_has_avx2(), reason="this CPU has no AVX2 (no FMA to look for)")
def test_no_multiply_is_fused_with_the_add_that_reads_it():
    """oneDNN's requantization (multiplies, each read by an add) and a torchao W8A8 linear's epilogue (read by the
    bias add): TVM's LLVM backend would make FMAs of them (one rounding where the runtime has two); compiled for
    this CPU, the code holds none, and the results equal the runtime's."""
    from torchao_models import quantized_mlp

    conv, x = _conv_module("implicit_3x3")
    linear = qnnpy.from_torch(quantized_mlp("w8a8_dynamic"), (torch.randn(6, 64),))
    for module, x, profile in ((conv, x, "onednn"), (linear, np.random.default_rng(0).standard_normal((6, 64), np.float32), None)):
        runner = tvm_bridge.build(module, form="integer", profile=profile)
        code = "".join(m.inspect_source("asm") for m in runner.executable.mod.imports if m.kind == "llvm")
        assert "vpmovzx" in code or "vpdpbusd" in code or "vpmaddwd" in code  # the asm of the integer code is here
        fused = [line.strip() for line in code.splitlines() if line.strip().startswith(("vfmadd", "vfmsub", "vfnm"))]
        assert not fused, fused[:4]
        np.testing.assert_array_equal(runner(x), module.run(x, profile=profile).dequantized)


@pytest.mark.skipif(not _core.cpu_has_avx512_vnni(), reason="this CPU has no AVX-512 VNNI")
def test_the_gemm_is_tensorized_with_vpdpbusd_on_a_vnni_target():
    target = tvm_bridge.to_target("llvm -mcpu=znver4")
    assert dot_intrinsic(target) is not None
    assert dot_intrinsic(tvm_bridge.to_target("llvm -mcpu=haswell")) is None
    module, _ = _conv_module("implicit_3x3")
    lowered = scheduled_pipeline(target)(tvm_bridge.relax_module(module, "integer", "fbgemm", bind_params=True))
    gemms = [f for gv, f in lowered.functions_items() if gv.name_hint.startswith("int8_gemm")]
    assert len(gemms) == 1 and "llvm.x86.avx512.vpdpbusd.512" in gemms[0].script()


def test_an_avx_vnni_target_tensorizes_with_two_ymm_vpdpbusd():
    """AVX-VNNI without AVX-512 (Alder Lake): the 16-lane steps as two 256-bit vpdpbusd, in the convs' GEMM and the
    linears'; compiled here without zmm registers (no AVX-512 instruction an AVX-VNNI CPU would stop at)."""
    target = tvm_bridge.to_target("llvm -mcpu=alderlake")
    assert dot_intrinsic(target) is not None and dot_intrinsic(target) != dot_intrinsic(tvm_bridge.to_target("llvm -mcpu=znver4"))
    for module, x in (_conv_module("implicit_3x3"), _linear_module("wide_linear")):
        lowered = scheduled_pipeline(target)(tvm_bridge.relax_module(module, "integer", "fbgemm", bind_params=True))
        gemms = [f.script() for gv, f in lowered.functions_items() if gv.name_hint.startswith(("int8_gemm", "int8_linear"))]
        assert len(gemms) == 1 and gemms[0].count("llvm.x86.avx512.vpdpbusd.256") == 2
        runner = tvm_bridge.build(module, form="integer", profile="fbgemm", target=target)
        code = "".join(m.inspect_source("asm") for m in runner.executable.mod.imports if m.kind == "llvm")
        assert "vpdpbusd" in code and "zmm" not in code


@pytest.mark.skipif(not _core.cpu_has_avx2(), reason="this CPU has no AVX2")
@pytest.mark.parametrize("layer, function", [("conv", "int8_gemm"), ("linear", "int8_linear")])
def test_an_avx2_target_takes_the_exact_pair_form_with_vpmaddwd(layer, function):
    """Without VNNI: pairs of u8 x s8 products summed by vpmaddwd on int16 (no vpmaddubsw saturation), the pairs
    added after the GEMM: 4 pixels x 2 sums per step for a conv, 16 channels x 2 sums for a linear."""
    target = tvm_bridge.to_target("llvm -mcpu=znver3")
    module, x = _conv_module("implicit_3x3") if layer == "conv" else _linear_module("wide_linear")
    lowered = scheduled_pipeline(target)(tvm_bridge.relax_module(module, "integer", "fbgemm", bind_params=True))
    gemms = [f for gv, f in lowered.functions_items() if gv.name_hint.startswith(function)]
    assert len(gemms) == 1 and "llvm.x86.avx2.pmadd.wd" in gemms[0].script()
    runner = tvm_bridge.build(module, form="integer", profile="fbgemm", target=target)
    np.testing.assert_array_equal(runner(x), module.run(x, profile="fbgemm").dequantized)


def test_without_rules_the_convs_stay_tvm_conv2d():
    module, x = _conv_module("implicit_3x3")
    runner = tvm_bridge.build(module, form="integer", profile="fbgemm", rules=False)
    np.testing.assert_array_equal(runner(x), module.run(x, profile="fbgemm").dequantized)
    assert "int8_gemm" not in runner.relax_module.script()


@pytest.mark.parametrize("target", ["host", AVX2])
@pytest.mark.parametrize("name, shape", [("resnet18", (1, 3, 32, 32)), ("linear_on_rank4", (1, 3, 12, 10))])
def test_int8_activations_of_the_xnnpack_quantizer(name, shape, target):
    """Signed activations: the columns and rows hold x + 128 and the zero point moves with them (in the pair form
    on the AVX2 target too)."""
    from pt2e_models import inputs, pt2e

    gm = pt2e(name, "xnnpack", shape=shape)
    x = inputs(1, seed=3, shape=shape)[0]
    module = qnnpy.from_torch(gm, (x,))
    runner = tvm_bridge.build(module, form="integer", profile="fbgemm", target=target)
    ours = module.run(x.numpy(), profile="fbgemm").dequantized
    np.testing.assert_array_equal(runner(x.numpy()), ours)


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_whole_models_equal_the_runtime(name):
    from test_zoo_models import _eager as zoo_eager_model

    _, x, module = zoo_eager_model(name)
    runner = tvm_bridge.build(module, form="integer", profile="fbgemm")
    np.testing.assert_array_equal(runner(x.numpy()), module.run(x.numpy(), profile="fbgemm").dequantized)


def test_the_qdq_form_runs_with_the_rules():
    module, x = _conv_module("implicit_3x3")
    got = tvm_bridge.build(module, form="qdq")(x)
    plain = tvm_bridge.build(module, form="qdq", rules=False)(x)
    scale, _ = module.output_qparams()[0]
    assert got.shape == plain.shape and np.abs(got - plain).max() <= scale + 1e-6


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="this process may use one CPU only")
def test_set_num_threads_sizes_tvms_pool():
    import tvm

    count = tvm.get_global_func("runtime.NumThreads")
    try:
        tvm_bridge.set_num_threads(2)
        assert count() == 2
    finally:
        tvm_bridge.set_num_threads(1)
    assert count() == 1

"""The integer lowering of canonical QDQ Relax (qnnpy.tvm_bridge.lower_integer): built
for llvm, every lowered tensor equals qnnpy's integer runtime under the same profile
(tolerance 0), for the torchvision zoo and the single-op models; a module in the form
TVM's TFLite importer produces is lowered too; bound params stay int8/int32."""
from __future__ import annotations


import numpy as np
import pytest
import torch
import tvm
from tvm import relax

import qnnpy
from qnnpy import tvm_bridge, zoo
from qnnpy.profiles import ONEDNN_PROFILES, PROFILES, SHOWN_PROFILES
from profile_cases import ONEDNN_DEFAULT_PROFILES
from qnnpy.tvm_bridge import expose_values, lower_integer, lowering_report
from test_zoo_models import _eager as zoo_eager_model

MODELS = sorted(zoo.TORCHVISION_MODELS)


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


# qnnpack differs from int32_bias only in avg_pool2d, mean, the clamp's layout and max_pool2d (src/runtime/profile.h).
QNNPACK_KERNEL_CASES = {"avg_pool_upsample", "channel_shuffle_mean", "reshape_then_avg_pool", "relu6", "hardtanh",
                        "dilated_max_pool"}


def _zoo_cases() -> list:
    """Every zoo model under every profile. Each case compiles a whole model with TVM (30-150 s on
    2 cores), so the default run takes ResNet-18 and MobileNetV2 (depthwise convs) under fbgemm, the
    profile that equals PyTorch's engine; every op under every profile is lowered and compared in the
    op cases below. The rest are marked slow to keep the suite's time (`pytest -m slow
    tests/test_tvm_lowering.py`, results in the README)."""
    default = {("resnet18", "fbgemm"), ("mobilenet_v2", "fbgemm"), ("mobilenet_v2", "x86_amx")}
    return [pytest.param(name, profile, marks=() if (name, profile) in default else pytest.mark.slow)
            for name in MODELS for profile in PROFILES]


@pytest.mark.parametrize("name, profile", _zoo_cases())
def test_zoo_integer_form_equals_runtime(name, profile):
    _, x, module = zoo_eager_model(name)  # the models of tests/test_zoo_models.py, built once per session
    assert_identical(module, x.numpy(), profile)


@pytest.mark.parametrize("profile", PROFILES)
def test_build_integer_form_output_equals_runtime(profile):
    module, x = _op_case("pools_linear")  # conv, pools, flatten, linear: the whole-model path of build()
    runner = tvm_bridge.build(module, form="integer", profile=profile)
    np.testing.assert_array_equal(runner(x), module.run(x, profile=profile).dequantized)


def _model_cases() -> dict:
    """The models of tests/test_tvm_ops.py: name -> (body, shape, per_channel, fuse)."""
    from small_models import Head, Residual, conv_cases

    return {**conv_cases(),
            "add": (Residual(False), (3, 10, 10), True, None),
            "add_relu": (Residual(True), (3, 10, 10), True, None),
            "pools_linear": (Head(False), (3, 17, 17), True, [["body.conv", "body.relu"]]),
            "pools_linear_relu": (Head(True), (3, 17, 17), True, [["body.conv", "body.relu"], ["body.fc", "body.fc_relu"]]),
            "pools_linear_unfused_relu": (Head(False), (3, 17, 17), True, None)}


def _op_case(name: str) -> tuple[qnnpy.QDQModule, np.ndarray]:
    from small_models import op_cases, quantized

    if name in _model_cases():
        body, shape, per_channel, fuse = _model_cases()[name]
        model, x = quantized(body, shape, per_channel, fuse)
    else:
        body, shape = op_cases()[name]
        model, x = quantized(body, shape)
    return qnnpy.from_torch(model, (x,)), x.numpy()


# Op cases whose op has no integer rule and stays in float, reported (rules/norm.py):
# test_normalizations_stay_float_and_are_reported.
KEPT_FLOAT = {"quantized_layer_norm": "body_act", "quantized_group_norm": "body_act",
              "quantized_instance_norm2d": "body_act", "quantized_softmax": "body_act"}


def _op_case_names() -> list[str]:
    from small_models import op_cases

    return sorted(set(op_cases()) - set(KEPT_FLOAT)) + sorted(_model_cases())


# Under the oneDNN profiles the cases with weighted layers run by default (profile_cases.py), the rest are
# marked slow.


def _runs_by_default(name: str, profile: str) -> bool:
    if profile == "qnnpack":
        return name in QNNPACK_KERNEL_CASES
    if profile in ONEDNN_PROFILES:
        return profile in ONEDNN_DEFAULT_PROFILES and ("conv" in name or "linear" in name)
    return True


def _op_case_params() -> list:
    """Every op case under every profile; under qnnpack only the cases of QNNPACK's own kernels run
    by default (the others take int32_bias's rules, already checked), under the oneDNN profiles those
    of ONEDNN_DEFAULT_PROFILES with weighted layers; the rest are marked slow."""
    return [pytest.param(name, profile, marks=() if _runs_by_default(name, profile) else pytest.mark.slow)
            for name in _op_case_names() for profile in PROFILES]


@pytest.mark.parametrize("name, profile", _op_case_params())
def test_op_cases_integer_form_equals_runtime(name, profile):
    module, x = _op_case(name)
    if name in ("conv_transpose2d", "conv3d") and profile in ONEDNN_PROFILES:
        with pytest.warns(UserWarning, match="kept in float"):
            lowered = lower_integer(module.to_tvm(), profile, params=module.params, hints=module)
        assert {reason for _, _, reason in lowering_report(lowered).kept_float} == {
            f"{name} under profile {profile} (oneDNN's order) is not lowered"}
        return
    assert_identical(module, x, profile)


@pytest.mark.parametrize("name", sorted(KEPT_FLOAT))
def test_normalizations_stay_float_and_are_reported(name):
    module, _ = _op_case(name)
    with pytest.warns(UserWarning, match=f"kept in float: {KEPT_FLOAT[name]}"):
        lowered = lower_integer(module.to_tvm(), "fbgemm", params=module.params, hints=module)
    report = lowering_report(lowered)
    assert [(n, reason) for n, _, reason in report.kept_float] == [
        (KEPT_FLOAT[name], "normalizations and softmax stay in float (row statistics; no per-value table)")]
    assert "body_conv" in [n for n, _ in report.lowered]


def _tflite_form(layout: str) -> tuple[tvm.IRModule, dict[str, np.ndarray]]:
    """conv2d in the form of TVM's TFLite importer, built with BlockBuilder: int8 activations,
    per-channel int8 weights (dequantize on the output-channel axis), int32 bias dequantized
    with scale s_in * s_w, conv2d, add, quantize. ``layout``: "NCHW" (OIHW weights, axis 0)
    or "NHWC" (the integer OHWI weight permuted to HWIO, then dequantized on axis 3, as
    apache-tvm 0.27's importer does)."""
    rng = np.random.default_rng(3)
    s_in, z_in, s_out, z_out = np.float32(0.05), -7, np.float32(0.11), 4
    s_w = rng.uniform(0.002, 0.02, 6).astype(np.float32)
    w = rng.integers(-127, 128, (6, 3, 3, 3)).astype(np.int8)  # OIHW
    bias = rng.integers(-3000, 3000, 6).astype(np.int32)
    data_shape = (1, 3, 9, 10) if layout == "NCHW" else (1, 9, 10, 3)
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(data_shape, "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            op = relax.op
            xq = bb.emit(op.quantize(x, relax.const(s_in), relax.const(z_in, "int32"), axis=-1, out_dtype="int8"))
            xf = bb.emit(op.dequantize(xq, relax.const(s_in), relax.const(z_in, "int32"), axis=-1))
            if layout == "NCHW":
                wq, axis, kernel_layout = relax.const(w), 0, "OIHW"
            else:
                wq = bb.emit(op.permute_dims(relax.const(w.transpose(0, 2, 3, 1)), [1, 2, 3, 0]))
                axis, kernel_layout = 3, "HWIO"
            wf = bb.emit(op.dequantize(wq, relax.const(s_w), relax.const(0, "int32"), axis=axis))
            conv = bb.emit(op.nn.conv2d(xf, wf, padding=1, data_layout=layout, kernel_layout=kernel_layout))
            bias_scale = op.multiply(relax.const(s_in), relax.const(s_w))
            bf = bb.emit(op.dequantize(relax.const(bias), bias_scale, relax.const(0, "int32"), axis=0))
            y = bb.emit(op.add(conv, bf if layout == "NHWC" else op.reshape(bf, (1, 6, 1, 1))))
            out = bb.emit_output(op.quantize(y, relax.const(s_out), relax.const(z_out, "int32"), axis=-1,
                                             out_dtype="int8"))
        bb.emit_func_output(out)
    consts = {"s_in": s_in, "z_in": z_in, "s_out": s_out, "z_out": z_out, "s_w": s_w, "w": w, "bias": bias}
    return bb.get(), consts


@pytest.mark.parametrize("profile", ONEDNN_PROFILES)
def test_a_module_without_qnnpys_hints_keeps_its_convs_in_float_under_the_onednn_profiles(profile):
    """PyTorch's dispatch to oneDNN and its constants belong to a module qnnpy converted: a TFLite-form
    module's conv is reported, not lowered in some other engine's arithmetic."""
    mod, _ = _tflite_form("NCHW")
    with pytest.warns(UserWarning, match="kept in float"):
        report = lowering_report(lower_integer(mod, profile))
    assert [reason for _, _, reason in report.kept_float] == [
        f"profile {profile} needs the module's hints (a module qnnpy converted)"]


def _tflite_reference(q: np.ndarray, c: dict[str, np.ndarray], profile: str) -> np.ndarray:
    """The profile's formulas (README, src/runtime/profile.h) in numpy, NCHW."""
    acc = torch.nn.functional.conv2d(torch.tensor(q.astype(np.float64) - c["z_in"]),
                                     torch.tensor(c["w"].astype(np.float64)), padding=1).numpy().astype(np.int64)
    a = (c["s_w"] * c["s_in"]).astype(np.float32)
    if profile == "fixed_point":
        from fixed_point_reference import ref_requantize

        m = c["s_in"].astype(np.float64) * c["s_w"].astype(np.float64) / np.float64(c["s_out"])
        acc = acc + c["bias"].reshape(1, -1, 1, 1)
        return ref_requantize(acc, m.reshape(1, -1, 1, 1), c["z_out"], -128, 127).astype(np.int8)
    if profile == "int32_bias":
        m = (a * (np.float32(1) / c["s_out"])).astype(np.float32)
        t = (acc + c["bias"].reshape(1, -1, 1, 1)).astype(np.float32)
    else:
        m = (a / c["s_out"]).astype(np.float32)
        fbias = ((c["bias"].astype(np.float32) * a).astype(np.float32) / a).astype(np.float32)
        t = (acc.astype(np.float32) + fbias.reshape(1, -1, 1, 1)).astype(np.float32)
    y = np.rint((t * m.reshape(1, -1, 1, 1)).astype(np.float32)) + c["z_out"]
    return np.clip(y, -128, 127).astype(np.int8)


@pytest.mark.parametrize("profile", SHOWN_PROFILES)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_tflite_form_module_is_lowered(layout, profile):
    mod, c = _tflite_form(layout)
    lowered = lower_integer(mod, profile)
    report = lowering_report(lowered)
    assert report.complete and [rule for _, rule in report.lowered] == ["Var", "nn.conv2d"], report.summary()
    text = lowered.script()
    assert "R.dequantize" not in text and '"float32") = R.nn.conv2d' not in text
    rng = np.random.default_rng(4)
    q = rng.integers(-128, 128, (1, 3, 9, 10))
    x = ((q - c["z_in"]) * c["s_in"]).astype(np.float32)  # quantizes back to q exactly
    feed = x if layout == "NCHW" else x.transpose(0, 2, 3, 1)
    vm = relax.VirtualMachine(tvm.compile(lowered, target="llvm"), tvm.cpu())
    got = vm["main"](tvm.runtime.tensor(np.ascontiguousarray(feed))).numpy()
    got = got if layout == "NCHW" else got.transpose(0, 3, 1, 2)
    np.testing.assert_array_equal(got, _tflite_reference(q, c, profile))


def _constants_after_default_pipeline(mod: tvm.IRModule) -> list[np.ndarray]:
    target = tvm_bridge.to_target("llvm")
    with target:
        built = relax.get_default_pipeline(target)(mod)
    found: list[np.ndarray] = []
    relax.analysis.post_order_visit(
        built["main"], lambda e: found.append(e.value.numpy()) if hasattr(getattr(e, "value", None), "numpy") else None)
    return found


def test_bound_params_stay_int8_weights_and_int32_biases():
    module, _ = _op_case("conv_per_channel_relu")
    weight = next(a for k, a in module.params.items() if k.endswith("_weight"))
    bias = next(a for k, a in module.params.items() if k.endswith("_bias"))
    float_form = _constants_after_default_pipeline(tvm_bridge.relax_module(module, "qdq", bind_params=True))
    # The float form: FoldConstant turns the bound dequantize(int8 weight) into an fp32 constant.
    assert any(c.dtype == np.float32 and c.size == weight.size for c in float_form)
    constants = _constants_after_default_pipeline(
        tvm_bridge.relax_module(module, "integer", "int32_bias", bind_params=True))
    assert any(c.dtype == np.int8 and np.array_equal(c.reshape(-1), weight.reshape(-1)) for c in constants)
    assert any(c.dtype == np.int32 and np.array_equal(c.reshape(-1), bias) for c in constants)
    widened = [c for c in constants if c.size == weight.size and c.dtype != np.int8]
    assert not widened, f"weight-sized constants of dtype {[c.dtype for c in widened]}"
    # What else is constant: per-channel multipliers and scalars, not weights.
    assert all(c.size <= bias.size for c in constants if c.dtype == np.float32)


def test_bound_params_runner_equals_runtime():
    module, x = _op_case("conv_per_channel_relu")
    runner = tvm_bridge.build(module, form="integer", profile="int32_bias", bind_params=True)
    np.testing.assert_array_equal(runner(x), module.run(x, profile="int32_bias").dequantized)


@pytest.mark.parametrize("target", ["llvm -mcpu=znver4", {"kind": "llvm", "mcpu": "znver4"}])
def test_target_forms_are_accepted_and_stay_bit_exact(target):
    """A target with FMA: the lowering's float steps are rounded one by one, so no contraction changes them."""
    module, x = _op_case("add_mul_scalar")
    assert_identical(module, x, "fbgemm", target if isinstance(target, str) else "llvm -mcpu=znver4")
    runner = tvm_bridge.build(module, form="integer", profile="fbgemm", target=target)
    np.testing.assert_array_equal(runner(x), module.run(x, profile="fbgemm").dequantized)


def test_target_string_conversion():
    assert tvm_bridge.to_target("llvm -mcpu=znver4 -num-cores=2").attrs["mcpu"] == "znver4"
    with pytest.raises(ValueError, match="does not start with"):
        tvm_bridge.to_target("llvm mcpu=znver4")
    with pytest.raises(TypeError, match="target must be"):
        tvm_bridge.to_target(3)


def test_exported_library_and_json_round_trip(tmp_path):
    """The pinned apache-tvm-ffi: export_library of the integer form and save_json/load_json work."""
    module, x = _op_case("conv_per_channel_relu")
    lowered = tvm_bridge.relax_module(module, "integer", "int32_bias", bind_params=True)
    text = tvm.ir.save_json(lowered)
    tvm.ir.assert_structural_equal(tvm.ir.load_json(text), lowered)
    path = tvm_bridge.build(module, form="integer", profile="int32_bias", bind_params=True).export_library(tmp_path / "lib.so")
    vm = relax.VirtualMachine(tvm.runtime.load_module(str(path)), tvm.cpu())
    np.testing.assert_array_equal(vm["main"](tvm.runtime.tensor(x)).numpy(),
                                  module.run(x, profile="int32_bias").dequantized)


def test_export_without_bound_params_is_refused(tmp_path):
    module, _ = _op_case("conv_per_channel_relu")
    with pytest.raises(ValueError, match="bind_params=True"):
        tvm_bridge.build(module, form="qdq").export_library(tmp_path / "lib.so")


def test_island_without_rule_stays_float_and_is_reported():
    module, x = _op_case("reshape_then_avg_pool")
    with pytest.warns(UserWarning, match="kept in float: body_avg_pool2d"):
        lowered = lower_integer(module.to_tvm(), "int32_bias", params=module.params)  # no hints: no layout
    report = lowering_report(lowered)
    assert [name for name, _, _ in report.kept_float] == ["body_avg_pool2d"]
    assert "hints" in report.kept_float[0][2]
    assert "R.nn.avg_pool2d" in lowered.script()  # the float island is still there


def test_foreign_elementwise_island_becomes_a_table_equal_to_the_float_island():
    """int8 -> hardswish (as an expression) -> uint8, and int8 -> clip -> int8, without hints."""
    bb = relax.BlockBuilder()
    q = relax.Var("q", relax.TensorType((2, 3, 5, 7), "int8"))
    op = relax.op
    with bb.function("main", [q]):
        with bb.dataflow():
            x = bb.emit(op.dequantize(q, relax.const(np.float32(0.043)), relax.const(-9, "int32"), axis=-1))
            h = op.divide(op.multiply(x, op.clip(op.add(x, relax.const(np.float32(3))), 0.0, 6.0)),
                          relax.const(np.float32(6)))
            y = bb.emit(op.quantize(h, relax.const(np.float32(0.027)), relax.const(13, "int32"), axis=-1,
                                    out_dtype="uint8"))
            c = bb.emit(op.quantize(op.clip(x, -0.5, 0.75), relax.const(np.float32(0.043)),
                                    relax.const(-9, "int32"), axis=-1, out_dtype="int8"))
            out = bb.emit_output(relax.Tuple([y, c]))
        bb.emit_func_output(out)
    mod = bb.get()
    lowered = lower_integer(mod, "int32_bias")
    assert lowering_report(lowered).complete and "R.take" in lowered.script()
    assert "R.dequantize" not in lowered.script()
    values = tvm.runtime.tensor(np.arange(-128, 82, dtype=np.int8).reshape(2, 3, 5, 7))
    want = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())["main"](values)
    got = relax.VirtualMachine(tvm.compile(lowered, target="llvm"), tvm.cpu())["main"](values)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_fixed_point_adaptive_pool_takes_the_runtime_rule():
    """Under fixed_point the runtime averages as int32_bias (QNNPACK's rule), not as fbgemm; the lowering
    must ask the runtime which rule a profile follows. The input makes the two rules differ."""
    graph = qnnpy._core.Graph()
    a = graph.add_node("quantize", [graph.add_input("x", [1, 19, 8, 9])], "a", "a", "uint8", 0.021, 131)
    pooled = graph.add_node("adaptive_avg_pool2d", [a], "gap", "gap", "uint8", 0.021, 131, ints={"output_size": [2, 3]})
    graph.mark_output(graph.add_node("dequantize", [pooled], "dq", "dq", "float32"))
    x = (np.random.default_rng(4).standard_normal((1, 19, 8, 9)) * 3).astype(np.float32)
    int32_bias, fbgemm = (qnnpy._core.Executor(graph, p, "", 1).run([x])[0][0] for p in ("int32_bias", "fbgemm"))
    assert (int32_bias != fbgemm).any(), "the rules agree on this input: the test cannot tell them apart"
    assert_identical(qnnpy.QDQModule(graph), x, "fixed_point")

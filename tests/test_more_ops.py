"""The ops beyond conv/linear/add: the integer runtime against PyTorch's quantized op
(tolerance 0) and TVM against PyTorch (within the float-rounding allowance)."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

import qnnpy
from qnnpy import tvm_bridge
from conftest import lsb_diff
from small_models import Normalized, Sequence1d, op_cases, quantized

# Ops that PyTorch's qnnpack engine runs with QNNPACK's own average pooling: int32_bias
# keeps PyTorch's generic rules there, the qnnpack profile reproduces QNNPACK's.
QNNPACK_POOLS = {"channel_shuffle_mean", "avg_pool_upsample", "reshape_then_avg_pool"}
# PyTorch's QNNPACK clamp (relu6, hardtanh) writes a channels_last input's values into
# a contiguous output without reordering them: int32_bias does not follow (see
# test_qnnpack_clamp_layout_quirk), the qnnpack profile does.
QNNPACK_CLAMP = {"relu6", "hardtanh"}
# QNNPACK's max pooling reads the nearest edge pixel for window taps outside the image: with
# dilation that pixel may lie outside the window (test_qnnpack_dilated_max_pool_reads_edge_pixels).
QNNPACK_MAX_POOL = {"dilated_max_pool"}
# PyTorch's QNNPACK backend has no quantized max_pool3d ("QNNPACK backend doesn't support of quantized_max_pool3d").
QNNPACK_MISSING = {"max_pool3d"}
# Averages land exactly half-way between two steps (a 2x2 sum does for a quarter of its
# values): TVM's float average rounds such ties its own way, PyTorch's integer average
# its own (the contiguous rule adds the zero point before rounding). 1-LSB differences.
# The float QDQ form averages dequantized values in float; small windows of integers make many exact halves, which
# PyTorch's integer pools round one way and the float average lands either side of.
TVM_MIN_IDENTICAL = {"reshape_then_avg_pool": 0.75, "avg_pool_upsample": 0.95, "adaptive_avg_pool3d_grid": 0.85}
# Largest slope of the activations whose output scale differs from their input's.
ACTIVATION_SLOPE = {"hardswish": 1.5, "hardsigmoid": 1 / 6, "sigmoid": 0.25, "leaky_relu": 1.0, "elu": 1.0,
                    "quantized_tanh": 1.0}


def _converted(name: str):
    body, shape = op_cases()[name]
    model, x = quantized(body, shape)
    return model, x, qnnpy.from_torch(model, (x,))


@pytest.mark.parametrize("name", sorted(op_cases()))
def test_runtime_matches_fbgemm(name):
    model, x, module = _converted(name)
    report = qnnpy.compare(model, module, [x], profiles=["fbgemm"])
    assert report.all_identical("fbgemm"), report.table()


@pytest.mark.parametrize("name", sorted(set(op_cases()) - QNNPACK_POOLS - QNNPACK_CLAMP - QNNPACK_MAX_POOL - QNNPACK_MISSING))
def test_runtime_int32_bias_matches_qnnpack(name):
    model, x, module = _converted(name)
    torch.backends.quantized.engine = "qnnpack"
    report = qnnpy.compare(copy.deepcopy(model), module, [x], profiles=["int32_bias"])
    assert report.all_identical("int32_bias"), report.table()


@pytest.mark.parametrize("name", sorted(set(op_cases()) - QNNPACK_MISSING))
def test_runtime_qnnpack_matches_qnnpack(name):
    model, x, module = _converted(name)
    torch.backends.quantized.engine = "qnnpack"
    report = qnnpy.compare(copy.deepcopy(model), module, [x], profiles=["qnnpack"])
    assert report.all_identical("qnnpack"), report.table()


@pytest.mark.parametrize("name", sorted(op_cases()))
def test_tvm_matches_torch(name):
    model, x, module = _converted(name)
    outs = tvm_bridge.build(module, form="qdq")(x.numpy())
    outs = outs if isinstance(outs, (tuple, list)) else [outs]
    with torch.no_grad():
        refs = model(x)
    refs = refs if isinstance(refs, tuple) else (refs,)
    # A 1-LSB tie flipped in TVM's float conv moves an activation's output by up to
    # slope * s_in / s_out steps, plus one for its own rounding.
    allowed = 2
    if name in ACTIVATION_SLOPE:
        allowed = max(2, 1 + math.ceil(ACTIVATION_SLOPE[name] * model.body.conv.scale / module.output_qparams()[0][0]))
    for (scale, _), out, ref in zip(module.output_qparams(), outs, refs):
        diff = lsb_diff(np.asarray(out), ref.numpy(), scale)
        assert diff.max() <= allowed, f"{name}: max difference {diff.max()} LSB (allowed {allowed})"
        minimum = TVM_MIN_IDENTICAL.get(name, 0.98)
        assert (diff == 0).mean() >= minimum, f"{name}: only {(diff == 0).mean():.4f} identical"


def test_channel_shuffle_permutes_exactly():
    model, x, module = _converted("channel_shuffle_mean")
    ops = [n["op"] for n in module.nodes()]
    assert {"slice", "cat", "reshape", "permute", "mean"} <= set(ops)
    script = module.script()
    assert "R.strided_slice" in script and "R.permute_dims" in script and "R.concat" in script


@pytest.mark.parametrize("name", sorted(QNNPACK_CLAMP))
def test_qnnpack_clamp_layout_quirk(name):
    """Under QNNPACK, PyTorch's clamp output holds int32_bias's (correct) values in NHWC order;
    the qnnpack profile reproduces that output as it is."""
    model, x, module = _converted(name)
    torch.backends.quantized.engine = "qnnpack"
    reference = copy.deepcopy(model)
    with torch.no_grad():
        conv_out = reference.body.conv(reference.quant(x))
        torch_out = reference.body.act(conv_out).int_repr().numpy()
    ours = module.run(x, profile="int32_bias", capture=True).intermediates["body_act"]
    assert conv_out.is_contiguous(memory_format=torch.channels_last)
    assert not np.array_equal(ours, torch_out)
    np.testing.assert_array_equal(ours.transpose(0, 2, 3, 1).reshape(-1), torch_out.reshape(-1))
    np.testing.assert_array_equal(module.run(x, profile="qnnpack", capture=True).intermediates["body_act"], torch_out)


@pytest.mark.parametrize("threads", [1, 2])
def test_qnnpack_dilated_max_pool_reads_edge_pixels(vector_isa, threads):
    """PyTorch's two engines differ on a padded, dilated max_pool2d: fbgemm leaves the taps outside
    the image out, QNNPACK reads the nearest edge pixel instead. Each profile gives its engine's bytes,
    on the scalar and the vector kernels, with 1 and 2 threads (the pool's output rows split)."""
    body, shape = op_cases()["dilated_max_pool"]
    model, _ = quantized(body, shape)
    x = torch.randn(2, 3, 130, 140, generator=torch.Generator().manual_seed(5))  # 2 x 13 x 128 x 138 outputs
    module = qnnpy.from_torch(model, (x,))
    engines = {}
    for engine in ("fbgemm", "qnnpack"):
        torch.backends.quantized.engine = engine
        reference = copy.deepcopy(model)
        with torch.no_grad():
            engines[engine] = reference.body(reference.quant(x)).int_repr().numpy()
    assert (engines["fbgemm"] != engines["qnnpack"]).sum() > 100
    for isa in ("scalar", vector_isa):
        for profile in ("fbgemm", "qnnpack"):
            ours = module.run(x, profile=profile, isa=isa, threads=threads).quantized
            np.testing.assert_array_equal(ours, engines[profile], err_msg=f"{profile} on {isa}")


FUSED = {
    "BNReLU2d": (lambda: Normalized(relu=True), (3, 7, 9), ["body.bn", "body.relu"], "bn"),
    "ConvReLU1d": (Sequence1d, (4, 29), ["body.a", "body.relu"], "a"),
}


@pytest.mark.parametrize("fused", sorted(FUSED))
@pytest.mark.parametrize("engine, profile", [("fbgemm", "fbgemm"), ("qnnpack", "int32_bias")])
def test_fused_relu_modules_match_torch(fused, engine, profile):
    body, shape, names, attr = FUSED[fused]
    model, x = quantized(body(), shape, fuse=[names])
    assert type(getattr(model.body, attr)).__name__ == fused
    module = qnnpy.from_torch(model, (x,))
    torch.backends.quantized.engine = engine
    report = qnnpy.compare(copy.deepcopy(model), module, [x], profiles=[profile])
    assert report.all_identical(profile), report.table()


def test_sigmoid_tables_match_torch_on_every_input_value():
    """PyTorch's vector lanes take exp from SLEEF, ours from the C library: measured on every
    8-bit input under 100 random input qparams, vector lanes and scalar tail alike."""
    from qnnpy import _core

    rng = np.random.default_rng(0)
    q = np.concatenate([np.tile(np.arange(256, dtype=np.uint8), 4), np.arange(0, 256, 6, dtype=np.uint8)])
    for _ in range(100):
        scale, zp = float(np.exp(rng.uniform(np.log(1e-3), np.log(0.5)))), int(rng.integers(0, 256))
        x = ((q.astype(np.float32) - zp) * np.float32(scale)).reshape(1, 1, 1, -1)
        qx = torch.quantize_per_tensor(torch.from_numpy(x), scale, zp, torch.quint8)
        assert np.array_equal(qx.int_repr().numpy().ravel(), q)
        g = _core.Graph()
        a = g.add_node("quantize", [g.add_input("x", list(x.shape))], "a", "a", "uint8", scale, zp)
        g.mark_output(g.add_node("sigmoid", [a], "y", "y", "uint8", 1 / 256, 0))
        ours = _core.Executor(g, "fbgemm", "", 1).run([x], False)[0][0]
        np.testing.assert_array_equal(ours, torch.sigmoid(qx).int_repr().numpy(), err_msg=f"scale {scale}, zp {zp}")


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_elu_tables_match_torch_on_every_input_value(dtype):
    """quantized::elu on every 8-bit input (vector lanes and scalar tail) under 100 random input
    and output qparams and slopes; PyTorch's vector lanes take exp from SLEEF, ours from the C library."""
    from qnnpy import _core

    torch_dtype, lo = (torch.quint8, 0) if dtype == "uint8" else (torch.qint8, -128)
    rng = np.random.default_rng(1)
    q = np.concatenate([np.tile(np.arange(256), 4), np.arange(0, 256, 6)]) + lo
    for _ in range(100):
        scale, zp = float(np.exp(rng.uniform(np.log(1e-3), np.log(0.5)))), int(rng.integers(0, 256)) + lo
        out_scale, out_zp = float(np.exp(rng.uniform(np.log(1e-3), np.log(0.5)))), int(rng.integers(0, 256)) + lo
        alpha = float(rng.uniform(0.05, 2.0))
        x = ((q.astype(np.float32) - zp) * np.float32(scale)).reshape(1, 1, 1, -1)
        qx = torch.quantize_per_tensor(torch.from_numpy(x), scale, zp, torch_dtype)
        assert np.array_equal(qx.int_repr().numpy().ravel(), q)
        g = _core.Graph()
        a = g.add_node("quantize", [g.add_input("x", list(x.shape))], "a", "a", dtype, scale, zp)
        g.mark_output(g.add_node("elu", [a], "y", "y", dtype, out_scale, out_zp, floats={"alpha": alpha}))
        ours = _core.Executor(g, "fbgemm", "", 1).run([x], False)[0][0]
        expected = torch.ops.quantized.elu(qx, out_scale, out_zp, alpha).int_repr().numpy()
        np.testing.assert_array_equal(ours, expected, err_msg=f"scale {scale}, zp {zp}, alpha {alpha}")


def test_elu_from_torchscript_is_bit_exact():
    """A traced model reaches quantized::elu as a function call (converter's call_function branch)."""
    model, x, _ = _converted("elu")
    module = qnnpy.from_torch(torch.jit.trace(model, x), (x,))
    assert [n["op"] for n in module.nodes()] == ["quantize", "conv2d", "elu", "dequantize"]
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_array_equal(module.run(x.numpy(), profile="fbgemm").dequantized, expected)


class _EluWithCoefficients(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = torch.quantize_per_tensor(x, 0.05, 128, torch.quint8)
        return torch.ops.quantized.elu(q, 0.05, 128, 1.0, 2.0, 1.0).dequantize()


def test_elu_with_scale_coefficients_is_refused():
    x = torch.randn(1, 3, 4, 4)
    with pytest.raises(qnnpy.ConversionError, match=r"elu with scale / input_scale \(2.0, 1.0\)"):
        qnnpy.from_torch(torch.jit.trace(_EluWithCoefficients().eval(), x), (x,))


class _ScalarOperands(torch.nn.Module):
    """Tensor-number arithmetic, which FX lowers to quantized::mul / quantized::add with a number
    operand (their .Scalar overloads), on either side."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return torch.cat([y * 2.0, y + 1, 3 * y, 0.5 + y, y * 0.3], dim=1)


@pytest.mark.parametrize("engine, profile", [("fbgemm", "fbgemm"), ("qnnpack", "int32_bias")])
def test_fx_number_operands_of_add_and_mul_match_torch(engine, profile):
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

    torch.manual_seed(0)
    torch.backends.quantized.engine = "fbgemm"
    x = torch.randn(1, 4, 6, 10)
    prepared = prepare_fx(_ScalarOperands().eval(), torch.ao.quantization.get_default_qconfig_mapping("fbgemm"), (x,))
    for _ in range(4):
        prepared(torch.randn(1, 4, 6, 10))
    model = convert_fx(prepared)
    module = qnnpy.from_torch(model, (x,))
    assert [n["op"] for n in module.nodes()].count("mul_scalar") == 3
    assert [n["op"] for n in module.nodes()].count("add_scalar") == 2
    torch.backends.quantized.engine = engine
    report = qnnpy.compare(model, module, [x], profiles=[profile])
    assert report.all_identical(profile), report.table()


class _FlattenModules(torch.nn.Module):
    """nn.Flatten and nn.Unflatten, the module forms of flatten and view, around a linear."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.flatten = torch.nn.Flatten()
        self.fc = torch.nn.Linear(4 * 5 * 5, 12)
        self.unflatten = torch.nn.Unflatten(1, (3, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.unflatten(self.fc(self.flatten(self.conv(x))))


def test_flatten_and_unflatten_modules_match_fbgemm():
    model, x = quantized(_FlattenModules(), (3, 7, 7))
    module = qnnpy.from_torch(model, (x,))
    assert [n["op"] for n in module.nodes()].count("reshape") == 2
    report = qnnpy.compare(model, module, [x], profiles=["fbgemm"])
    assert report.all_identical("fbgemm"), report.table()

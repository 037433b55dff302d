"""Quantized tanh, layer norm, group norm and instance norm: the runtime against PyTorch's
quantized kernels (tolerance 0) on random inputs and qparams, under the fbgemm engine
(profile fbgemm) and the qnnpack engine (profile int32_bias); their converters and errors.
The single-op models of these ops are in small_models.op_cases (tests/test_more_ops.py)."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from torch import nn

import qnnpy
from qnnpy import _core
from small_models import Activations, quantized

ENGINES = [("fbgemm", "fbgemm"), ("qnnpack", "int32_bias")]
TORCH_DTYPES = {"uint8": (torch.quint8, 0), "int8": (torch.qint8, -128)}


def _qparams(rng: np.random.Generator, lo: int) -> tuple[float, int]:
    return float(np.exp(rng.uniform(np.log(2e-3), np.log(0.2)))), int(rng.integers(0, 256)) + lo


def _run_one(x: torch.Tensor, dtype: str, add, profile: str) -> np.ndarray:
    """Quantize x with its own qparams, run one node added by ``add(graph, input_id)``, return the integers."""
    g = _core.Graph()
    a = g.add_node("quantize", [g.add_input("x", list(x.shape))], "a", "a", dtype, x.q_scale(), x.q_zero_point())
    g.mark_output(add(g, a))
    return _core.Executor(g, profile, "", 1).run([x.dequantize().numpy()], False)[0][0]


@pytest.mark.parametrize("engine, profile", ENGINES)
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_tanh_on_every_input_value(engine, profile, dtype):
    """Every 8-bit input (vector lanes and scalar tail) under 100 random input qparams. PyTorch's fbgemm
    vector lanes take tanh from SLEEF, ours from the C library: the agreement is measured, and is exact
    on these inputs."""
    torch_dtype, lo = TORCH_DTYPES[dtype]
    torch.backends.quantized.engine = engine
    rng = np.random.default_rng(5)
    q = np.concatenate([np.tile(np.arange(256), 4), np.arange(0, 256, 6)]) + lo
    for _ in range(100):
        scale, zp = _qparams(rng, lo)
        x = torch.from_numpy(((q - zp) * np.float32(scale)).astype(np.float32).reshape(1, 1, 1, -1))
        qx = torch.quantize_per_tensor(x, scale, zp, torch_dtype)
        assert np.array_equal(qx.int_repr().numpy().ravel(), q)
        expected = torch.tanh(qx)
        ours = _run_one(qx, dtype, lambda g, a: g.add_node("quantized_tanh", [a], "y", "y", dtype, expected.q_scale(),
                                                           expected.q_zero_point()), profile)
        np.testing.assert_array_equal(ours, expected.int_repr().numpy(), err_msg=f"scale {scale}, zp {zp}")


def _random_input(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, channels_last: bool) -> torch.Tensor:
    torch_dtype, lo = TORCH_DTYPES[dtype]
    scale, zp = _qparams(rng, lo)
    center = rng.normal(0, 40) * scale
    x = torch.from_numpy((rng.normal(0, rng.uniform(5, 60), shape) * scale + center).astype(np.float32))
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    return torch.quantize_per_tensor(x, scale, zp, torch_dtype)


def _affine(rng: np.random.Generator, shape: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    return (torch.from_numpy(rng.normal(1, 0.5, shape).astype(np.float32)),
            torch.from_numpy(rng.normal(0, 0.5, shape).astype(np.float32)))


# (input shape, normalized rank): rows longer and shorter than PyTorch's 64-value vector
# blocks, with and without a remainder.
LAYER_NORM_CASES = [((3, 100), 1), ((2, 5, 64), 1), ((2, 4, 7, 9), 2), ((2, 3, 5, 6), 3), ((4, 130), 1)]


@pytest.mark.parametrize("engine, profile", ENGINES)
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_layer_norm_matches_torch(engine, profile, dtype):
    torch.backends.quantized.engine = engine
    rng = np.random.default_rng(11)
    for trial in range(40):
        shape, k = LAYER_NORM_CASES[trial % len(LAYER_NORM_CASES)]
        qx = _random_input(rng, shape, dtype, channels_last=len(shape) == 4 and trial % 2 == 1)
        weight, bias = _affine(rng, list(shape[-k:]))
        eps = float(rng.choice([1e-5, 1e-3]))
        out_scale, out_zp = _qparams(rng, TORCH_DTYPES[dtype][1])
        expected = torch.ops.quantized.layer_norm(qx, list(shape[-k:]), weight, bias, eps, out_scale, out_zp)
        ours = _run_one(qx, dtype, lambda g, a: g.add_normalization(
            "quantized_layer_norm", a, "ln", "y", weight.numpy(), bias.numpy(), {"normalized_rank": [k]}, eps, dtype,
            out_scale, out_zp), profile)
        np.testing.assert_array_equal(ours, expected.int_repr().numpy(), err_msg=f"trial {trial}, shape {shape}")


# (input shape, groups); groups None: instance norm (one group per channel).
GROUP_NORM_CASES = [((2, 8, 9, 9), 2), ((3, 6, 5, 13), 3), ((2, 12, 8, 8), 12), ((2, 4, 70), 4), ((3, 5, 11), None),
                    ((2, 6, 3, 4), None)]


@pytest.mark.parametrize("engine, profile", ENGINES)
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_group_and_instance_norm_match_torch(engine, profile, dtype):
    torch.backends.quantized.engine = engine
    rng = np.random.default_rng(12)
    for trial in range(48):
        shape, groups = GROUP_NORM_CASES[trial % len(GROUP_NORM_CASES)]
        qx = _random_input(rng, shape, dtype, channels_last=len(shape) == 4 and trial % 2 == 1)
        weight, bias = _affine(rng, [shape[1]])
        eps = float(rng.choice([1e-5, 1e-3]))
        out_scale, out_zp = _qparams(rng, TORCH_DTYPES[dtype][1])
        if groups is None:
            expected = torch.ops.quantized.instance_norm(qx, weight, bias, eps, out_scale, out_zp)
        else:
            expected = torch.ops.quantized.group_norm(qx, groups, weight, bias, eps, out_scale, out_zp)
        ours = _run_one(qx, dtype, lambda g, a: g.add_normalization(
            "quantized_group_norm", a, "gn", "y", weight.numpy(), bias.numpy(), {"num_groups": [groups or shape[1]]},
            eps, dtype, out_scale, out_zp), profile)
        np.testing.assert_array_equal(ours, expected.int_repr().numpy(), err_msg=f"trial {trial}, shape {shape}")


class _Norms(nn.Module):
    """conv1d -> InstanceNorm1d, and a LayerNorm without weight and bias over (C, L)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 6, 3)
        self.instance = nn.InstanceNorm1d(6)
        self.layer = nn.LayerNorm([6, 27], elementwise_affine=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(self.instance(self.conv(x)))


@pytest.mark.parametrize("engine, profile", ENGINES)
def test_modules_without_affine_and_instance_norm1d(engine, profile):
    model, x = quantized(_Norms(), (4, 29))
    assert type(model.body.instance).__name__ == "InstanceNorm1d" and model.body.instance.weight is None
    assert model.body.layer.weight is None
    module = qnnpy.from_torch(model, (x,))
    assert [n["op"] for n in module.nodes()][-3:] == ["quantized_group_norm", "quantized_layer_norm", "dequantize"]
    torch.backends.quantized.engine = engine
    report = qnnpy.compare(copy.deepcopy(model), module, [x], profiles=[profile])
    assert report.all_identical(profile), report.table()


class _Transformerish(nn.Module):
    """linear -> LayerNorm -> GroupNorm and InstanceNorm1d over a (N, C, L) view -> tanh -> softmax."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(20, 24)
        self.ln = nn.LayerNorm(24)
        self.gn = nn.GroupNorm(2, 4)
        self.instance = nn.InstanceNorm1d(4, affine=True)
        self.tanh = nn.Tanh()
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.ln(self.fc(x))
        return self.softmax(self.tanh(self.instance(self.gn(y.reshape(y.shape[0], 4, 6)))))


def test_torchscript_reaches_the_quantized_ops():
    model, x = quantized(_Transformerish(), (20,))
    traced = torch.jit.trace(model, x)
    kinds = {n.kind() for n in traced.inlined_graph.nodes()}
    assert {"quantized::layer_norm", "quantized::group_norm", "quantized::instance_norm", "aten::tanh",
            "quantized::softmax"} <= kinds
    module = qnnpy.from_torch(traced, (x,))
    ops = [n["op"] for n in module.nodes()]
    assert ops.count("quantized_group_norm") == 2
    assert {"quantized_layer_norm", "quantized_tanh", "quantized_softmax"} <= set(ops)
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_array_equal(module.run(x.numpy(), profile="fbgemm").dequantized, expected)


def test_saved_module_reloads_its_norm_params(tmp_path):
    model, x = quantized(_Transformerish(), (20,))
    module = qnnpy.from_torch(model, (x,))
    loaded = qnnpy.QDQModule.load(module.save(tmp_path))
    assert "quantized_layer_norm" in [n["op"] for n in loaded.nodes()]
    np.testing.assert_array_equal(loaded.run(x.numpy(), profile="fbgemm").dequantized,
                                  module.run(x.numpy(), profile="fbgemm").dequantized)
    with torch.no_grad():
        np.testing.assert_array_equal(loaded.run(x.numpy(), profile="fbgemm").dequantized, model(x).numpy())


def test_group_norm_refuses_groups_that_do_not_divide_the_channels():
    g = _core.Graph()
    a = g.add_node("quantize", [g.add_input("x", [1, 6, 4, 4])], "a", "a", "uint8", 0.1, 3)
    with pytest.raises(ValueError, match=r"quantized_group_norm \(gn\): num_groups must divide the 6 channels, got 4"):
        g.add_normalization("quantized_group_norm", a, "gn", "y", np.ones(6, np.float32), np.zeros(6, np.float32),
                            {"num_groups": [4]}, 1e-5, "uint8", 0.1, 3)


def test_layer_norm_refuses_a_weight_of_the_wrong_shape():
    g = _core.Graph()
    a = g.add_node("quantize", [g.add_input("x", [2, 5, 7])], "a", "a", "uint8", 0.1, 3)
    with pytest.raises(ValueError, match=r"quantized_layer_norm \(ln\): norm_weight must be float32 \(5, 7\)"):
        g.add_normalization("quantized_layer_norm", a, "ln", "y", np.ones((7,), np.float32), np.zeros((7,), np.float32),
                            {"normalized_rank": [2]}, 1e-5, "uint8", 0.1, 3)


def test_layer_norm_refuses_eps_zero():
    g = _core.Graph()
    a = g.add_node("quantize", [g.add_input("x", [2, 7])], "a", "a", "uint8", 0.1, 3)
    with pytest.raises(ValueError, match=r"quantized_layer_norm \(ln\): eps must be > 0"):
        g.add_normalization("quantized_layer_norm", a, "ln", "y", np.ones(7, np.float32), np.zeros(7, np.float32),
                            {"normalized_rank": [1]}, 0.0, "uint8", 0.1, 3)


# (shape, axis): the last axis (exp_u20 and lane-wise sums in PyTorch) with fewer and more
# than 16 values and a remainder, and inner axes (exp and sums in axis order).
SOFTMAX_CASES = [((6, 37), -1), ((3, 4, 9), 2), ((2, 5, 100), -1), ((2, 9, 4, 5), 1), ((3, 7, 6), 1), ((2, 3, 4, 33), 3)]


def _softmax_agreement(engine: str, profile: str, dtype: str, out_qparams) -> tuple[int, int, int]:
    """(differing values, values, largest difference in LSB) of the runtime against quantized::softmax."""
    torch.backends.quantized.engine = engine
    rng = np.random.default_rng(13)
    differ = total = worst = 0
    for trial in range(60):
        shape, axis = SOFTMAX_CASES[trial % len(SOFTMAX_CASES)]
        qx = _random_input(rng, shape, dtype, channels_last=len(shape) == 4 and trial % 2 == 1)
        out_scale, out_zp = out_qparams(rng)
        expected = torch.ops.quantized.softmax(qx, axis, out_scale, out_zp).int_repr().numpy().astype(np.int64)
        ours = _run_one(qx, dtype, lambda g, a: g.add_node("quantized_softmax", [a], "sm", "y", dtype, out_scale, out_zp,
                                                           ints={"axis": [axis]}), profile).astype(np.int64)
        differ += int((ours != expected).sum())
        total += ours.size
        worst = max(worst, int(np.abs(ours - expected).max()))
    return differ, total, worst


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_softmax_float_path_agrees_with_torch(dtype):
    """dequantize -> float softmax -> quantize. The last axis reproduces PyTorch's exp_u20 and
    lane-wise sums; inner axes take exp from the C library where PyTorch takes SLEEF's: measured
    on 60 random tensors (about 15,000 values), all identical."""
    lo = TORCH_DTYPES[dtype][1]
    differ, total, worst = _softmax_agreement("fbgemm", "fbgemm", dtype, lambda rng: (
        float(rng.uniform(1 / 1024, 1 / 128)), int(rng.integers(0, 20)) + lo))
    assert (differ, worst) == (0, 0), f"{differ} of {total} differ, max {worst} LSB"


def test_softmax_qnnpack_path_is_bit_exact():
    """QNNPACK's integer softargmax: qnnpack engine, uint8, output qparams (1/256, 0)."""
    differ, total, worst = _softmax_agreement("qnnpack", "int32_bias", "uint8", lambda rng: (1 / 256, 0))
    assert (differ, worst) == (0, 0), f"{differ} of {total} differ, max {worst} LSB"


@pytest.mark.parametrize("engine, profile, value", [("qnnpack", "int32_bias", 1), ("fbgemm", "fbgemm", 0)])
def test_softmax_half_way_tie_follows_the_engine(engine, profile, value):
    """512 equal values: 256 / 512 is half a step. QNNPACK rounds it up ((t << 8) + sum / 2) / sum; the
    float path rounds it to even (0). The two kernels are told apart here."""
    torch.backends.quantized.engine = engine
    qx = torch.quantize_per_tensor(torch.full((2, 512), 0.3), 0.05, 7, torch.quint8)
    expected = torch.ops.quantized.softmax(qx, 1, 1 / 256, 0).int_repr().numpy()
    assert (expected == value).all()
    ours = _run_one(qx, "uint8", lambda g, a: g.add_node("quantized_softmax", [a], "sm", "y", "uint8", 1 / 256, 0,
                                                         ints={"axis": [1]}), profile)
    np.testing.assert_array_equal(ours, expected)


def test_softmax_under_qnnpack_with_other_qparams_takes_the_float_path():
    differ, total, worst = _softmax_agreement("qnnpack", "int32_bias", "uint8", lambda rng: (
        float(rng.uniform(1 / 1024, 1 / 128)), int(rng.integers(0, 20))))
    assert (differ, worst) == (0, 0), f"{differ} of {total} differ, max {worst} LSB"


class _ConvSoftmax(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 10, 3)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.softmax(self.conv(x))


@pytest.mark.parametrize("engine, profile", ENGINES)
def test_fx_softmax_with_fixed_qparams(engine, profile):
    """FX gives softmax PyTorch's fixed output qparams (1/256, 0): under the qnnpack engine PyTorch
    then runs QNNPACK's integer softargmax, and so does the runtime under int32_bias."""
    from torch.ao.quantization import get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

    torch.manual_seed(3)
    torch.backends.quantized.engine = engine
    x = torch.randn(2, 3, 9, 9)
    prepared = prepare_fx(_ConvSoftmax().eval(), get_default_qconfig_mapping(engine), (x,))
    for _ in range(3):
        prepared(torch.randn(2, 3, 9, 9))
    model = convert_fx(prepared)
    module = qnnpy.from_torch(model, (x,))
    assert [n["op"] for n in module.nodes()][-2:] == ["quantized_softmax", "dequantize"]
    assert module.output_qparams() == [(1 / 256, 0)]
    report = qnnpy.compare(copy.deepcopy(model), module, [x], profiles=[profile])
    assert report.all_identical(profile), report.table()


def _seeded_norm_case(seed: int, shape: tuple[int, ...]):
    rng = np.random.default_rng(seed)
    scale, zp = float(rng.uniform(0.005, 0.05)), int(rng.integers(0, 256))
    qx = torch.quantize_per_tensor(torch.from_numpy(rng.normal(0, 2, shape).astype(np.float32)), scale, zp, torch.quint8)
    size = shape[1] if len(shape) == 4 else shape[-1]
    weight = torch.from_numpy(rng.normal(1, 0.5, size).astype(np.float32))
    bias = torch.from_numpy(rng.normal(0, 0.3, size).astype(np.float32))
    return qx, weight, bias, float(rng.uniform(0.002, 0.01)), int(rng.integers(0, 256))


@pytest.mark.parametrize("seed, unfused", [(3898, "variance"), (4878, "affine step")])
def test_group_norm_fused_multiply_adds(seed, unfused):
    """Inputs found by searching seeds with a NumPy model of the formula in which the named step is an
    unfused multiply and add: there it gives a different output value, PyTorch agrees with the fma."""
    qx, weight, bias, out_scale, out_zp = _seeded_norm_case(seed, (1, 4, 6, 6))
    expected = torch.ops.quantized.group_norm(qx, 1, weight, bias, 1e-5, out_scale, out_zp)
    ours = _run_one(qx, "uint8", lambda g, a: g.add_normalization(
        "quantized_group_norm", a, "gn", "y", weight.numpy(), bias.numpy(), {"num_groups": [1]}, 1e-5, "uint8",
        out_scale, out_zp), "fbgemm")
    np.testing.assert_array_equal(ours, expected.int_repr().numpy())


def test_layer_norm_fused_affine_step():
    """As above for layer norm's affine step fma(fl(d * r), w, b) (seed found the same way)."""
    qx, weight, bias, out_scale, out_zp = _seeded_norm_case(2500, (2, 70))
    expected = torch.ops.quantized.layer_norm(qx, [70], weight, bias, 1e-5, out_scale, out_zp)
    ours = _run_one(qx, "uint8", lambda g, a: g.add_normalization(
        "quantized_layer_norm", a, "ln", "y", weight.numpy(), bias.numpy(), {"normalized_rank": [1]}, 1e-5, "uint8",
        out_scale, out_zp), "fbgemm")
    np.testing.assert_array_equal(ours, expected.int_repr().numpy())


@pytest.mark.parametrize("bounds", [(0.2, 2.5), (-3.0, -0.1), (-100.0, 100.0), (0.31, 0.32)])
def test_hardtanh_with_any_bounds(bounds):
    """Bounds that exclude zero, lie outside the input's range or within one quantization step:
    quantized with the input's qparams as PyTorch's qclamp does. Under the qnnpack engine PyTorch's clamp reorders channels_last
    values (tests/test_more_ops.py::test_qnnpack_clamp_layout_quirk), so fbgemm is the reference."""
    model, x = quantized(Activations(nn.Hardtanh(*bounds)), (3, 9, 11))
    module = qnnpy.from_torch(model, (x,))
    assert [n["op"] for n in module.nodes()][2] == "clamp"
    report = qnnpy.compare(model, module, [x], profiles=["fbgemm"])
    assert report.all_identical("fbgemm"), report.table()

"""The transformer float ops (src/ops/float_transformer_ops.cpp) one by one against PyTorch's float32 ops.

Pure data movement (float_permute) and ops that are one IEEE float32 operation per element
(float_sub, float_div, with a number operand too) must equal PyTorch bit for bit. Reductions and
transcendental functions are float32 computations in another order, or with another exp / erf /
tanh, than PyTorch's vectorized kernels: each test states the bound it asserts and why.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from qnnpy import _core
from qnnpy.module import QDQModule

EPS32 = float(np.finfo(np.float32).eps)


def _run(op: str, *xs: np.ndarray, ints: dict | None = None, floats: dict | None = None) -> np.ndarray:
    """One node of ``op`` on float inputs ``xs``, run by the runtime."""
    g = _core.Graph()
    ids = [g.add_input(f"x{i}", list(x.shape)) for i, x in enumerate(xs)]
    y = g.add_node(op, ids, "test", "y", "float32", ints=ints or {}, floats=floats or {})
    g.mark_output(y)
    return QDQModule(g).run(*xs).dequantized


def _random(shape: tuple[int, ...], seed: int, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _ulps(a: np.ndarray, b: np.ndarray) -> int:
    """Largest distance between a and b in float32 ulps (of the values' own binades)."""
    ia, ib = (np.ascontiguousarray(v, np.float32).view(np.int32).astype(np.int64) for v in (a, b))
    ia, ib = (np.where(i < 0, -(2**31) - i, i) for i in (ia, ib))
    return int(np.abs(ia - ib).max())


@pytest.mark.parametrize("perm", [[0, 2, 1, 3], [3, 2, 1, 0], [1, 0, 3, 2], [0]])
def test_permute_equals_torch(perm):
    x = _random((2, 3, 4, 5)[:len(perm)], 0)
    np.testing.assert_array_equal(_run("float_permute", x, ints={"perm": perm}), torch.from_numpy(x).permute(perm).numpy())


@pytest.mark.parametrize("shapes", [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)), ((1,), (2, 3))])
def test_sub_and_div_broadcast_and_equal_torch(shapes):
    a, b = _random(shapes[0], 1), _random(shapes[1], 2) + 3.0
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    np.testing.assert_array_equal(_run("float_sub", a, b), (ta - tb).numpy())
    np.testing.assert_array_equal(_run("float_div", a, b), (ta / tb).numpy())


def _run_with_scalar(op: str, x: np.ndarray, s: float) -> np.ndarray:
    """``op`` of x and the number s, a scalar constant (how a Python number operand converts)."""
    g = _core.Graph()
    xi = g.add_input("x", list(x.shape))
    si = g.add_node("float_constant", [], "test", "s", "float32", params={"value": np.array(s, np.float32)},
                    export_params=False)
    g.mark_output(g.add_node(op, [xi, si], "test", "y", "float32"))
    return QDQModule(g).run(x).dequantized


@pytest.mark.parametrize("s", [4.0, 0.1, -2.828427124746, 1e-3])
def test_ops_with_a_number_equal_torch(s):
    x = torch.from_numpy(_random((3, 8, 16), 3, scale=10.0))
    np.testing.assert_array_equal(_run_with_scalar("float_add", x.numpy(), s), (x + s).numpy())
    np.testing.assert_array_equal(_run_with_scalar("float_mul", x.numpy(), s), (x * s).numpy())
    np.testing.assert_array_equal(_run_with_scalar("float_div", x.numpy(), s), (x / s).numpy())


@pytest.mark.parametrize("a_shape, b_shape", [((2, 2, 8, 16), (2, 2, 16, 8)), ((2, 2, 8, 8), (8, 16)),
                                              ((1, 8, 5), (3, 5, 7)), ((3, 4), (4, 2))])
def test_matmul_broadcasts_and_stays_within_the_summation_bound(a_shape, b_shape):
    """Any order of summing k products p_i is within (k - 1) * eps/2 * sum |p_i| of the exact sum (Higham,
    "Accuracy and Stability of Numerical Algorithms", 3.1), so ours and PyTorch's BLAS are within twice that."""
    a, b = _random(a_shape, 4), _random(b_shape, 5)
    ours = _run("float_matmul", a, b)
    ref = torch.matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    assert ours.shape == ref.shape
    k = a_shape[-1]
    bound = (k - 1) * EPS32 * np.matmul(np.abs(a).astype(np.float64), np.abs(b).astype(np.float64))
    assert (np.abs(ours.astype(np.float64) - ref) <= bound).all()


@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_softmax_within_the_rounding_bound(axis):
    """Both sides compute exp (each within about 1 ulp), sum n terms (orders differ: each sum within
    (n - 1) * eps/2 relative), take one reciprocal and one product, so they are within n + 4 ulps (n the
    axis length); measured up to 6 ulps for n = 16."""
    x = _random((4, 8, 16), 6, scale=3.0)
    ours = _run("float_softmax", x, ints={"axis": [axis]})
    ref = torch.softmax(torch.from_numpy(x), dim=axis).numpy()
    assert _ulps(ours, ref) <= x.shape[axis] + 4
    np.testing.assert_allclose(ours.sum(axis), 1.0, rtol=0, atol=1e-6)


@pytest.mark.parametrize("approximate, code", [("none", 0), ("tanh", 1)])
def test_gelu_within_the_rounding_bound(approximate, code):
    """y = 0.5 * x * (1 + f) with f = erf(x / sqrt 2) or tanh(...) from another implementation (each within
    about 2 ulps): f's error is absolute (it cancels against 1 for negative x), so |ours - PyTorch's| is
    bounded by a few eps times |x|: measured 3.4 eps |x|, asserted 8 eps |x|."""
    x = _random((10000,), 7, scale=4.0)
    ours = _run("float_gelu", x, ints={"approximate": [code]})
    ref = torch.nn.functional.gelu(torch.from_numpy(x), approximate=approximate).numpy()
    assert (np.abs(ours.astype(np.float64) - ref) <= 8 * EPS32 * np.abs(x)).all()
    assert (ours == ref).mean() > 0.5  # the same formula: most values agree exactly


def test_layer_norm_within_float_rounding():
    """Mean and variance accumulated in double (PyTorch: float32 with a cascade sum), then PyTorch's
    float32 formula: within 2e-6 of PyTorch relative to the output's magnitude (a few ulps of values ~1)."""
    x = _random((2, 8, 32), 8, scale=2.0) + 1.0
    weight, bias = _random((32,), 9) * 0.5 + 1.0, _random((32,), 10) * 0.1
    g = _core.Graph()
    xi = g.add_input("x", list(x.shape))
    y = g.add_normalization("float_layer_norm", xi, "test", "y", weight, bias, {"normalized_rank": [1]}, 1e-5, "float32")
    g.mark_output(y)
    ours = QDQModule(g).run(x).dequantized
    ref = torch.nn.functional.layer_norm(torch.from_numpy(x), [32], torch.from_numpy(weight), torch.from_numpy(bias),
                                         1e-5).numpy()
    assert np.abs(ours - ref).max() <= 2e-6 * np.abs(ref).max()


def test_rules_refuse_bad_attributes_naming_the_op():
    g = _core.Graph()
    x = g.add_input("x", [2, 3, 4])
    w = g.add_input("w", [5, 6])
    with pytest.raises(ValueError, match=r"float_matmul \(bad\).*inner dimensions"):
        g.add_node("float_matmul", [x, w], "bad", "y", "float32")
    with pytest.raises(ValueError, match=r"float_permute \(bad\).*names axis 0 twice"):
        g.add_node("float_permute", [x], "bad", "y", "float32", ints={"perm": [0, 0, 1]})
    with pytest.raises(ValueError, match=r"float_gelu \(bad\).*approximate"):
        g.add_node("float_gelu", [x], "bad", "y", "float32", ints={"approximate": [2]})
    with pytest.raises(ValueError, match=r"float_softmax \(bad\)"):
        g.add_node("float_softmax", [x], "bad", "y", "float32", ints={"axis": [3]})
    with pytest.raises(ValueError, match=r"float_slice \(bad\).*range \[2, 5\) outside axis of size 4"):
        g.add_node("float_slice", [x], "bad", "y", "float32", ints={"axis": [2], "begin": [2], "end": [5]})
    with pytest.raises(ValueError, match=r"float_layer_norm \(bad\).*norm_weight"):
        g.add_normalization("float_layer_norm", x, "bad", "y", np.ones(3, np.float32), np.zeros(3, np.float32),
                            {"normalized_rank": [1]}, 1e-5, "float32")


@pytest.mark.parametrize("axis, begin, end", [(0, 1, 2), (1, 0, 3), (2, 2, 5), (-1, 4, 5)])
def test_slice_equals_torch(axis, begin, end):
    x = _random((3, 4, 5), 11)
    expected = torch.from_numpy(x).narrow(axis, begin, end - begin).numpy()
    np.testing.assert_array_equal(_run("float_slice", x, ints={"axis": [axis], "begin": [begin], "end": [end]}), expected)


def test_square_is_pytorchs_bit_for_bit():
    """x ** 2 is x * x, as PyTorch computes a power of 2 (not the C library's pow)."""
    x = _random((4, 1000), 5) * 1e3
    np.testing.assert_array_equal(_run_with_scalar("float_pow", x, 2.0), torch.from_numpy(x).pow(2).numpy())


@pytest.mark.parametrize("op", ["float_sum", "float_mean", "float_var"])
def test_reducing_trailing_axes_adds_in_the_same_order(op):
    """A reduction over the last axes (each output a contiguous run) takes its own loop: it must add in the order
    of the general one, which the same values reduced over a middle axis take."""
    x = _random((3, 7, 129), 9)
    floats = {"correction": 1.0} if op == "float_var" else {}
    trailing = _run(op, x, ints={"axes": [2], "keepdim": [0]}, floats=floats)
    middle = _run(op, np.ascontiguousarray(x.transpose(0, 2, 1)), ints={"axes": [1], "keepdim": [0]}, floats=floats)
    np.testing.assert_array_equal(trailing, middle)

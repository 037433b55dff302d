"""QuantizedValue, qnnpy's own quantized tensor (qnnpy/quantized_types.py): the interface its readers use,
and a dequantize equal, bit for bit, to PT2E's definition of the values it stands for."""
from __future__ import annotations

import pytest
import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  registers the quantized_decomposed ops

from qnnpy.quantized_types import QuantizedValue, is_quantized, is_tensor

_qd = torch.ops.quantized_decomposed


def _values(dtype: torch.dtype, shape: tuple[int, ...], seed: int = 0) -> torch.Tensor:
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max + 1, shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8])
def test_per_tensor_dequantize_is_pt2es(dtype):
    q = _values(dtype, (3, 5, 7))
    for scale, zero_point in [(0.0123456789, 3), (1e-30, -128 if dtype == torch.int8 else 255), (7.5, 0)]:
        value = QuantizedValue(q, scale, zero_point)
        info = torch.iinfo(dtype)
        want = _qd.dequantize_per_tensor(q, scale, zero_point, info.min, info.max, dtype)
        assert torch.equal(value.dequantize(), want)
        assert (value.q_scale(), value.q_zero_point(), value.qscheme()) == (scale, zero_point, torch.per_tensor_affine)


@pytest.mark.parametrize("axis", [0, 1, 3])
def test_per_channel_dequantize_is_pt2es(axis):
    q = _values(torch.int8, (4, 6, 2, 5), seed=axis)
    generator = torch.Generator().manual_seed(10 + axis)
    scales = torch.rand(q.shape[axis], generator=generator, dtype=torch.float64) * 0.1 + 1e-4
    zero_points = torch.randint(-5, 6, (q.shape[axis],), generator=generator)
    value = QuantizedValue(q, scales, zero_points, axis)
    want = _qd.dequantize_per_channel(q, scales.float(), zero_points, axis, -128, 127, torch.int8)
    assert torch.equal(value.dequantize(), want)
    assert value.q_per_channel_axis() == axis and value.qscheme() == torch.per_channel_affine
    assert torch.equal(value.q_per_channel_scales(), scales) and torch.equal(value.q_per_channel_zero_points(), zero_points)


def test_it_reads_as_a_quantized_tensor_does():
    q = _values(torch.uint8, (2, 3))
    value = QuantizedValue(q, 0.5, 7)
    assert value.dtype == torch.quint8 and value.shape == q.shape and value.dim() == 2 and value.numel() == 6
    assert value.int_repr() is q and value.detach() is value and not value.is_floating_point()
    assert is_quantized(value) and is_tensor(value)
    assert not is_quantized(torch.zeros(2)) and is_tensor(torch.zeros(2)) and not is_tensor(3.0)
    assert is_quantized(torch.quantize_per_tensor(torch.zeros(2), 0.5, 0, torch.quint8))


def test_qparams_of_the_other_scheme_and_misfit_qparams_are_refused():
    q = _values(torch.int8, (4, 3))
    with pytest.raises(RuntimeError, match=r"q_scale\(\) of values quantized per channel \(axis 0\)"):
        QuantizedValue(q, torch.ones(4), torch.zeros(4), 0).q_scale()
    with pytest.raises(RuntimeError, match=r"q_per_channel_axis\(\) of values quantized per tensor"):
        QuantizedValue(q, 1.0, 0).q_per_channel_axis()
    with pytest.raises(ValueError, match=r"3 scales / 3 zero points along axis 0 do not fit values of shape \(4, 3\)"):
        QuantizedValue(q, torch.ones(3), torch.zeros(3), 0)
    with pytest.raises(ValueError, match="quantized values must be uint8, int8 or int32, got torch.float32"):
        QuantizedValue(torch.zeros(2), 1.0, 0)

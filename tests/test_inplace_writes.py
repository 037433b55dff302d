"""In-place writes in a torch.export capture (the torchao route and PT2E): a write reaches every name of the
written tensor (the result of an earlier in-place op on it, a ``to`` that converted nothing) and no copy of it (a
clone taken before); a write into a slice or select reaches the tensor it views (scattered back, as Swin fills its
attention mask); a write through another view, read afterwards, is refused by name."""
from __future__ import annotations

import warnings
from typing import Callable

import numpy as np
import pytest
import torch
from torch import nn

pytest.importorskip("torchao.quantization")
from torchao.quantization import Int8WeightOnlyConfig, quantize_  # noqa: E402

import qnnpy  # noqa: E402
from qnnpy.errors import ConversionError  # noqa: E402


class _Writes(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 16), nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)
        y = h.clone()
        y.mul_(2)                    # a clone written: h keeps its value
        t = y.to(torch.float32)      # converts nothing: t is y
        t.add_(1)                    # written through t: y reads it
        return self.fc2(h) + y


class _LinearThenWrite(nn.Module):
    """A linear whose output ``write`` changes in place before it is read whole."""

    def __init__(self, write: Callable[[torch.Tensor], object]) -> None:
        super().__init__()
        self.fc, self.write = nn.Linear(16, 16), write

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        self.write(h)
        return h * 2


def _write_slices(h: torch.Tensor) -> None:
    h[:, 2:6].add_(1)                    # a slice written
    h[1].mul_(3)                         # a select written
    h[:, 8:12][0:2, 1:3].fill_(0.5)      # a slice of a slice


def _converted(model: nn.Module, x: torch.Tensor) -> qnnpy.QDQModule:
    quantize_(model, Int8WeightOnlyConfig())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return qnnpy.from_torch(model.eval(), (x,))


def test_a_write_reaches_the_tensor_and_not_its_clone():
    torch.manual_seed(0)
    model, x = _Writes(), torch.randn(3, 16)
    module = _converted(model, x)
    with torch.no_grad():
        expected = model(x).numpy()
    got = module.run(x.numpy()).dequantized
    assert np.abs(got - expected).max() <= 1e-5 * np.abs(expected).max()
    # Had the write to the clone reached h, or the write through t missed y, the output would move by about |h|.
    with torch.no_grad():
        h = model.fc1(x)
        wrong = (model.fc2(2 * h + 1) + 2 * h + 1).numpy()
    assert np.abs(got - wrong).max() > 0.1


def test_writes_into_slices_and_selects_reach_the_viewed_tensor():
    torch.manual_seed(0)
    model, x = _LinearThenWrite(_write_slices), torch.randn(3, 16)
    module = _converted(model, x)
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(module.run(x.numpy()).dequantized, expected, rtol=1e-5, atol=1e-5)


def test_a_write_through_another_view_is_refused():
    torch.manual_seed(0)
    with pytest.raises(ConversionError, match="writes through views other than slices and selects are not supported"):
        _converted(_LinearThenWrite(lambda h: h.t().add_(1)), torch.randn(3, 16))  # through a transpose

"""Normalization by the statistics of the input is inference too: instance norm (nn.InstanceNorm2d, with and
without affine parameters) in a PT2E model converts to float_group_norm with one group per channel, every such
node; batch statistics over a batch of several samples are refused for what they are."""
from __future__ import annotations

import pytest
import torch
from torch import nn

import qnnpy
from qnnpy.errors import UnsupportedOpsError
from pt2e_models import quantizer
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e


class InstanceNorms(nn.Module):
    """conv -> instance norm (affine) -> relu -> conv -> instance norm (no affine) -> relu -> conv."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1, self.norm1 = nn.Conv2d(3, 8, 3, padding=1), nn.InstanceNorm2d(8, affine=True)
        self.conv2, self.norm2 = nn.Conv2d(8, 8, 3, padding=1), nn.InstanceNorm2d(8)
        self.conv3 = nn.Conv2d(8, 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.norm1(self.conv1(x)))
        return self.conv3(torch.relu(self.norm2(self.conv2(x))))


class BatchStatistics(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.batch_norm(x, None, None, training=True)


def _pt2e(model: nn.Module, x: torch.Tensor, kind: str) -> torch.fx.GraphModule:
    torch.manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))  # affine parameters away from 1 and 0
    prepared = prepare_pt2e(torch.export.export(model.eval(), (x,), strict=True).module(), quantizer(kind))
    for seed in range(4):
        prepared(torch.randn(x.shape, generator=torch.Generator().manual_seed(seed)))
    return convert_pt2e(prepared)


@pytest.mark.parametrize("kind", ["x86", "xnnpack"])
def test_every_instance_norm_of_a_pt2e_model_converts_within_float_rounding(kind):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 12, 12)
    model = _pt2e(InstanceNorms(), x, kind)
    module = qnnpy.from_torch(model, (x,))
    norms = [n for n in module.nodes() if n["op"] == "float_group_norm"]
    assert [n["ints"]["num_groups"] for n in norms] == [[8], [8]]
    report = qnnpy.compare(model, module, [x, torch.randn(2, 3, 12, 12)], profiles=["fbgemm"], reference_inputs=True)
    for layer in report.layers["fbgemm"]:
        if layer.op == "float_group_norm":
            assert layer.max_relative < 1e-5, report.table()
        elif not layer.op.startswith("float_"):
            assert layer.max_lsb <= 1 and layer.fraction >= 0.999, report.table()


def test_batch_statistics_over_several_samples_are_refused_for_what_they_are():
    x = torch.randn(2, 3, 4, 4)
    model = _pt2e(nn.Sequential(nn.Conv2d(3, 3, 1), nn.ReLU(), BatchStatistics(), nn.Conv2d(3, 3, 1)), x, "x86")
    with pytest.raises(UnsupportedOpsError, match=r"batch_norm with the statistics of a batch of 2 samples "
                                                  r"\(training=True\) is not supported") as caught:
        qnnpy.from_torch(model, (x,))
    assert "eval mode" not in str(caught.value)

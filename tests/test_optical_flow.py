"""Optical flow: torchvision's RAFT (its feature and context encoders' instance norms, the correlation pyramid's
matmul and pools, grid sampling of the features at the flow's coordinates, the GRU update) under PT2E, and the
class of failure it found: a float op fed a quantized constant (the XNNPACK quantizer quantizes the cat of
RAFT's constant coordinate grids, which the capture folds into one quantized constant)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import torchvision
from torch import nn

import qnnpy

pytest.importorskip("torchao.quantization.pt2e")
from model_sweep import distance_bound, max_relative  # noqa: E402
from pt2e_models import quantizer  # noqa: E402
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e  # noqa: E402


def _pt2e(model: nn.Module, kind: str, examples: tuple[torch.Tensor, ...]) -> torch.fx.GraphModule:
    prepared = prepare_pt2e(torch.export.export(model.eval(), examples, strict=True).module(), quantizer(kind))
    prepared(*examples)
    prepared(*(-x for x in examples))
    return convert_pt2e(prepared)


class ConstantGrid(nn.Module):
    """grid_sample of conv features at a grid built from constants alone (torch.meshgrid, cat)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, 6), torch.linspace(-1, 1, 5), indexing="ij")
        grid = torch.cat([xs[None, :, :, None], ys[None, :, :, None] * 0.9], -1)
        return F.grid_sample(self.conv(x), grid, align_corners=True)


def test_a_float_op_reads_a_quantized_constant_dequantized():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8, 8)
    gm = _pt2e(ConstantGrid(), "xnnpack", (x,))
    module = qnnpy.from_torch(gm, (x,))
    ops = [n["op"] for n in module.nodes()]
    assert ops[ops.index("float_constant"):] == ["float_constant", "quantize", "dequantize", "float_grid_sample"]
    with torch.no_grad():
        expected = gm(x).numpy()
    assert np.abs(module.run(x.numpy()).dequantized - expected).max() <= 1e-5 * np.abs(expected).max()


@pytest.mark.parametrize("kind", ["xnnpack", pytest.param("x86", marks=pytest.mark.slow)])
def test_raft_small_converts_and_lands_within_pytorchs_own_spread(kind):
    """RAFT-small (random weights, 4 flow updates) on a 128x128 pair: end to end within the model sweep's bound,
    twice the distance of PyTorch's own eager run with oneDNN off (a random-weight recurrent net carries a
    one-step difference of a quantized op far: measured on Intel Xeon, XNNPACK 25% of the flow's range against
    PyTorch's own 17%, X86 8.6% against 8.6%)."""
    torch.manual_seed(0)

    class LastFlow(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.raft = torchvision.models.optical_flow.raft_small(weights=None)

        def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return self.raft(a, b, num_flow_updates=4)[-1]

    g = torch.Generator().manual_seed(0)
    a, b = (torch.rand(1, 3, 128, 128, generator=g) * 2 - 1 for _ in range(2))
    gm = _pt2e(LastFlow(), kind, (a, b))
    module = qnnpy.from_torch(gm, (a, b))
    assert {"float_grid_sample", "float_group_norm"} <= {n["op"] for n in module.nodes()}
    with torch.no_grad():
        theirs = [gm(a, b).numpy()]
    ours = [module.run(a.numpy(), b.numpy()).outputs[0].dequantized]
    with torch.backends.mkldnn.flags(enabled=False), torch.no_grad():
        floor = max_relative([gm(a, b).numpy()], theirs)
    assert max_relative(ours, theirs) <= distance_bound(0.0, floor)

"""Volumetric (video) models: 3-D convolutions and pools, which neither PT2E quantizer annotates, convert in float
(a 3-D convolution as one 2-D convolution per depth tap of its kernel, a 3-D pool as a 2-D pool over (H, W) and
one over D) around whatever the quantizer did quantize, and agree with PyTorch."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torchvision
from torch import nn

import qnnpy
from qnnpy import _core

pytest.importorskip("torchao.quantization.pt2e")
from model_sweep import distance_bound, max_relative, without_mkldnn  # noqa: E402
from pt2e_models import quantizer  # noqa: E402
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e  # noqa: E402


class Video(nn.Module):
    """Every 3-D layer kind with strides, paddings, dilations and groups, a residual add and a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv3d(3, 8, (3, 5, 5), stride=(1, 2, 2), padding=(1, 2, 2)), nn.BatchNorm3d(8),
                                  nn.ReLU())
        self.pool = nn.MaxPool3d((2, 3, 3), stride=(1, 2, 2), padding=(1, 1, 1), ceil_mode=True)
        self.grouped = nn.Conv3d(8, 8, 3, padding=(2, 1, 1), dilation=(2, 1, 1), groups=4)
        self.down = nn.AvgPool3d((2, 2, 2), count_include_pad=False, padding=(1, 0, 1))
        self.point = nn.Conv3d(8, 16, 1, bias=False)
        self.head = nn.Sequential(nn.AdaptiveAvgPool3d((1, 2, 2)), nn.Flatten(), nn.Linear(64, 5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.stem(x))
        x = torch.relu(x + self.grouped(x))
        return self.head(self.point(self.down(x)))


def _quantized(model: nn.Module, kind: str, shape: tuple[int, ...]) -> torch.fx.GraphModule:
    generator = torch.Generator().manual_seed(0)
    model.train()
    with torch.no_grad():
        for _ in range(2):
            model(torch.randn((2, *shape[1:]), generator=generator))
    model.eval()
    prepared = prepare_pt2e(torch.export.export(model, (torch.randn(shape, generator=generator),), strict=True).module(),
                            quantizer(kind))
    for _ in range(3):
        prepared(torch.randn(shape, generator=generator))
    return convert_pt2e(prepared)


@pytest.mark.parametrize("kind", ["x86", "xnnpack"])
def test_3d_layers_agree_with_pytorch_layer_by_layer(kind):
    """Each float layer fed PyTorch's inputs within float rounding (1e-5 of its range), each quantized one within a
    step; end to end within 1% of the output's range."""
    torch.manual_seed(0)
    shape = (1, 3, 6, 20, 18)
    gm = _quantized(Video(), kind, shape)
    xs = [torch.randn(shape, generator=torch.Generator().manual_seed(seed)) for seed in (1, 2)]
    module = qnnpy.from_torch(gm, (xs[0],))
    ops = {n["op"] for n in module.nodes()}
    assert {"float_conv2d", "float_max_pool2d", "float_avg_pool2d", "float_adaptive_avg_pool2d"} <= ops
    report = qnnpy.compare(gm, module, xs, profiles=["fbgemm"], reference_inputs=True)
    for layer in report.layers["fbgemm"]:
        if _core.op_info(layer.op)["kind"] == "float":
            assert layer.max_relative <= 1e-5, layer.source
        else:
            assert layer.max_lsb <= 1, layer.source
    for x in xs:
        with torch.no_grad():
            theirs = gm(x).numpy()
        ours = module.run(x.numpy(), profile="fbgemm").outputs[0].dequantized
        assert np.abs(ours - theirs).max() <= 0.01 * np.abs(theirs).max()


# torchvision's video models at the smallest clip each takes (S3D's 7x7 pool needs 224x224 and 16 frames, MViT its
# 16x224x224); R3D-18 in the default run, the others (20 to 130 s each here) with -m slow.
VIDEO_MODELS = [pytest.param("r3d_18", (1, 3, 8, 32, 32)),
                pytest.param("swin3d_t", (1, 3, 8, 112, 112), marks=pytest.mark.slow),
                pytest.param("s3d", (1, 3, 16, 224, 224), marks=pytest.mark.slow),
                pytest.param("mvit_v2_s", (1, 3, 16, 224, 224), marks=pytest.mark.slow)]


@pytest.mark.parametrize("name, shape", VIDEO_MODELS)
def test_torchvision_video_model_converts_and_agrees(name, shape):
    """A torchvision video model (random weights, real batch-norm statistics) under the XNNPACK quantizer, which
    quantizes its adds, linears and head: end to end within the bound the model sweep sets, twice the distance of
    PyTorch's own eager run with oneDNN off (the float convolutions summed in another order move a quantized add
    by a step, and a deep random-weight net carries it to the logits). Measured here: R3D-18 2.4%, Swin3D-T 2.5%,
    MViT-v2-S 14.4%, S3D 0.043% of the logits' range, each as far as (S3D: 0.040%) that eager run."""
    torch.manual_seed(0)
    gm = _quantized(getattr(torchvision.models.video, name)(weights=None), "xnnpack", shape)
    xs = [torch.randn(shape, generator=torch.Generator().manual_seed(seed)) for seed in (1, 2)]
    module = qnnpy.from_torch(gm, (xs[0],))
    with torch.no_grad():
        theirs = [gm(x).numpy() for x in xs]
    ours = [module.run(x.numpy()).outputs[0].dequantized for x in xs]
    floor = max_relative([o[0] for o in without_mkldnn(gm, xs)], theirs)
    assert max_relative(ours, theirs) <= distance_bound(0.0, floor)


class Trilinear(nn.Module):
    """A quantized 2-D conv over the frames of a clip, then the clip resampled in float (trilinear)."""

    def __init__(self, resample: dict) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.resample = resample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, d, h, w = x.shape
        frames = self.conv(x.transpose(1, 2).reshape(n * d, c, h, w))
        clip = frames.reshape(n, d, 4, h, w).transpose(1, 2)
        return nn.functional.interpolate(clip, mode="trilinear", **self.resample)


@pytest.mark.parametrize("resample", [{"scale_factor": (2, 1.5, 2)}, {"size": (7, 5, 9), "align_corners": True},
                                      {"scale_factor": (0.5, 1.7, 0.8), "recompute_scale_factor": True},
                                      {"scale_factor": (1.5, 2.5, 1.25)}])
def test_trilinear_resampling_agrees_with_pytorch_to_float_rounding(resample):
    """upsample_trilinear3d as two bilinear resamplings, over (H, W) then over D (PyTorch interpolates D outermost
    too, but forms its weights and products its own way): fed PyTorch's own input, the float output within 1e-6 of
    its range (measured: 54 to 95% of the values identical, the largest difference 4.2e-7 of the range)."""
    torch.manual_seed(0)
    shape = (1, 3, 4, 6, 5)
    gm = _quantized(Trilinear(resample), "x86", shape)
    xs = [torch.randn(shape, generator=torch.Generator().manual_seed(seed)) for seed in (1, 2)]
    module = qnnpy.from_torch(gm, (xs[0],))
    assert "float_upsample_bilinear2d" in {n["op"] for n in module.nodes()}
    report = qnnpy.compare(gm, module, xs, profiles=["fbgemm"], reference_inputs=True)
    final = [row for row in report.layers["fbgemm"] if row.source == "upsample_trilinear3d"]
    assert final and final[-1].total > 0 and final[-1].max_relative <= 1e-6, report.table()

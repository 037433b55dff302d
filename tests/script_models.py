"""Quantized models for the TorchScript tests: a small ResNet, an FX-lowered functional model, an unsupported one.

No ``from __future__ import annotations`` here: FX copies forward's annotations
into the lowered code, and TorchScript cannot resolve them as strings.
"""
import io

import torch
import torch.nn.functional as F
from torch import nn
from torch.ao.nn.quantized import FloatFunctional

from qnnpy import zoo


class Block(nn.Module):
    """A ResNet basic block: conv-bn-relu, conv-bn, optional 1x1 downsample, add, in-place ReLU."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                           if stride != 1 or cin != cout else None)
        self.skip_add = FloatFunctional()
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.bn2(self.conv2(self.relu1(self.bn1(self.conv1(x)))))
        return self.relu(self.skip_add.add(out, identity))

    def fuse_lists(self, prefix: str) -> list[list[str]]:
        lists = [[f"{prefix}.conv1", f"{prefix}.bn1", f"{prefix}.relu1"], [f"{prefix}.conv2", f"{prefix}.bn2"]]
        if self.downsample is not None:
            lists.append([f"{prefix}.downsample.0", f"{prefix}.downsample.1"])
        return lists


class TinyResNet(nn.Module):
    """ResNet-18's structure in miniature: stem, max pool, two blocks, average pool, flatten, fc."""

    def __init__(self):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.conv1 = nn.Conv2d(3, 8, 3, 2, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = Block(8, 8, 1)
        self.layer2 = Block(8, 16, 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, 10)
        self.dequant = torch.ao.quantization.DeQuantStub()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(self.quant(x)))))
        x = self.avgpool(self.layer2(self.layer1(x)))
        return self.dequant(self.fc(x.reshape(x.size(0), -1)))  # a size read: specialised to the example


def quantized_tiny_resnet(seed: int = 0) -> torch.nn.Module:
    """TinyResNet with random BatchNorm statistics, fused and quantized for fbgemm (per-channel weights)."""
    torch.manual_seed(seed)
    model = TinyResNet()
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            nn.init.uniform_(m.weight, 0.5, 1.5)
            nn.init.normal_(m.bias, std=0.3)
            m.running_mean.normal_(std=0.2)
            m.running_var.uniform_(0.5, 2.0)
    model.eval()
    fuse = [["conv1", "bn1", "relu"], *model.layer1.fuse_lists("layer1"), *model.layer2.fuse_lists("layer2")]
    torch.ao.quantization.fuse_modules(model, fuse, inplace=True)
    return zoo.quantize_eager(model, "fbgemm", zoo.calibration_data(4, 4, (3, 32, 32), seed + 1))


class Functional(nn.Module):
    """Functional conv and linear, so FX lowering keeps their packed params as graph attributes."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(8, 2, 3, 3) * 0.3)
        self.bias = nn.Parameter(torch.randn(8) * 0.5)
        self.fc_weight = nn.Parameter(torch.randn(5, 8) * 0.3)
        self.fc_bias = nn.Parameter(torch.randn(5) * 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # stride, padding, dilation, groups: explicit lists (FX lowering of F.conv2d needs them spelled out)
        x = F.relu(F.conv2d(x, self.weight, self.bias, [2, 1], [1, 2], [2, 1], 2))
        x = torch.flatten(F.adaptive_avg_pool2d(x, (1, 1)), 1)
        return F.linear(x, self.fc_weight, self.fc_bias)


FUNCTIONAL_CONV = {"spatial_dims": 2, "stride": [2, 1], "padding": [1, 2], "dilation": [2, 1],
                   "output_padding": [0, 0], "groups": 2, "transpose": False}


def quantized_functional_fx(seed: int = 0) -> tuple[torch.fx.GraphModule, torch.Tensor]:
    """``Functional`` quantized with prepare_fx / convert_fx for fbgemm, and an example input."""
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

    torch.manual_seed(seed)
    model = Functional().eval()
    data = zoo.calibration_data(4, 2, (4, 12, 10), seed + 1)
    torch.backends.quantized.engine = "fbgemm"
    prepared = prepare_fx(model, torch.ao.quantization.get_default_qconfig_mapping("fbgemm"), (data[0],))
    with torch.no_grad():
        for x in data:
            prepared(x)
    return convert_fx(prepared), zoo.calibration_data(1, 1, (4, 12, 10), seed + 2)[0]


class Unsupported(nn.Module):
    """A conv followed by two ops qnnpy has no converter for: pixel_shuffle and threshold."""

    def __init__(self):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.conv = nn.Conv2d(3, 4, 3)
        self.shuffle = nn.PixelShuffle(2)
        self.act = nn.Threshold(0.1, 0.0)
        self.dequant = torch.ao.quantization.DeQuantStub()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dequant(self.act(self.shuffle(self.conv(self.quant(x)))))


def quantized_unsupported() -> torch.nn.Module:
    torch.manual_seed(0)
    model = Unsupported().eval()
    return zoo.quantize_eager(model, "fbgemm", zoo.calibration_data(2, 2, (3, 8, 8), 1))


def save_and_load(module: torch.jit.ScriptModule) -> torch.jit.ScriptModule:
    """Round trip through ``torch.jit.save`` / ``torch.jit.load``."""
    buffer = io.BytesIO()
    torch.jit.save(module, buffer)
    buffer.seek(0)
    return torch.jit.load(buffer)

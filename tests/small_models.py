"""Small quantized models, one per op or op variant, for conversion tests."""
from __future__ import annotations

import torch
from torch import nn
from torch.ao.quantization import DeQuantStub, QConfig, QuantStub, default_observer, default_weight_observer

from qnnpy import zoo

PER_TENSOR_QCONFIG = QConfig(activation=default_observer, weight=default_weight_observer)


class Wrapped(nn.Module):
    """QuantStub -> body -> DeQuantStub."""

    def __init__(self, body: nn.Module):
        super().__init__()
        self.quant = QuantStub()
        self.body = body
        self.dequant = DeQuantStub()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dequant(self.body(self.quant(x)))


class ConvBlock(nn.Module):
    def __init__(self, cin: int, cout: int, relu: bool, **conv_kw):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, **conv_kw)
        self.relu = nn.ReLU() if relu else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.conv(x))


class Residual(nn.Module):
    """Two convs joined by a FloatFunctional add (or add_relu)."""

    def __init__(self, relu: bool):
        super().__init__()
        self.a = nn.Conv2d(3, 6, 3, padding=1)
        self.b = nn.Conv2d(3, 6, 1)
        self.join = nn.quantized.FloatFunctional()
        self.relu = relu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self.a(x), self.b(x)
        return self.join.add_relu(a, b) if self.relu else self.join.add(a, b)


class Head(nn.Module):
    """conv -> relu -> max_pool -> adaptive_avg_pool -> flatten -> linear(+relu)."""

    def __init__(self, linear_relu: bool):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.avg = nn.AdaptiveAvgPool2d((2, 2))
        self.fc = nn.Linear(32, 10)
        self.fc_relu = nn.ReLU() if linear_relu else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.avg(self.pool(self.relu(self.conv(x))))
        return self.fc_relu(self.fc(torch.flatten(x, 1)))


def quantized(body: nn.Module, shape: tuple[int, ...], per_channel: bool = True, fuse: list[list[str]] | None = None,
              seed: int = 0) -> tuple[nn.Module, torch.Tensor]:
    """Wrap, fuse, quantize on generated data; return the model and an example input."""
    torch.manual_seed(seed)
    for p in body.parameters():
        if p.dim() == 1:
            nn.init.normal_(p, std=0.5)  # non-trivial biases
    model = Wrapped(body).eval()
    if fuse:
        torch.ao.quantization.fuse_modules(model, fuse, inplace=True)
    data = zoo.calibration_data(4, 4, shape, seed + 1)
    model.qconfig = torch.ao.quantization.get_default_qconfig("fbgemm") if per_channel else PER_TENSOR_QCONFIG
    torch.backends.quantized.engine = "fbgemm"
    torch.ao.quantization.prepare(model, inplace=True)
    with torch.no_grad():
        for x in data:
            model(x)
    torch.ao.quantization.convert(model, inplace=True)
    return model, zoo.calibration_data(1, 2, shape, seed + 2)[0]


def conv_cases() -> dict[str, tuple[nn.Module, tuple[int, ...], bool, list[list[str]] | None]]:
    """name -> (body, input shape, per_channel, fuse list)."""
    return {
        "conv_per_tensor": (ConvBlock(3, 8, False, kernel_size=3), (3, 12, 12), False, None),
        "conv_per_channel_relu": (ConvBlock(3, 8, True, kernel_size=3, padding=1), (3, 12, 12), True,
                                  [["body.conv", "body.relu"]]),
        "conv_stride2_pad": (ConvBlock(4, 6, False, kernel_size=5, stride=2, padding=2), (4, 15, 15), True, None),
        "conv_dilation2": (ConvBlock(4, 6, True, kernel_size=3, dilation=2, padding=2), (4, 13, 11), True,
                           [["body.conv", "body.relu"]]),
        "conv_groups": (ConvBlock(6, 9, False, kernel_size=3, groups=3, padding=1), (6, 10, 10), True, None),
        "conv_depthwise": (ConvBlock(8, 8, True, kernel_size=3, groups=8, stride=2, padding=1), (8, 14, 14), True,
                           [["body.conv", "body.relu"]]),
        "conv_no_bias_1x1": (ConvBlock(5, 7, False, kernel_size=1, bias=False), (5, 9, 9), True, None),
        "conv_asymmetric_kernel": (ConvBlock(3, 4, False, kernel_size=(1, 7), padding=(0, 3)), (3, 8, 16), True, None),
    }

"""Small quantized models, one per op or op variant, for conversion tests."""
from __future__ import annotations

import numpy as np
import torch
from torch import nn
import torch.ao.nn.quantized as nnq
from torch.ao.quantization import DeQuantStub, QConfig, QuantStub, default_observer, default_weight_observer
from torch.ao.quantization.quantization_mappings import (get_default_qconfig_propagation_list,
                                                          get_default_static_quant_module_mappings)

import qnnpy
from qnnpy import zoo

PER_TENSOR_QCONFIG = QConfig(activation=default_observer, weight=default_weight_observer)
# Eager mode has no mapping for nn.Softmax (FX mode has one): added so op cases can quantize it.
EAGER_EXTRA_MAPPINGS = {nn.Softmax: nnq.Softmax}


class Wrapped(nn.Module):
    """QuantStub -> body -> DeQuantStub."""

    def __init__(self, body: nn.Module):
        super().__init__()
        self.quant = QuantStub()
        self.body = body
        self.dequant = DeQuantStub()

    def forward(self, x: torch.Tensor):
        y = self.body(self.quant(x))
        return tuple(self.dequant(t) for t in y) if isinstance(y, tuple) else self.dequant(y)


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
    torch.ao.quantization.prepare(model, inplace=True,
                                  allow_list=get_default_qconfig_propagation_list() | set(EAGER_EXTRA_MAPPINGS))
    with torch.no_grad():
        for x in data:
            model(x)
    torch.ao.quantization.convert(model, {**get_default_static_quant_module_mappings(), **EAGER_EXTRA_MAPPINGS},
                                  inplace=True)
    return model, zoo.calibration_data(1, 2, shape, seed + 2)[0]


def conv_cases() -> dict[str, tuple[nn.Module, tuple[int, ...], bool, list[list[str]] | None]]:
    """name -> (body, input shape, per_channel, fuse list) (weights from a fixed seed)."""
    torch.manual_seed(0)
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


class Activations(nn.Module):
    """conv -> one activation module (and optional second op) on the quantized output."""

    def __init__(self, act: nn.Module, cin: int = 3, cout: int = 13):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1)
        self.act = act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.conv(x))


class SqueezeExcite(nn.Module):
    """MobileNetV3's gating: pool -> conv -> hardsigmoid, multiplied (broadcast) onto the input."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 11, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Conv2d(11, 11, 1)
        self.gate = nn.Hardsigmoid()
        self.mul = nn.quantized.FloatFunctional()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        return self.mul.mul(self.gate(self.fc(self.pool(x))), x)


class Scalars(nn.Module):
    """add_scalar and mul_scalar (positive and negative) through FloatFunctional."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 5, 3)
        self.add = nn.quantized.FloatFunctional()
        self.mul = nn.quantized.FloatFunctional()
        self.mul_neg = nn.quantized.FloatFunctional()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.add.add_scalar(self.conv(x), 0.7)
        return self.mul_neg.mul_scalar(self.mul.mul_scalar(x, 1.5), -0.5)


class Concat(nn.Module):
    """Channels_last cat of three convs with different qparams (fast path, odd channel counts)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 13, 3, padding=1)
        self.b = nn.Conv2d(3, 40, 1)
        self.c = nn.Conv2d(3, 3, 1)
        self.cat = nn.quantized.FloatFunctional()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.cat.cat([self.a(x), self.b(x), self.c(x)], dim=1)


class ChannelShuffle(nn.Module):
    """ShuffleNetV2's unit: chunk, conv on one half, cat (generic path), channel shuffle."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 12, 1)
        self.branch = nn.Conv2d(6, 6, 3, padding=1)
        self.cat = nn.quantized.FloatFunctional()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x1, x2 = self.conv(x).chunk(2, dim=1)
        x = self.cat.cat([x1, self.branch(x2)], dim=1)
        b, c, h, w = x.shape
        x = torch.transpose(x.view(b, 2, c // 2, h, w), 1, 2).contiguous()
        return x.view(b, c, h, w).mean([2, 3])


class Pools(nn.Module):
    """avg_pool2d variants (channels_last and contiguous inputs), then nearest upsampling."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 21, 3)
        self.pool = nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        a = self.pool(x)
        b = torch.nn.functional.avg_pool2d(x.contiguous(), 3, stride=1, padding=1)
        c = torch.nn.functional.avg_pool2d(x, 2, divisor_override=3)
        return self.up(a), b, torch.nn.functional.interpolate(c, size=(5, 7), mode="nearest")


class Normalized(nn.Module):
    """conv -> a separate (unfused) BatchNorm2d with non-trivial running statistics -> relu."""

    def __init__(self, relu: bool):
        super().__init__()
        self.conv = nn.Conv2d(3, 21, 3, padding=1)
        self.bn = nn.BatchNorm2d(21)
        self.bn.running_mean.normal_(0.0, 0.5)
        self.bn.running_var.uniform_(0.2, 3.0)
        self.relu = nn.ReLU() if relu else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.bn(self.conv(x)))


class Sequence1d(nn.Module):
    """conv1d (stride, padding, groups) -> relu -> conv1d (dilation), on (N, C, L) signals."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv1d(4, 10, 5, stride=2, padding=2, groups=2)
        self.relu = nn.ReLU()
        self.b = nn.Conv1d(10, 7, 3, dilation=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.relu(self.a(x)))


class Upsampling(nn.Module):
    """conv -> transposed convs (stride 2 with output padding; groups, dilation and a large padding)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.up = nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1)
        self.mix = nn.ConvTranspose2d(6, 4, (3, 2), stride=(1, 3), padding=(2, 0), dilation=(1, 2), groups=2)
        # PyTorch quantizes transposed-conv weights per tensor only.
        per_tensor = QConfig(activation=torch.ao.quantization.get_default_qconfig("fbgemm").activation,
                             weight=default_weight_observer)
        self.up.qconfig = self.mix.qconfig = per_tensor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mix(self.up(self.conv(x)))


class Volumetric(nn.Module):
    """conv3d (strides, paddings, dilation along H) -> relu -> grouped conv3d with depth padding."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 8, 3, stride=(2, 1, 2), padding=(1, 1, 0), dilation=(1, 2, 1))
        self.relu = nn.ReLU()
        self.mix = nn.Conv3d(8, 6, (2, 3, 1), groups=2, padding=(1, 0, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mix(self.relu(self.conv(x)))


class Pool3d(nn.Module):
    """conv3d -> max_pool3d (depth padding and dilation along W, ceil mode) on the quantized tensor."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 5, 3, padding=1)
        self.pool = nn.MaxPool3d((2, 3, 3), stride=(1, 2, 2), padding=(1, 1, 0), dilation=(1, 1, 2), ceil_mode=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(self.conv(x))


class GlobalPool3d(nn.Module):
    """conv3d -> the global adaptive_avg_pool3d of video models, on the quantized tensor."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 6, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool3d(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(self.conv(x))


class AvgPool3dWindows(nn.Module):
    """conv3d -> avg_pool3d with padding and ceil mode (windows clipped at the borders, count_include_pad) on the
    quantized channels_last_3d tensor; 11 channels: PyTorch's vector and tail channels."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 11, 3, padding=1)
        self.pool = nn.AvgPool3d((3, 2, 3), stride=(1, 2, 2), padding=(1, 1, 1), ceil_mode=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(self.conv(x))


class GridPool3d(nn.Module):
    """adaptive_avg_pool3d to (2, 3, 2) of the quantized input itself (contiguous: PyTorch's other rule), then of the
    conv3d's channels_last_3d output to (3, 1, 2)."""

    def __init__(self):
        super().__init__()
        self.grid = nn.AdaptiveAvgPool3d((2, 3, 2))
        self.conv = nn.Conv3d(3, 9, (1, 3, 1))
        self.pool = nn.AdaptiveAvgPool3d((3, 1, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(self.conv(self.grid(x)))


class Regrid(nn.Module):
    """conv -> flatten -> reshape back (a contiguous copy in PyTorch) -> avg_pool2d (its contiguous rule: the zero point is added before rounding, and 2x2 windows make ties)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 9, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        n, c, h, w = y.shape
        return torch.nn.functional.avg_pool2d(torch.flatten(y, 1).reshape(n, c, h, w), 2)


class LinearOverLastAxis(nn.Module):
    """Linears on rank-4 activations (the runtime stores those NHWC): over the last axis of an NCHW
    tensor, then, as ConvNeXt and MLP-Mixer blocks do, over the channels after a permute; a conv
    between them reads the first one's output."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.along_width = nn.Linear(10, 7)
        self.mix = nn.Conv2d(8, 8, 1)
        self.along_channels = nn.Linear(8, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.mix(self.along_width(self.conv(x)))
        return self.along_channels(y.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


def op_cases() -> dict[str, tuple[nn.Module, tuple[int, ...]]]:
    """name -> (body, input shape) for the ops beyond conv/linear/add (weights from a fixed seed)."""
    torch.manual_seed(0)
    return {
        "hardswish": (Activations(nn.Hardswish()), (3, 9, 11)),
        "hardsigmoid": (Activations(nn.Hardsigmoid()), (3, 9, 11)),
        "sigmoid": (Activations(nn.Sigmoid()), (3, 9, 11)),
        "leaky_relu": (Activations(nn.LeakyReLU(0.13)), (3, 9, 11)),
        "relu6": (Activations(nn.ReLU6()), (3, 9, 11)),
        "hardtanh": (Activations(nn.Hardtanh(-0.5, 0.75)), (3, 9, 11)),
        "squeeze_excite_mul": (SqueezeExcite(), (3, 10, 10)),
        "add_mul_scalar": (Scalars(), (3, 9, 9)),
        "cat_nhwc": (Concat(), (3, 7, 9)),
        "channel_shuffle_mean": (ChannelShuffle(), (3, 9, 7)),
        "avg_pool_upsample": (Pools(), (3, 12, 13)),
        "batch_norm": (Normalized(False), (3, 7, 9)),
        "conv1d": (Sequence1d(), (4, 29)),
        "conv_transpose2d": (Upsampling(), (3, 7, 9)),
        "upsample_scale_factor": (Activations(nn.Upsample(scale_factor=1.7, mode="nearest")), (3, 5, 7)),
        "upsample_recomputed_scale": (Activations(nn.Upsample(scale_factor=1.7, recompute_scale_factor=True)), (3, 5, 7)),
        "reshape_then_avg_pool": (Regrid(), (3, 8, 9)),
        "elu": (Activations(nn.ELU(alpha=0.7)), (3, 9, 11)),  # the cases above keep their seeded weights
        "quantized_tanh": (Activations(nn.Tanh()), (3, 9, 11)),
        "quantized_layer_norm": (Activations(nn.LayerNorm([9, 11])), (3, 9, 11)),
        "quantized_group_norm": (Activations(nn.GroupNorm(4, 12), cout=12), (3, 9, 11)),
        "quantized_instance_norm2d": (Activations(nn.InstanceNorm2d(13, affine=True)), (3, 9, 11)),
        "quantized_softmax": (Activations(nn.Softmax(dim=1)), (3, 9, 11)),
        "dilated_max_pool": (Activations(nn.MaxPool2d(3, stride=1, padding=1, dilation=2)), (3, 9, 11)),
        "linear_on_rank4": (LinearOverLastAxis(), (3, 12, 10)),
        "conv3d": (Volumetric(), (3, 5, 9, 8)),
        "max_pool3d": (Pool3d(), (3, 4, 9, 11)),
        "adaptive_avg_pool3d": (GlobalPool3d(), (3, 5, 7, 6)),
        "avg_pool3d": (AvgPool3dWindows(), (3, 5, 9, 8)),
        "adaptive_avg_pool3d_grid": (GridPool3d(), (3, 5, 9, 7)),
    }


def small_zoo_modules(sizes: dict[str, int], seed: int) -> dict[str, tuple[qnnpy.QDQModule, np.ndarray]]:
    """torchvision's quantized models ``{name: image size}`` at small inputs (two calibration batches of two),
    each converted, with one input of its size drawn with ``seed``."""
    modules = {}
    for name, size in sizes.items():
        model = zoo.quantized_torchvision(name, image_size=size, calibration_batches=2, batch_size=2)
        x = zoo.calibration_data(1, 1, (3, size, size), seed=seed)[0]
        modules[name] = (qnnpy.from_torch(model, (x,)), x.numpy())
    return modules

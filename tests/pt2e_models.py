"""PT2E-quantized test models: torch.export (strict) + torchao's prepare_pt2e / calibrate / convert_pt2e.

``x86`` uses torchao's X86InductorQuantizer (uint8 activations, per-channel int8
weights); ``xnnpack`` the int8-symmetric config of torchao's testing XNNPACKQuantizer
(int8 activations, per-channel weights in [-127, 127]), the annotations ExecuTorch's
XNNPACKQuantizer makes. Batch-norm statistics are drawn at random so that the folded
conv biases are not all zero.
"""
from __future__ import annotations

import functools

import torch
import torchvision
from torch import nn
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
    X86InductorQuantizer,
    get_default_x86_inductor_quantization_config,
)
from torchao.testing.pt2e._xnnpack_quantizer import XNNPACKQuantizer, get_symmetric_quantization_config

from small_models import LinearOverLastAxis

INPUT = (1, 3, 32, 32)
CALIBRATION = 4


class FloatOps(nn.Module):
    """A small net whose X86 quantization leaves every op of qnnpy's float family in float: a conv whose
    output an add consumes (float conv, add, relu), a hardswish after a conv, a squeeze-excite gate
    (hardsigmoid times the features), a float relu6 (hardtanh), pooling, flatten and a float head."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.conv3 = nn.Conv2d(8, 8, 1)
        self.gate = nn.Conv2d(8, 8, 1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = torch.relu(self.conv1(x))
        b = torch.relu(self.conv2(a) + a)
        c = nn.functional.hardswish(self.conv3(b))
        g = nn.functional.hardsigmoid(self.gate(nn.functional.adaptive_avg_pool2d(c, 1)))
        d = nn.functional.hardtanh(c * g, 0.0, 6.0)
        e = nn.functional.adaptive_avg_pool2d(d, 1)
        return self.fc(torch.flatten(e, 1))


class ShuffleUnit(nn.Module):
    """ShuffleNetV2's unit in small: a conv, the channels split in two halves, one half through a conv, the
    halves joined again and shuffled, a global mean. X86InductorQuantizer leaves the split, the join (a float
    cat), the shuffle (view, transpose, view) and the mean in float."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.branch = nn.Conv2d(4, 4, 3, padding=1)
        self.head = nn.Conv2d(8, 8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = torch.relu(self.stem(x)).chunk(2, dim=1)
        y = torch.cat((a, torch.relu(self.branch(b))), dim=1)
        n, c, h, w = y.shape
        y = y.view(n, 2, c // 2, h, w).transpose(1, 2).contiguous().view(n, c, h, w)
        return torch.relu(self.head(y)).mean([2, 3])


class ConvPool(nn.Module):
    """A conv, a ReLU and an adaptive average pool (to 1x1 by default): under the XNNPACK-style config a
    quantized island PT2E computes in float (to 1x1 its float mean; qnnpy's ``float_mean`` nodes)."""

    def __init__(self, channels: int = 8, output_size: tuple[int, int] = (1, 1)):
        super().__init__()
        self.conv = nn.Conv2d(3, channels, 1)
        self.output_size = output_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.adaptive_avg_pool2d(torch.relu(self.conv(x)), self.output_size)


def _randomize_batch_norms(model: nn.Module) -> nn.Module:
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.normal_(0, 0.1)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.normal_(0, 0.1)
    return model


def float_model(name: str) -> nn.Module:
    """A torchvision model (weights=None, random batch-norm statistics), ``"float_ops"``, ``"shuffle_unit"`` or
    ``"linear_on_rank4"`` (small_models.LinearOverLastAxis)."""
    torch.manual_seed(0)
    if name == "float_ops":
        return FloatOps().eval()
    if name == "linear_on_rank4":
        return LinearOverLastAxis().eval()
    if name == "shuffle_unit":
        return ShuffleUnit().eval()
    return _randomize_batch_norms(getattr(torchvision.models, name)(weights=None)).eval()


def inputs(count: int, seed: int = 1, shape: tuple[int, ...] = INPUT) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=generator) for _ in range(count)]


def quantizer(kind: str):
    if kind == "x86":
        return X86InductorQuantizer().set_global(get_default_x86_inductor_quantization_config())
    if kind == "xnnpack":
        return XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))
    raise ValueError(kind)


@functools.lru_cache(maxsize=None)
def pt2e(name: str, kind: str, fold_quantize: bool = True, shape: tuple[int, ...] = INPUT) -> torch.fx.GraphModule:
    """The converted PT2E GraphModule of ``name`` under quantizer ``kind`` for inputs of ``shape`` (cached).

    ``strict=True``: non-strict export (the default) records no ``source_fn_stack``, and torchao then
    groups nodes by module path, which merges the two calls of ResNet's shared ``relu`` module into one
    partition ("Input partition has more than one output node" in X86InductorQuantizer).
    """
    model = float_model(name)
    exported = torch.export.export(model, (inputs(1, shape=shape)[0],), strict=True).module()
    prepared = prepare_pt2e(exported, quantizer(kind))
    for x in inputs(CALIBRATION, seed=2, shape=shape):
        prepared(x)
    return convert_pt2e(prepared, fold_quantize=fold_quantize)

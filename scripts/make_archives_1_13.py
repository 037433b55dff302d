"""Writes the TorchScript archive corpus of tests/data/archives_1_13/ with PyTorch 1.13.

Run it with the system Python that Debian's python3-torch (PyTorch 1.13) serves, outside
qnnpy's venv, from the repository root:

    /usr/bin/python3 scripts/make_archives_1_13.py

It imports torch only (not qnnpy). For every model, quantization recipe and capture mode
it writes ``<name>.pt`` (``torch.jit.save``) and ``<name>.npz``: the example input ``x``,
a second input ``check``, and that torch's float outputs on both under its qnnpack
engine (``out_x``, ``out_check``: dequantized, so equal floats mean equal integers),
plus the torch version. Recipes: ``qnnpack`` (per-tensor weights,
qnnpack's default qconfig) and ``fbgemm`` (per-channel weights, reduce_range
activations: fbgemm's default qconfig). Debian's torch 1.13 has no fbgemm engine, so
every saved output is computed by the qnnpack engine. Models are small (a few KB each).
"""
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.ao.quantization import DeQuantStub, QuantStub

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "archives_1_13"


class SmallCnn(nn.Module):
    """conv + relu6, adds (add, add_relu), average pooling and a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.quant = QuantStub()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.relu6 = nn.ReLU6()
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.relu2 = nn.ReLU()
        self.add = nn.quantized.FloatFunctional()
        self.conv3 = nn.Conv2d(8, 8, 1)
        self.add_relu = nn.quantized.FloatFunctional()
        self.pool = nn.AvgPool2d(2)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 10)
        self.dequant = DeQuantStub()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu6(self.conv1(self.quant(x)))
        y = self.add.add(self.relu2(self.conv2(x)), x)
        y = self.add_relu.add_relu(self.conv3(y), y)
        y = self.gap(self.pool(y))
        return self.dequant(self.fc(torch.flatten(y, 1)))


class OpMix(nn.Module):
    """The quantized activations, scalar ops, cat, mean, pools, upsampling and a transposed conv."""

    def __init__(self) -> None:
        super().__init__()
        self.quant = QuantStub()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.hardswish = nn.Hardswish()
        self.sigmoid = nn.Sigmoid()
        self.leaky = nn.LeakyReLU(0.1)
        self.elu = nn.ELU(0.5)
        self.hardtanh = nn.Hardtanh(-0.5, 1.0)
        self.bn = nn.BatchNorm2d(6)
        self.cat = nn.quantized.FloatFunctional()
        self.scalars = nn.quantized.FloatFunctional()
        self.times = nn.quantized.FloatFunctional()
        self.mul = nn.quantized.FloatFunctional()
        self.up = nn.ConvTranspose2d(12, 4, 2, stride=2)
        self.drop = nn.Dropout(0.3)
        self.dequant = DeQuantStub()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.bn(self.conv(self.quant(x)))
        a = self.hardswish(x)
        b = self.leaky(self.hardtanh(x))
        c = self.cat.cat([self.elu(a), F.relu6(b)], 1)
        c = self.times.mul_scalar(self.scalars.add_scalar(c, 0.25), 0.5)
        c = F.max_pool2d(c, 2)
        c = self.mul.mul(c, self.sigmoid(c.mean([2, 3], keepdim=True)))
        c = self.drop(F.interpolate(self.up(c), scale_factor=2.0, mode="nearest"))
        first, second = torch.chunk(c, 2, dim=1)
        return self.dequant(F.avg_pool2d(torch.cat([second, first], 1), 3, stride=2, padding=1))


class Signal1d(nn.Module):
    """conv1d + relu (fused), conv1d, transpose and a linear."""

    def __init__(self) -> None:
        super().__init__()
        self.quant = QuantStub()
        self.conv1 = nn.Conv1d(4, 8, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv1d(8, 6, 3, stride=2)
        self.fc = nn.Linear(6, 5)
        self.relu2 = nn.ReLU()
        self.dequant = DeQuantStub()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv2(self.relu1(self.conv1(self.quant(x))))
        return self.dequant(self.relu2(self.fc(y.transpose(1, 2).contiguous())))


# name -> (class, input shape, modules to fuse)
MODELS = {
    "small_cnn": (SmallCnn, (1, 3, 16, 16), [["conv2", "relu2"]]),
    "op_mix": (OpMix, (1, 3, 12, 12), [["conv", "bn"]]),  # 1.13's scripted nnq.BatchNorm2d fails once loaded
    "signal_1d": (Signal1d, (1, 4, 17), [["conv1", "relu1"], ["fc", "relu2"]]),
}
RECIPES = ("qnnpack", "fbgemm")


def _calibrated(model_class: type, shape: tuple, fuse: list, recipe: str, seed: int) -> nn.Module:
    torch.manual_seed(seed)
    model = model_class().eval()
    for p in model.parameters():
        if p.dim() == 1:
            nn.init.normal_(p, std=0.3)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.normal_(0, 0.2)
            m.running_var.uniform_(0.5, 2.0)
    if fuse:
        torch.ao.quantization.fuse_modules(model, fuse, inplace=True)
    model.qconfig = torch.ao.quantization.get_default_qconfig(recipe)
    for m in model.modules():
        if isinstance(m, nn.ConvTranspose2d):  # per-channel weights are refused for transposed convs
            m.qconfig = torch.ao.quantization.QConfig(activation=model.qconfig.activation,
                                                      weight=torch.ao.quantization.default_weight_observer)
    torch.ao.quantization.prepare(model, inplace=True)
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn(4, *shape[1:]))
    torch.ao.quantization.convert(model, inplace=True)
    return model


def main() -> int:
    if not torch.__version__.startswith("1.13"):
        print(f"expected PyTorch 1.13 (Debian's python3-torch), found {torch.__version__}", file=sys.stderr)
        return 1
    torch.backends.quantized.engine = "qnnpack"
    OUT.mkdir(parents=True, exist_ok=True)
    for index, (model_name, (model_class, shape, fuse)) in enumerate(MODELS.items()):
        for recipe in RECIPES:
            model = _calibrated(model_class, shape, fuse, recipe, seed=10 * index + len(recipe))
            generator = torch.Generator().manual_seed(100 + index)
            x = torch.randn(shape, generator=generator)
            check = torch.randn(shape, generator=generator)
            for mode in ("trace", "script"):
                scripted = torch.jit.trace(model, x) if mode == "trace" else torch.jit.script(model)
                name = f"{model_name}_{recipe}_{mode}"
                torch.jit.save(scripted, str(OUT / f"{name}.pt"))
                loaded = torch.jit.load(str(OUT / f"{name}.pt"))
                with torch.no_grad():
                    out_x, out_check = loaded(x).numpy(), loaded(check).numpy()
                np.savez_compressed(OUT / f"{name}.npz", x=x.numpy(), check=check.numpy(), out_x=out_x,
                                    out_check=out_check,
                         torch_version=np.array(torch.__version__), engine=np.array("qnnpack"))
                print(f"{name}: {(OUT / f'{name}.pt').stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Dynamically quantized test models (torch.ao.quantization.quantize_dynamic), built from a fixed seed."""
from __future__ import annotations

import torch
import torch.ao.nn.intrinsic as nni
from torch import nn


class TwoLinears(nn.Module):
    """Linear -> ReLU -> Linear (the ReLU fuses into a dynamic LinearReLU) -> Linear without bias."""

    def __init__(self, k: int = 24, hidden: int = 40, out: int = 10):
        super().__init__()
        self.fc1 = nn.Linear(k, hidden)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, out, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc3(self.fc2(self.relu(self.fc1(x))))


def dynamic_quantized(model: nn.Module, per_channel: bool, fuse: list[list[str]] | None = None,
                      seed: int = 0) -> nn.Module:
    """``model`` (weights and biases from ``seed``) quantized dynamically for fbgemm: qint8 weights per
    tensor or per output channel; ``fuse`` lists Linear + ReLU pairs to fuse first."""
    torch.manual_seed(seed)
    for p in model.parameters():
        if p.dim() == 1:
            nn.init.normal_(p, std=0.5)
    model = model.eval()
    if fuse:
        model = torch.ao.quantization.fuse_modules(model, fuse)
    qconfig = (torch.ao.quantization.per_channel_dynamic_qconfig if per_channel
               else torch.ao.quantization.default_dynamic_qconfig)
    torch.backends.quantized.engine = "fbgemm"
    return torch.ao.quantization.quantize_dynamic(model, {nn.Linear: qconfig, nni.LinearReLU: qconfig})


def dynamic_cases() -> dict[str, tuple[nn.Module, tuple[int, ...]]]:
    """name -> (dynamic quantized model, input shape)."""
    return {
        "dynamic_per_tensor_relu": (dynamic_quantized(TwoLinears(), False, [["fc1", "relu"]]), (3, 5, 24)),
        "dynamic_per_channel": (dynamic_quantized(TwoLinears(), True, [["fc1", "relu"]], seed=1), (4, 24)),
    }

"""Quantized reference models built without downloads (torchvision, weights=None).

Weights are random (torchvision's initialisation under a fixed seed) and the
observers are calibrated on generated data, so every build is reproducible.
"""
from __future__ import annotations

import torch


def calibration_data(batches: int, batch_size: int, shape: tuple[int, ...], seed: int) -> list[torch.Tensor]:
    """Generated image-like inputs: standard normal, as after ImageNet normalisation."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(batch_size, *shape, generator=g) for _ in range(batches)]


def quantize_eager(model: torch.nn.Module, engine: str, data: list[torch.Tensor]) -> torch.nn.Module:
    """Eager-mode post-training quantization: qconfig for ``engine``, prepare, calibrate, convert."""
    torch.backends.quantized.engine = engine
    model.qconfig = torch.ao.quantization.get_default_qconfig(engine)
    torch.ao.quantization.prepare(model, inplace=True)
    with torch.no_grad():
        for x in data:
            model(x)
    return torch.ao.quantization.convert(model, inplace=True)


def _quantized_torchvision(name: str, engine: str, seed: int, calibration_batches: int) -> torch.nn.Module:
    from torchvision.models import quantization

    torch.manual_seed(seed)
    model = getattr(quantization, name)(weights=None, quantize=False).eval()
    model.fuse_model()
    data = calibration_data(calibration_batches, 8, (3, 224, 224), seed + 1)
    return quantize_eager(model, engine, data)


def quantized_resnet18(engine: str = "fbgemm", seed: int = 0, calibration_batches: int = 4) -> torch.nn.Module:
    """torchvision's quantizable ResNet-18, fused and quantized for ``engine`` (fbgemm or qnnpack)."""
    return _quantized_torchvision("resnet18", engine, seed, calibration_batches)


def quantized_mobilenet_v2(engine: str = "fbgemm", seed: int = 0, calibration_batches: int = 4) -> torch.nn.Module:
    """torchvision's quantizable MobileNetV2, fused and quantized for ``engine``."""
    return _quantized_torchvision("mobilenet_v2", engine, seed, calibration_batches)

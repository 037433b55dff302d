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


# torchvision.models.quantization builders, and the smallest input each handles well.
TORCHVISION_MODELS = {
    "resnet18": 224,
    "resnet50": 224,
    "resnext101_32x8d": 224,
    "mobilenet_v2": 224,
    "mobilenet_v3_large": 224,
    "shufflenet_v2_x1_0": 224,
    "googlenet": 224,
    "inception_v3": 299,
}


def quantized_torchvision(name: str, engine: str = "fbgemm", seed: int = 0, calibration_batches: int = 4,
                          image_size: int | None = None, batch_size: int = 8) -> torch.nn.Module:
    """torchvision's quantizable ``name`` (weights=None), fused and quantized for ``engine``.

    Calibration uses generated images of ``image_size`` (default: the model's usual size).
    """
    from torchvision.models import quantization

    if name not in TORCHVISION_MODELS:
        raise ValueError(f"unknown model {name!r}; expected one of {', '.join(TORCHVISION_MODELS)}")
    size = image_size or TORCHVISION_MODELS[name]
    torch.manual_seed(seed)
    model = getattr(quantization, name)(weights=None, quantize=False).eval()
    model.fuse_model()
    data = calibration_data(calibration_batches, batch_size, (3, size, size), seed + 1)
    return quantize_eager(model, engine, data)


def quantized_resnet18(engine: str = "fbgemm", seed: int = 0, calibration_batches: int = 4) -> torch.nn.Module:
    """torchvision's quantizable ResNet-18, fused and quantized for ``engine`` (fbgemm or qnnpack)."""
    return quantized_torchvision("resnet18", engine, seed, calibration_batches)


def quantized_mobilenet_v2(engine: str = "fbgemm", seed: int = 0, calibration_batches: int = 4) -> torch.nn.Module:
    """torchvision's quantizable MobileNetV2, fused and quantized for ``engine``."""
    return quantized_torchvision("mobilenet_v2", engine, seed, calibration_batches)


def quantized_torchvision_fx(name: str, engine: str = "fbgemm", seed: int = 0, calibration_batches: int = 4,
                             image_size: int | None = None, batch_size: int = 8) -> torch.nn.Module:
    """torchvision's float ``name`` (weights=None) quantized in FX graph mode (prepare_fx / convert_fx)."""
    import torchvision.models
    from torch.ao.quantization import get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

    if name not in TORCHVISION_MODELS:
        raise ValueError(f"unknown model {name!r}; expected one of {', '.join(TORCHVISION_MODELS)}")
    size = image_size or TORCHVISION_MODELS[name]
    torch.manual_seed(seed)
    # The auxiliary classifiers only run in training mode; FX traces eval-mode code.
    extra = {"aux_logits": False, "init_weights": True} if name in ("googlenet", "inception_v3") else {}
    model = getattr(torchvision.models, name)(weights=None, **extra).eval()
    data = calibration_data(calibration_batches, batch_size, (3, size, size), seed + 1)
    torch.backends.quantized.engine = engine
    prepared = prepare_fx(model, get_default_qconfig_mapping(engine), (data[0],))
    with torch.no_grad():
        for x in data:
            prepared(x)
    return convert_fx(prepared)

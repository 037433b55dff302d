"""Embedding test models: 8-bit tables quantized the PyTorch way (float_qparams_weight_only_qconfig) in front of a
static or dynamic quantized linear, and a float embedding in front of a dynamic one; built from a fixed seed."""
from __future__ import annotations

import torch
import torch.ao.nn.intrinsic as nni
from torch import nn
from torch.ao.quantization import (DeQuantStub, QuantStub, default_dynamic_qconfig, float_qparams_weight_only_qconfig,
                                   get_default_qconfig)

ROWS, DIM, OUT = 50, 16, 8


class EmbeddingLinear(nn.Module):
    """Embedding -> quantize -> Linear -> dequantize (token ids of any shape to features)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(ROWS, DIM)
        self.quant = QuantStub()
        self.fc = nn.Linear(DIM, OUT)
        self.dequant = DeQuantStub()

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.dequant(self.fc(self.quant(self.emb(ids))))


class BagLinear(nn.Module):
    """EmbeddingBag (indices, offsets[, per-sample weights]) -> quantize -> Linear -> dequantize."""

    def __init__(self, mode: str = "sum", include_last_offset: bool = False):
        super().__init__()
        self.bag = nn.EmbeddingBag(ROWS, DIM, mode=mode, include_last_offset=include_last_offset)
        self.quant = QuantStub()
        self.fc = nn.Linear(DIM, OUT)
        self.dequant = DeQuantStub()

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.dequant(self.fc(self.quant(self.bag(ids, offsets))))


class WeightedBagLinear(BagLinear):
    """Fixed-length bags (2-D indices) weighted per sample -> quantize -> Linear -> dequantize."""

    def forward(self, ids: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        return self.dequant(self.fc(self.quant(self.bag(ids, per_sample_weights=weights))))


class EmbeddingEncoder(nn.Module):
    """Embedding -> Linear -> ReLU -> Linear: a tiny token encoder for dynamic quantization."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(ROWS, DIM)
        self.fc1 = nn.Linear(DIM, 24)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(24, OUT)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.relu(self.fc1(self.emb(ids))))


def token_ids(shape: tuple[int, ...], seed: int = 0, dtype: torch.dtype = torch.int64) -> torch.Tensor:
    return torch.randint(0, ROWS, shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def static_quantized(model: nn.Module, calibration: list[tuple[torch.Tensor, ...]], seed: int = 0) -> nn.Module:
    """Eager static quantization for fbgemm, the embedding tables weight-only (8-bit, per-row float qparams)."""
    torch.manual_seed(seed)
    model = model.eval()
    for p in model.parameters():
        nn.init.normal_(p)
    model.qconfig = get_default_qconfig("fbgemm")
    for m in model.modules():
        if isinstance(m, (nn.Embedding, nn.EmbeddingBag)):
            m.qconfig = float_qparams_weight_only_qconfig
    torch.backends.quantized.engine = "fbgemm"
    prepared = torch.ao.quantization.prepare(model)
    with torch.no_grad():
        for args in calibration:
            prepared(*args)
    return torch.ao.quantization.convert(prepared)


def dynamic_quantized(model: nn.Module, quantize_embedding: bool, seed: int = 0) -> nn.Module:
    """quantize_dynamic for fbgemm: dynamic linears (fc1 + relu fused first); the embedding 8-bit weight-only, or
    left in float."""
    torch.manual_seed(seed)
    model = torch.ao.quantization.fuse_modules(model.eval(), [["fc1", "relu"]])
    torch.backends.quantized.engine = "fbgemm"
    spec = {nn.Linear: default_dynamic_qconfig, nni.LinearReLU: default_dynamic_qconfig}
    if quantize_embedding:
        spec[nn.Embedding] = float_qparams_weight_only_qconfig
    return torch.ao.quantization.quantize_dynamic(model, spec)


def embedding_cases() -> dict[str, tuple[nn.Module, tuple[torch.Tensor, ...]]]:
    """name -> (quantized model, example inputs), one per embedding op."""
    ids = token_ids((3, 7))
    flat, offsets = token_ids((12,), seed=1), torch.tensor([0, 4, 4, 9])
    return {
        "embedding_linear": (static_quantized(EmbeddingLinear(), [(token_ids((4, 7), seed=s),) for s in range(3)]), (ids,)),
        "embedding_bag_linear": (static_quantized(BagLinear(), [(token_ids((24,), seed=s), offsets) for s in range(3)]),
                                 (flat, offsets)),
        "float_embedding_dynamic": (dynamic_quantized(EmbeddingEncoder(), quantize_embedding=False), (ids,)),
    }

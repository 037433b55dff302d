"""The torchao quantizations ``qnnpy.llm.quantize`` and ``qnnpy generate --quantize`` apply to a float LM, by name
(torchao and torch are imported when a recipe runs, so the command line can list the names at once)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    import torch


def _quantize_w8a8(model: "torch.nn.Module") -> None:
    from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_

    quantize_(model, Int8DynamicActivationInt8WeightConfig())


def _quantize_8da4w(model: "torch.nn.Module") -> None:
    """ExecuTorch's LLM recipe: embeddings int8 per row (weight-only), linears 8da4w with groups of 32."""
    import torch
    from torchao.quantization import Int8DynamicActivationIntxWeightConfig, IntxWeightOnlyConfig, quantize_
    from torchao.quantization.granularity import PerAxis, PerGroup

    quantize_(model, IntxWeightOnlyConfig(weight_dtype=torch.int8, granularity=PerAxis(0)),
              filter_fn=lambda module, _: isinstance(module, torch.nn.Embedding))
    quantize_(model, Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int4, weight_granularity=PerGroup(32)))


def _quantize_int8_weight_only(model: "torch.nn.Module") -> None:
    from torchao.quantization import Int8WeightOnlyConfig, quantize_

    quantize_(model, Int8WeightOnlyConfig())


def _quantize_int4_weight_only(model: "torch.nn.Module") -> None:
    from torchao.prototype.quantization.int4 import PrototypeInt4WeightOnlyConfig
    from torchao.quantization import quantize_

    quantize_(model, PrototypeInt4WeightOnlyConfig(group_size=32))


RECIPES: dict[str, Callable[["torch.nn.Module"], None]] = {
    "w8a8": _quantize_w8a8,
    "8da4w": _quantize_8da4w,
    "int8-weight-only": _quantize_int8_weight_only,
    "int4-weight-only": _quantize_int4_weight_only,
}
"""The torchao quantizations ``qnnpy.llm.quantize`` applies to a float LM, by name: ``w8a8``
(``Int8DynamicActivationInt8WeightConfig``), ``8da4w`` (ExecuTorch's recipe: linears
``Int8DynamicActivationIntxWeightConfig(int4, PerGroup(32))``, embeddings int8 per row), ``int8-weight-only``
(``Int8WeightOnlyConfig``), ``int4-weight-only`` (``PrototypeInt4WeightOnlyConfig(group_size=32)``, PyTorch's CPU
int4 pack)."""

"""torchao ``quantize_`` test models: a small MLP under each CPU config of torchao 0.18 (tests/test_torchao.py,
tests/test_op_definitions.py), and tiny Hugging Face models built from their configs (no download)."""
from __future__ import annotations

import torch
from torch import nn
from torchao.quantization import (
    Int8DynamicActivationInt8WeightConfig, Int8DynamicActivationIntxWeightConfig, Int8WeightOnlyConfig,
    IntxWeightOnlyConfig, quantize_)
from torchao.quantization.granularity import PerAxis, PerGroup
from torchao.prototype.quantization.int4 import PrototypeInt4WeightOnlyConfig

from qnnpy import llm

CONFIGS = {
    "w8a8_dynamic": Int8DynamicActivationInt8WeightConfig,
    "int8_weight_only": Int8WeightOnlyConfig,
    "int8_weight_only_group32": lambda: Int8WeightOnlyConfig(granularity=PerGroup(32)),
    "int4_weight_only_group32": lambda: IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32)),
    "int4_cpu_pack_group32": lambda: PrototypeInt4WeightOnlyConfig(group_size=32),
    "int8_weight_only_intx_per_row": lambda: IntxWeightOnlyConfig(weight_dtype=torch.int8, granularity=PerAxis(0)),
    "8da4w_group32": lambda: Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int4,
                                                                   weight_granularity=PerGroup(32)),
    "8da8w_group32": lambda: Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int8,
                                                                   weight_granularity=PerGroup(32)),
}


class MLP(nn.Module):
    """Two quantized linears (one without bias) around a float ReLU, and a float residual branch."""

    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(64, 96)
        self.down = nn.Linear(96, 64, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(torch.relu(self.up(x)))


def quantize_like_executorch(model: nn.Module) -> nn.Module:
    """ExecuTorch's LLM recipe "8da4w": embeddings int8 per row (weight-only), linears 8da4w with groups of 32."""
    return llm.quantize(model, "8da4w")


def quantized_mlp(name: str, seed: int = 0) -> nn.Module:
    """The MLP (weights from ``seed``) quantized in place by torchao's config ``name``."""
    torch.manual_seed(seed)
    model = MLP().eval()
    quantize_(model, CONFIGS[name]())
    return model


def tiny_lm(kind: str) -> nn.Module:
    """A two-layer Hugging Face model built from its config (random weights from seed 0, no download), in eval mode:
    ``"llama"`` or ``"qwen2"`` (decoder LMs with grouped-query attention) or ``"bert"`` (an encoder)."""
    import transformers

    common = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  max_position_embeddings=64)
    config, model_class = {"llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
                           "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM),
                           "bert": (transformers.BertConfig, transformers.BertModel)}[kind]
    if kind != "bert":
        common["num_key_value_heads"] = 2
    torch.manual_seed(0)
    return model_class(config(**common)).eval()

"""Small Hugging Face transformers models built from configs (no download), fixed seeds, and their quantized forms:
dynamic quantization of the linears (how BERT is quantized for CPUs) and PT2E (torch.export + torchao)."""
from __future__ import annotations

import functools

import torch
from torch import nn
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
from transformers import BertConfig, BertModel, GPT2Config, GPT2Model, ViTConfig, ViTModel
from transformers.pytorch_utils import Conv1D

from pt2e_models import quantizer
from qnnpy.pt2e_fixups import integer_scalars_as_tensors

SEQUENCE, VOCAB = 12, 100


def _bert() -> nn.Module:
    return BertModel(BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=64, max_position_embeddings=64))


def _gpt2() -> nn.Module:
    # use_cache=False: a cache is no tensor output (torch.export refuses it, and a static module has no state).
    return GPT2Model(GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=2, n_positions=64, use_cache=False,
                                bos_token_id=0, eos_token_id=0))


def _vit() -> nn.Module:
    return ViTModel(ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=2,
                              num_attention_heads=2, intermediate_size=64))


MODELS = {"bert": _bert, "gpt2": _gpt2, "vit": _vit}


def model(name: str) -> nn.Module:
    """The float model ``name`` in eval mode (weights from a fixed seed)."""
    torch.manual_seed(0)
    return MODELS[name]().eval()


def inputs(name: str, count: int, seed: int = 1) -> list[tuple[torch.Tensor, ...]]:
    """``count`` example inputs: token ids for the language models, images for ViT."""
    generator = torch.Generator().manual_seed(seed)
    if name == "vit":
        return [(torch.randn(1, 3, 32, 32, generator=generator),) for _ in range(count)]
    return [(torch.randint(0, VOCAB, (1, SEQUENCE), generator=generator),) for _ in range(count)]


def linears_from_conv1d(module: nn.Module) -> nn.Module:
    """GPT-2's projections are transformers' ``Conv1D`` (a linear with its weight transposed), which
    ``quantize_dynamic`` does not quantize: replace each by the ``nn.Linear`` it equals."""
    for name, child in list(module.named_children()):
        if isinstance(child, Conv1D):
            linear = nn.Linear(child.weight.shape[0], child.nf)
            linear.weight.data = child.weight.data.t().contiguous()
            linear.bias.data = child.bias.data
            setattr(module, name, linear)
        else:
            linears_from_conv1d(child)
    return module


@functools.lru_cache(maxsize=None)
def dynamic(name: str) -> nn.Module:
    """``name`` with its linears quantized dynamically for fbgemm (qint8 weights)."""
    torch.backends.quantized.engine = "fbgemm"
    return torch.ao.quantization.quantize_dynamic(linears_from_conv1d(model(name)), {nn.Linear})


@functools.lru_cache(maxsize=None)
def pt2e(name: str, kind: str) -> torch.fx.GraphModule:
    """``name`` exported (strict) and quantized by quantizer ``kind`` ("x86" or "xnnpack"), calibrated on 4 inputs.
    GPT-2's Conv1D projections are made linears first: exported they are addmm, which the quantizers leave in float."""
    float_model = linears_from_conv1d(model(name))
    exported = torch.export.export(float_model, inputs(name, 1)[0], strict=True).module()
    if kind == "xnnpack":
        integer_scalars_as_tensors(exported)  # GPT-2's position ids: see qnnpy.pt2e_fixups
    prepared = prepare_pt2e(exported, quantizer(kind))
    for x in inputs(name, 4, seed=2):
        prepared(*x)
    return convert_pt2e(prepared)

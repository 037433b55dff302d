"""Ops that return several tensors: every output of unbind, split, split_with_sizes, chunk, tensor_split, topk, sort,
max.dim, var_mean is usable, in float glue (a torchao model, captured by torch.export) and around PT2E islands (a ViT-style
attention whose qkv projection is taken apart with ``unbind(0)``, as timm's ViT does)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import qnnpy

pytest.importorskip("torchao.quantization")
from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_  # noqa: E402
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e  # noqa: E402

from pt2e_models import quantizer  # noqa: E402


class EveryMultiOutputOp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(32, 96)
        self.out = nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).reshape(x.shape[0], x.shape[1], 3, 32).permute(2, 0, 1, 3).unbind(0)
        a, b = torch.split(q, [12, 20], dim=-1)
        c, d = k.chunk(2, dim=-1)
        e, f, g = torch.tensor_split(k, [5, 19], dim=-1)  # as MViT's pooling attention splits off its class token
        h, i = k.tensor_split(2, dim=1)
        top, top_index = torch.topk(v, 4, dim=-1)
        ordered, order = torch.sort(v, dim=-1)
        largest, largest_index = v.max(dim=-1)
        var, mean = torch.var_mean(v, dim=-1, keepdim=True)
        y = torch.cat([a * 2, b], -1) + torch.cat([c, d], -1) + ordered + largest[..., None] + mean + var
        y = y + torch.cat([g, e, f], -1) + torch.cat([i, h], 1)
        y = y + top.sum(-1, keepdim=True) + top_index.float().sum(-1, keepdim=True) + order[..., :1].float()
        return self.out(y + largest_index[..., None].float())


class Attention(nn.Module):
    """timm's ViT attention: one qkv projection, heads taken apart with unbind(0)."""

    def __init__(self, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, dim = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.heads, dim // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attention = (q @ k.transpose(-2, -1) * (dim // self.heads) ** -0.5).softmax(dim=-1)
        return self.proj((attention @ v).transpose(1, 2).reshape(batch, tokens, dim))


def test_every_output_of_the_multi_output_ops_converts_in_float_glue():
    torch.manual_seed(0)
    model = EveryMultiOutputOp().eval()
    quantize_(model, Int8DynamicActivationInt8WeightConfig())
    x = torch.randn(2, 5, 32)
    with pytest.warns(UserWarning, match="torch.export"):
        module = qnnpy.from_torch(model, (x,))
    assert {"float_var", "float_mean", "float_argmax", "float_topk"} <= {n["op"] for n in module.nodes()}  # sort: a full topk
    for seed in (1, 2):
        x = torch.randn(2, 5, 32, generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            expected = model(x).numpy()
        got = module.run(x.numpy()).dequantized
        assert np.abs(got - expected).max() <= 1e-5 * np.abs(expected).max()


@pytest.mark.parametrize("kind", ["x86", "xnnpack"])
def test_unbind_of_a_quantized_qkv_converts(kind):
    torch.manual_seed(0)
    x = torch.randn(2, 6, 32)
    exported = torch.export.export(Attention().eval(), (x,), strict=True).module()
    prepared = prepare_pt2e(exported, quantizer(kind))
    for seed in range(4):
        prepared(torch.randn(2, 6, 32, generator=torch.Generator().manual_seed(seed)))
    model = convert_pt2e(prepared)
    module = qnnpy.from_torch(model, (x,))
    with torch.no_grad():
        expected = model(x).numpy()
    got = module.run(x.numpy()).dequantized
    # PT2E's reference is float between quantize / dequantize: within a few output quantization steps.
    assert np.abs(got - expected).max() <= 0.05 * np.abs(expected).max()

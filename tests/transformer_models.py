"""A small transformer encoder for the transformer tests (tests/test_transformer*.py), built from a fixed seed.

``TinyEncoder``: a linear input projection or an optional token embedding front, ``layers`` post-norm
encoder layers (linear Q / K / V projections, scaled dot-product attention with matmul and softmax, an
output projection, residual adds, layer norms, a GELU MLP) and a linear head on every token.
Sizes default to d_model 32, 2 heads, 2 layers, sequence 8, so each test costs seconds.
"""
from __future__ import annotations

import functools
import math

import torch
from torch import nn

SEQ = 8
D_MODEL = 32
CLASSES = 10


class EncoderLayer(nn.Module):
    """Post-norm encoder layer (BERT's order): x = norm1(x + attention(x)); x = norm2(x + mlp(x))."""

    def __init__(self, d_model: int, heads: int, hidden: int, gelu: str = "none"):
        super().__init__()
        self.heads, self.head_dim = heads, d_model // heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, hidden)
        self.gelu = nn.GELU(approximate=gelu)
        self.fc2 = nn.Linear(hidden, d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(0.1)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """[B, T, D] -> [B, heads, T, head_dim]."""
        return x.view(x.shape[0], x.shape[1], self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self._split_heads(self.q(x)), self._split_heads(self.k(x)), self._split_heads(self.v(x))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        attention = self.dropout(torch.softmax(scores, dim=-1))
        context = torch.matmul(attention, v).transpose(1, 2).reshape(x.shape)
        x = self.norm1(x + self.dropout(self.out(context)))
        return self.norm2(x + self.dropout(self.fc2(self.gelu(self.fc1(x)))))


class TinyEncoder(nn.Module):
    """Input [B, T, D] float -> logits [B, T, classes]. ``embedding=True`` makes the token and position tables
    instead of the input projection, for ``TokenEncoder``, which takes token and position ids."""

    def __init__(self, d_model: int = D_MODEL, heads: int = 2, layers: int = 2, hidden: int = 64,
                 classes: int = CLASSES, embedding: bool = False, vocab: int = 50, seq: int = SEQ,
                 gelu: str = "none"):
        super().__init__()
        self.embedding = embedding
        if embedding:
            self.tokens = nn.Embedding(vocab, d_model)
            self.positions = nn.Embedding(seq, d_model)
        else:
            self.project = nn.Linear(d_model, d_model)
        self.layers = nn.ModuleList(EncoderLayer(d_model, heads, hidden, gelu) for _ in range(layers))
        self.head = nn.Linear(d_model, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.encode(self.project(x))

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


class TokenEncoder(TinyEncoder):
    """TinyEncoder(embedding=True): token ids and position ids [B, T] in, BERT's input embeddings."""

    def forward(self, ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        return self.encode(self.tokens(ids) + self.positions(positions))


def encoder(seed: int = 0, **kwargs) -> TinyEncoder:
    """A TinyEncoder in eval mode with weights from ``seed``; layer norms get non-trivial weights and biases."""
    torch.manual_seed(seed)
    model = (TokenEncoder if kwargs.get("embedding") else TinyEncoder)(**kwargs)
    for m in model.modules():
        if isinstance(m, nn.LayerNorm):
            nn.init.uniform_(m.weight, 0.5, 1.5)
            nn.init.normal_(m.bias, std=0.1)
    return model.eval()


def inputs(count: int, seed: int = 1, batch: int = 1, d_model: int = D_MODEL) -> list[torch.Tensor]:
    """``count`` float inputs [batch, SEQ, d_model]."""
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn((batch, SEQ, d_model), generator=generator) for _ in range(count)]


@functools.lru_cache(maxsize=None)
def pt2e_encoder(kind: str, gelu: str = "none") -> torch.fx.GraphModule:
    """The encoder quantized by PT2E (torch.export strict + prepare_pt2e / calibrate / convert_pt2e) with the
    quantizer ``kind`` of tests/pt2e_models.py ("x86" or "xnnpack"); cached."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from pt2e_models import quantizer

    model = encoder(gelu=gelu)
    exported = torch.export.export(model, (inputs(1)[0],), strict=True).module()
    prepared = prepare_pt2e(exported, quantizer(kind))
    for x in inputs(4, seed=2):
        prepared(x)
    return convert_pt2e(prepared)


def dynamic_encoder(per_channel: bool = False, embedding: bool = False) -> nn.Module:
    """The encoder with every nn.Linear dynamically quantized for fbgemm (torch.ao.quantization.quantize_dynamic);
    everything else stays float. ``embedding``: token-id input with a float embedding front (a small BERT)."""
    qconfig = (torch.ao.quantization.per_channel_dynamic_qconfig if per_channel
               else torch.ao.quantization.default_dynamic_qconfig)
    torch.backends.quantized.engine = "fbgemm"
    return torch.ao.quantization.quantize_dynamic(encoder(embedding=embedding), {nn.Linear: qconfig})


def token_inputs(count: int, seed: int = 1, vocab: int = 50) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``count`` (token ids, position ids) pairs of shape [1, SEQ] for ``TinyEncoder(embedding=True)``."""
    generator = torch.Generator().manual_seed(seed)
    positions = torch.arange(SEQ).unsqueeze(0)
    return [(torch.randint(0, vocab, (1, SEQ), generator=generator), positions) for _ in range(count)]


class FloatArithmetic(nn.Module):
    """A linear and the float binary and scalar ops a model may compute around it: subtraction and
    division of tensors, a number added, subtracted, multiplied and divided."""

    def __init__(self, features: int = 16):
        super().__init__()
        self.fc = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        return ((y - x) / (y * y + 1.0) - 0.25) * 3.0 / 7.0


def dynamic_float_arithmetic() -> nn.Module:
    """FloatArithmetic with its linear dynamically quantized (fbgemm)."""
    torch.manual_seed(0)
    torch.backends.quantized.engine = "fbgemm"
    return torch.ao.quantization.quantize_dynamic(FloatArithmetic().eval(), {nn.Linear})


@functools.lru_cache(maxsize=None)
def pt2e_torch_encoder_layer(kind: str) -> torch.fx.GraphModule:
    """PyTorch's own ``nn.TransformerEncoderLayer`` (d_model 32, 2 heads, GELU MLP 64, batch first), quantized by
    PT2E with the quantizer ``kind``; its attention is ``nn.MultiheadAttention``: one packed input projection,
    ``aten.scaled_dot_product_attention``. Cached."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from pt2e_models import quantizer

    torch.manual_seed(0)
    model = nn.TransformerEncoderLayer(D_MODEL, 2, 64, activation="gelu", batch_first=True).eval()
    exported = torch.export.export(model, (inputs(1)[0],), strict=True).module()
    prepared = prepare_pt2e(exported, quantizer(kind))
    for x in inputs(4, seed=2):
        prepared(x)
    return convert_pt2e(prepared)

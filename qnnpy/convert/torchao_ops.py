"""The converters of torchao ``quantize_`` layers (``qnnpy::torchao_linear`` / ``qnnpy::torchao_embedding`` nodes
of :mod:`qnnpy.capture.torchao_capture`) to ``affine_linear`` (src/ops/affine_linear.cpp) and ``affine_embedding``
(src/ops/embedding.cpp).

The layer's weight subclass says what its ``F.linear`` computes (torchao 0.18):

- ``Int8Tensor`` (``Int8DynamicActivationInt8WeightConfig``, ``Int8WeightOnlyConfig``): int8 values (N, K)
  with a scale per row or per tensor (weight-only: also per group); with ``act_quant_kwargs`` the input is
  quantized per token, symmetric (activation 1), else the linear is weight-only;
- ``IntxUnpackedToInt8Tensor`` (``IntxWeightOnlyConfig``, ``Int8DynamicActivationIntxWeightConfig``, the
  "8da4w" of ExecuTorch's LLM recipes): int1..int8 values held in int8, a scale and zero point per group of
  input channels; ``activation_quantization='int8_asym_per_token'`` quantizes and dequantizes the input per
  token (activation 2) before a float linear of the dequantized weight;
- ``Int4OpaqueTensor`` (``PrototypeInt4WeightOnlyConfig``): int4 values in PyTorch's CPU pack
  (:mod:`qnnpy.convert.tinygemm_int4`), a float scale and a float zero per group ("tinygemm": (u - 8) * scale +
  zero); weight-only, the zero kept as the group's ``weight_offset``.

Anything else (float8, the da8w4 pack, a static activation scale, a pre-scale) is refused by name.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.fx
from torch import nn

from qnnpy import _core
from qnnpy.capture.torchao_capture import LAYER_META, TORCHAO_EMBEDDING, TORCHAO_LINEAR
from qnnpy.convert.context import ConversionContext
from qnnpy.convert.op_form import OpForm
from qnnpy.convert.tinygemm_int4 import unpack_int4_weight
from qnnpy.errors import ConversionError

_ACTIVATION_NONE, _ACTIVATION_INT8_SYMMETRIC, _ACTIVATION_INT8_ASYMMETRIC = 0, 1, 2
_BITS = {getattr(torch, f"int{b}"): b for b in range(1, 9) if hasattr(torch, f"int{b}")}


@dataclass
class AffineWeight:
    """A torchao linear weight as affine_linear holds it."""

    values: np.ndarray       # int8 (N, K)
    scale: np.ndarray        # float32, one per group (N * K / group_size), row-major
    zero_point: np.ndarray   # int8, likewise
    group_size: int
    activation: int
    bits: int
    scale_after_dot: bool
    offset: np.ndarray | None = None  # float32, one per group, or None (ops/affine_weight.h)


def _per_group(where: str, what: str, t: torch.Tensor | None, n: int, groups: int, dtype: np.dtype) -> np.ndarray:
    """A scale or zero point tensor of one value per tensor, row or group as a flat (n * groups) array."""
    if t is None:
        return np.zeros(n * groups, dtype)
    t = t.detach()
    if t.numel() == 1:
        t = t.reshape(1, 1).expand(n, groups)
    if t.numel() != n * groups:
        raise ConversionError(f"{where}: the weight's {what} has shape {tuple(t.shape)}, not one value per group of "
                              f"({n}, {groups})")
    if dtype == np.int8:
        values = t.reshape(-1).to(torch.int64)
        if values.min() < -128 or values.max() > 127:
            raise ConversionError(f"{where}: weight zero points outside int8: {values.min()}..{values.max()}")
        return values.to(torch.int8).numpy().copy()
    if t.dtype != torch.float32:
        raise ConversionError(f"{where}: the weight's {what} is {t.dtype}; qnnpy converts float32 models (quantize_ "
                              "the model in float32)")
    return t.reshape(-1).numpy().copy()


def _groups(where: str, block_size: list[int], n: int, k: int) -> tuple[int, int]:
    """(rows per block, input channels per block) of a 2-D block_size, checked against (n, k)."""
    if len(block_size) != 2:
        raise ConversionError(f"{where}: a {len(block_size)}-D weight block_size {block_size}; qnnpy converts 2-D linear weights")
    rows, group = int(block_size[0]), int(block_size[1])
    if rows not in (1, n) or group < 1 or k % group:
        raise ConversionError(f"{where}: weight block_size {block_size} for a ({n}, {k}) weight: qnnpy converts "
                              "per-tensor, per-row and per-group (along the input channels) weights")
    return rows, group


def _int8_tensor(where: str, w: torch.Tensor) -> AffineWeight:
    for name in ("act_pre_scale", "act_quant_scale", "act_quant_zero_point"):
        if getattr(w, name, None) is not None:
            raise ConversionError(f"{where}: Int8Tensor with {name} (a static activation scale or a pre-scale: "
                                  "Int8StaticActivationInt8WeightConfig, SmoothQuant) is not supported; qnnpy converts "
                                  "Int8DynamicActivationInt8WeightConfig and Int8WeightOnlyConfig")
    n, k = w.qdata.shape
    rows, group = _groups(where, list(w.block_size), n, k)
    groups = k // group
    scale = w.scale.detach()
    if rows == n:  # one scale for the whole tensor (PerTensor)
        scale = scale.reshape(1, 1).expand(n, groups)
    kwargs = w.act_quant_kwargs
    activation = _ACTIVATION_NONE
    if kwargs is not None:
        if type(kwargs).__name__ != "QuantizeTensorToInt8Kwargs" or type(kwargs.granularity).__name__ != "PerRow" \
                or getattr(kwargs.mapping_type, "name", "") != "SYMMETRIC" or kwargs.reduce_range:
            raise ConversionError(f"{where}: Int8Tensor activation quantization {kwargs} is not supported; qnnpy converts "
                                  "per-token (PerRow) symmetric int8 activations without reduce_range")
        if group != k:
            raise ConversionError(f"{where}: dynamic int8 activations with a per-group weight scale are not supported")
        activation = _ACTIVATION_INT8_SYMMETRIC
    zero_point = _per_group(where, "zero point", getattr(w, "zero_point", None), n, groups, np.int8)
    # Per-row and per-tensor scales: torchao multiplies the dot products of the raw int8 values by the scale
    # (weight-only) or ignores the zero point (dynamic): both need a symmetric weight.
    if group == k and zero_point.any():
        raise ConversionError(f"{where}: Int8Tensor with non-zero weight zero points: torchao's int8 linear ignores "
                              "them; quantize the weight symmetrically")
    return AffineWeight(w.qdata.detach().contiguous().numpy(), _per_group(where, "scale", scale, n, groups, np.float32),
                        zero_point, group, activation, 8, scale_after_dot=activation == _ACTIVATION_NONE and group == k)


def _intx_tensor(where: str, w: torch.Tensor) -> AffineWeight:
    n, k = w.qdata.shape
    _, group = _groups(where, list(w.block_size), n, k)
    bits = _BITS.get(w.target_dtype)
    if bits is None:
        raise ConversionError(f"{where}: IntxUnpackedToInt8Tensor of {w.target_dtype} is not supported (int1..int8)")
    quantization = w.activation_quantization
    if quantization is None:
        activation = _ACTIVATION_NONE
    elif str(getattr(quantization, "value", quantization)) == "int8_asym_per_token":
        activation = _ACTIVATION_INT8_ASYMMETRIC
    else:
        raise ConversionError(f"{where}: IntxUnpackedToInt8Tensor activation quantization {quantization} is not supported")
    groups = k // group
    return AffineWeight(w.qdata.detach().contiguous().numpy(), _per_group(where, "scale", w.scale, n, groups, np.float32),
                        _per_group(where, "zero point", w.zero_point, n, groups, np.int8), group, activation, bits,
                        scale_after_dot=False)


def _int4_opaque_tensor(where: str, w: torch.Tensor) -> AffineWeight:
    if w.act_mapping_type is not None:
        raise ConversionError(f"{where}: Int4OpaqueTensor packed for torchao's da8w4 kernel (dynamic int8 activations, "
                              "Int8DynamicActivationInt4WeightConfig) is not supported; qnnpy converts its weight-only "
                              "form (PrototypeInt4WeightOnlyConfig) and 8da4w as Int8DynamicActivationIntxWeightConfig")
    if w.act_pre_scale is not None:
        raise ConversionError(f"{where}: Int4OpaqueTensor with act_pre_scale (AWQ) is not supported")
    n, k = w.shape
    _, group = _groups(where, list(w.block_size), n, k)
    groups = k // group
    scale_and_zero = w.scale_and_zero.detach()
    if scale_and_zero.dim() != 3 or scale_and_zero.shape[0] != groups or scale_and_zero.shape[1] < n \
            or scale_and_zero.shape[2] != 2:
        raise ConversionError(f"{where}: scale_and_zero of shape {tuple(scale_and_zero.shape)}, expected ({groups}, {n}, 2)")
    # (groups, rows, [scale, zero]) to one value per group, row-major.
    scale, zero = (scale_and_zero[:, :n, i].transpose(0, 1).contiguous() for i in range(2))
    return AffineWeight(unpack_int4_weight(w.qdata, n, k), _per_group(where, "scale", scale, n, groups, np.float32),
                        np.zeros(n * groups, np.int8), group, _ACTIVATION_NONE, 4, scale_after_dot=False,
                        offset=_per_group(where, "zero", zero, n, groups, np.float32))


_READERS = {"Int8Tensor": _int8_tensor, "IntxUnpackedToInt8Tensor": _intx_tensor, "Int4OpaqueTensor": _int4_opaque_tensor}


def affine_weight(where: str, module: nn.Module) -> AffineWeight:
    """The weight of a torchao-quantized linear as affine_linear holds it; refuses what qnnpy does not convert."""
    w = module.weight
    reader = _READERS.get(type(w).__name__)
    if reader is None:
        raise ConversionError(
            f"{where}: a {type(w).__name__} weight (torchao) is not supported. qnnpy converts Int8Tensor "
            "(Int8DynamicActivationInt8WeightConfig, Int8WeightOnlyConfig), IntxUnpackedToInt8Tensor "
            "(IntxWeightOnlyConfig, Int8DynamicActivationIntxWeightConfig) and Int4OpaqueTensor "
            "(PrototypeInt4WeightOnlyConfig); float8 configs have no CPU meaning")
    if w.dtype != torch.float32:
        raise ConversionError(f"{where}: a {w.dtype} model; qnnpy converts float32 models (quantize_ the model in float32)")
    return reader(where, w)


def _where(path: str, module: nn.Module) -> str:
    """A quantized layer in messages: its module path and its weight's tensor subclass."""
    return f"{path or '(model)'} ({type(module.weight).__name__})"


def check_torchao_layers(layers: list[tuple[str, nn.Module]]) -> None:
    """Read every torchao-quantized layer's weight before the model is captured: one error naming each layer
    qnnpy does not convert (the model may not even run where its config has no CPU meaning)."""
    problems = []
    for path, module in layers:
        where = _where(path, module)
        if type(module) not in (nn.Linear, nn.Embedding):
            problems.append(f"{where}: a quantized {type(module).__name__}; qnnpy converts torchao's nn.Linear and "
                            "nn.Embedding layers")
            continue
        try:
            _embedding_weight(where, module) if isinstance(module, nn.Embedding) else affine_weight(where, module)
        except ConversionError as e:
            problems.append(str(e))
    if problems:
        raise ConversionError("torchao quantize_ model:\n  " + "\n  ".join(problems))


def convert_torchao_linear(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """A torchao-quantized ``nn.Linear``: float input, int8 weight with its group scales and zero points, float
    bias, float output (``affine_linear``)."""
    path, module = node.meta[LAYER_META]
    where = _where(path, module)
    weight = affine_weight(where, module)
    x = ctx.example(node.args[0])
    if not isinstance(x, torch.Tensor) or x.dtype != torch.float32:
        raise ConversionError(f"{where}: the linear's input must be float32, got {getattr(x, 'dtype', type(x).__name__)}")
    bias = None if module.bias is None else module.bias.detach().float().contiguous().numpy()
    return _core.add_affine_layer(
        ctx.graph, "affine_linear", ctx.value(node.args[0], node), path or node.name, node.name, weight.values,
        weight.scale, weight.zero_point, weight.group_size, bias, weight.bits,
        ints={"activation": [weight.activation], "scale_after_dot": [int(weight.scale_after_dot)]},
        expected_shape=list(ctx.example(node).shape), weight_offset=weight.offset)


def _embedding_weight(where: str, module: nn.Embedding) -> AffineWeight:
    """The table of a torchao-quantized embedding: an IntxUnpackedToInt8Tensor without activation quantization."""
    if type(module.weight).__name__ != "IntxUnpackedToInt8Tensor":
        raise ConversionError(f"{where}: a {type(module.weight).__name__} embedding table is not supported; qnnpy "
                              "converts embeddings quantized by IntxWeightOnlyConfig (IntxUnpackedToInt8Tensor)")
    if module.max_norm is not None:
        raise ConversionError(f"{where}: an embedding with max_norm (it renormalizes its rows on lookup) is not supported")
    weight = affine_weight(where, module)
    if weight.activation != _ACTIVATION_NONE:
        raise ConversionError(f"{where}: an embedding table with activation quantization is not supported")
    return weight


def convert_torchao_embedding(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """A torchao-quantized ``nn.Embedding``: integer indices in, the rows dequantized as torchao does out
    (``affine_embedding``)."""
    path, module = node.meta[LAYER_META]
    where = _where(path, module)
    table = _embedding_weight(where, module)
    return _core.add_affine_layer(
        ctx.graph, "affine_embedding", ctx.value(node.args[0], node), path or node.name, node.name, table.values,
        table.scale, table.zero_point, table.group_size, None, table.bits, expected_shape=list(ctx.example(node).shape))


TORCHAO_CONVERTERS = {
    TORCHAO_LINEAR: OpForm(convert_torchao_linear, "``nn.Linear`` quantized by torchao's ``quantize_``: ``Int8Tensor``, "
                           "``IntxUnpackedToInt8Tensor`` and ``Int4OpaqueTensor`` weights"),
    TORCHAO_EMBEDDING: OpForm(convert_torchao_embedding, "``nn.Embedding`` quantized by torchao's ``quantize_`` "
                              "(``IntxWeightOnlyConfig``)"),
}

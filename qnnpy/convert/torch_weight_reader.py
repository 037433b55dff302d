"""Reading PyTorch's quantized weights and engine-packed param state into numpy.

Only extraction happens here: tensors become numpy buffers (the int8 values of
``int_repr()``, the scales, the zero points). Decoding the conv configuration
and building the integer params is the C++ core's job (``src/params``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from qnnpy.errors import ConversionError
from qnnpy.quantized_types import PER_CHANNEL_SCHEMES, PER_TENSOR_SCHEMES, WEIGHT_DTYPE, QuantizedValue, is_quantized


@dataclass
class QuantizedWeight:
    """An int8 weight with its quantization parameters, as numpy arrays."""

    data: np.ndarray  # int8, the exact values of int_repr()
    scale: np.ndarray
    zero_point: np.ndarray
    axis: int  # -1 per tensor, else the channel axis


@dataclass
class ConvState:
    """A conv packed-params state: layout version, config vector, weight, bias."""

    version: int
    config: np.ndarray
    weight: QuantizedWeight
    bias: np.ndarray | None


def quantized_weight(t: torch.Tensor | QuantizedValue, where: str) -> QuantizedWeight:
    """Split a qint8 weight tensor into its integer values and qparams."""
    if not is_quantized(t):
        raise ConversionError(f"{where}: weight is not a quantized tensor (got {type(t).__name__})")
    if t.dtype != WEIGHT_DTYPE:
        raise ConversionError(f"{where}: weight dtype is {t.dtype}; qnnpy needs {WEIGHT_DTYPE} weights")
    scheme = t.qscheme()
    data = t.int_repr().contiguous().numpy()
    if scheme in PER_TENSOR_SCHEMES:
        return QuantizedWeight(data, np.array([t.q_scale()]), np.array([t.q_zero_point()]), -1)
    if scheme in PER_CHANNEL_SCHEMES:
        return QuantizedWeight(
            data,
            t.q_per_channel_scales().numpy(),
            t.q_per_channel_zero_points().numpy(),
            int(t.q_per_channel_axis()),
        )
    raise ConversionError(f"{where}: weight quantization scheme {scheme} is not supported")


def _float_bias(b: object, where: str) -> np.ndarray | None:
    if b is None:
        return None
    if not isinstance(b, torch.Tensor) or b.is_quantized or not b.is_floating_point():
        raise ConversionError(f"{where}: bias must be a float tensor or None, got {b!r:.80}")
    return b.detach().float().contiguous().numpy()


def _script_state(packed: object, where: str) -> tuple:
    try:
        state = packed.__getstate__()
    except Exception as e:  # a ScriptObject without a state is no packed param
        raise ConversionError(f"{where}: cannot read the packed params state: {e}") from e
    # ScriptObject.__getstate__ returns (state, qualified class name).
    if isinstance(state, tuple) and len(state) == 2 and isinstance(state[1], str) and isinstance(state[0], tuple):
        state = state[0]
    if not isinstance(state, tuple):
        raise ConversionError(f"{where}: packed params state is {type(state).__name__}, expected a tuple")
    return state


def conv_state_from_tuple(state: tuple, where: str) -> ConvState:
    """Interpret a conv packed-params ``__getstate__`` tuple (layout versions 2 and 3)."""
    if len(state) != 3:
        raise ConversionError(f"{where}: conv packed params state has {len(state)} fields, expected 3")
    version, first, optional = state
    if version == "2":
        if len(first) != 2 or len(optional) != 1:
            raise ConversionError(f"{where}: version-2 conv state needs [config, weight] and [bias]")
        config, weight = first
        if not isinstance(config, torch.Tensor) or config.dtype != torch.int16 or config.dim() != 1:
            raise ConversionError(f"{where}: version-2 conv config must be a 1-D int16 tensor")
        config_np = config.numpy().astype(np.int64)
        bias = optional[0]
        return ConvState(2, config_np, quantized_weight(weight, where), _float_bias(bias, where))
    if version == 3:
        if len(optional) != 3 or optional[1] is None:
            raise ConversionError(f"{where}: version-3 conv state needs [None, weight, bias]")
        config_np = np.asarray(list(first), dtype=np.int64)
        return ConvState(3, config_np, quantized_weight(optional[1], where), _float_bias(optional[2], where))
    raise ConversionError(f"{where}: unsupported conv packed params state version {version!r} (qnnpy reads 2 and 3)")


def conv_state(packed: object, where: str) -> ConvState:
    """Read the state of a ``Conv2dPackedParamsBase`` script object."""
    return conv_state_from_tuple(_script_state(packed, where), where)


def linear_state(packed: object, where: str) -> tuple[QuantizedWeight, np.ndarray | None]:
    """Read (weight, bias) from a ``LinearPackedParamsBase`` script object."""
    state = _script_state(packed, where)
    if len(state) != 2:
        raise ConversionError(f"{where}: linear packed params state has {len(state)} fields, expected (weight, bias)")
    weight, bias = state
    return quantized_weight(weight, where), _float_bias(bias, where)

"""PyTorch's quantization schemes and quantized dtypes as qnnpy reads them, and qnnpy's own quantized tensor
(:class:`QuantizedValue`): one definition for every reader."""
from __future__ import annotations

import torch

PER_TENSOR_SCHEMES = (torch.per_tensor_affine, torch.per_tensor_symmetric)
PER_CHANNEL_SCHEMES = (torch.per_channel_affine, torch.per_channel_symmetric)
# Every scheme PyTorch defines; float-qparams per channel (embedding tables) is never converted.
ALL_SCHEMES = (*PER_TENSOR_SCHEMES, *PER_CHANNEL_SCHEMES, torch.per_channel_affine_float_qparams)

# The integer dtype holding a quantized dtype's values (what int_repr() returns).
INTEGER_DTYPE = {torch.qint8: torch.int8, torch.quint8: torch.uint8, torch.qint32: torch.int32}
# Activation dtypes qnnpy converts, and the IR's name of each.
ACTIVATION_DTYPES = {torch.quint8: "uint8", torch.qint8: "int8"}
WEIGHT_DTYPE = torch.qint8


_QUANTIZED_DTYPE = {integer: quantized for quantized, integer in INTEGER_DTYPE.items()}


class QuantizedValue:
    """Integer values with the qparams that give them meaning: qnnpy's own quantized tensor, for the values that
    reach it as integers and qparams apart (a PT2E graph's quantize / dequantize operands, the tensors a
    TorchScript archive stores), so that qnnpy never makes a torch quantized tensor (PyTorch is removing the
    functions that create them). It answers the part of a torch quantized tensor's interface that qnnpy's
    readers use, so each reader takes either; :func:`is_quantized` tells both apart from float tensors."""

    is_quantized = True

    def __init__(self, values: torch.Tensor, scale: float | torch.Tensor, zero_point: int | torch.Tensor,
                 axis: int | None = None):
        if values.dtype not in _QUANTIZED_DTYPE:
            raise ValueError(f"quantized values must be uint8, int8 or int32, got {values.dtype}")
        self._values = values
        self.axis = None if axis is None else int(axis)
        if self.axis is None:
            self._scale, self._zero_point = float(scale), int(zero_point)
        else:
            self._scale = torch.as_tensor(scale).to(torch.float64).reshape(-1)
            self._zero_point = torch.as_tensor(zero_point).to(torch.int64).reshape(-1)
            if not 0 <= self.axis < values.dim() or len(self._scale) != values.shape[self.axis] \
                    or len(self._zero_point) != len(self._scale):
                raise ValueError(f"per-channel qparams of {len(self._scale)} scales / {len(self._zero_point)} zero "
                                 f"points along axis {axis} do not fit values of shape {tuple(values.shape)}")

    @property
    def dtype(self) -> torch.dtype:
        """The torch quantized dtype of these values (quint8, qint8, qint32)."""
        return _QUANTIZED_DTYPE[self._values.dtype]

    @property
    def shape(self) -> torch.Size:
        return self._values.shape

    @property
    def ndim(self) -> int:
        return self._values.dim()

    def dim(self) -> int:
        return self._values.dim()

    def size(self, dim: int | None = None) -> torch.Size | int:
        return self._values.size() if dim is None else self._values.size(dim)

    def numel(self) -> int:
        return self._values.numel()

    @property
    def nbytes(self) -> int:
        return self._values.nbytes

    def is_floating_point(self) -> bool:
        return False

    def detach(self) -> "QuantizedValue":
        return self

    def int_repr(self) -> torch.Tensor:
        return self._values

    def qscheme(self) -> torch.qscheme:
        return torch.per_tensor_affine if self.axis is None else torch.per_channel_affine

    def q_scale(self) -> float:
        self._per_tensor("q_scale")
        return self._scale

    def q_zero_point(self) -> int:
        self._per_tensor("q_zero_point")
        return self._zero_point

    def q_per_channel_scales(self) -> torch.Tensor:
        self._per_channel("q_per_channel_scales")
        return self._scale

    def q_per_channel_zero_points(self) -> torch.Tensor:
        self._per_channel("q_per_channel_zero_points")
        return self._zero_point

    def q_per_channel_axis(self) -> int:
        self._per_channel("q_per_channel_axis")
        return self.axis

    def dequantize(self) -> torch.Tensor:
        """float32 (q - zero_point) * scale, computed in float32 as PT2E's ``dequantize_per_tensor`` /
        ``dequantize_per_channel`` define it."""
        q = self._values.to(torch.float32)
        if self.axis is None:
            return (q - self._zero_point) * torch.tensor(self._scale, dtype=torch.float32)
        along = [-1 if d == self.axis else 1 for d in range(q.dim())]
        return (q - self._zero_point.to(torch.float32).reshape(along)) * self._scale.to(torch.float32).reshape(along)

    def _per_tensor(self, what: str) -> None:
        if self.axis is not None:
            raise RuntimeError(f"{what}() of values quantized per channel (axis {self.axis})")

    def _per_channel(self, what: str) -> None:
        if self.axis is None:
            raise RuntimeError(f"{what}() of values quantized per tensor")

    def __repr__(self) -> str:
        qparams = f"scale={self._scale}, zero_point={self._zero_point}" if self.axis is None else f"axis={self.axis}"
        return f"QuantizedValue({str(self.dtype).removeprefix('torch.')}, shape={list(self.shape)}, {qparams})"


def is_quantized(value: object) -> bool:
    """Whether ``value`` is a quantized tensor: PyTorch's own or a :class:`QuantizedValue`."""
    return isinstance(value, QuantizedValue) or (isinstance(value, torch.Tensor) and value.is_quantized)


def is_tensor(value: object) -> bool:
    """Whether ``value`` is a tensor: a torch tensor (quantized or not) or a :class:`QuantizedValue`."""
    return isinstance(value, (torch.Tensor, QuantizedValue))

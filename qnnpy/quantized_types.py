"""PyTorch's quantization schemes and quantized dtypes as qnnpy reads them: one definition for every reader."""
from __future__ import annotations

import warnings

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


def quantized_tensor(values: torch.Tensor, scale: float | torch.Tensor, zero_point: int | torch.Tensor,
                     axis: int | None = None) -> torch.Tensor:
    """``values`` (uint8 / int8 / int32) as a torch quantized tensor with these qparams, per channel along
    ``axis`` when it is given. qnnpy's converters read quantized values in this one form, PyTorch's own for
    eager, FX and TorchScript models; the PT2E front end and the TorchScript archive reader make them too.
    PyTorch 2.10+ warns on each creation that these functions "will be removed": a warning about qnnpy's
    internal form, not about the user's model, so it is not passed on."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*quantized tensor creation functions")
        if axis is None:
            return torch._make_per_tensor_quantized_tensor(values, float(scale), int(zero_point))
        return torch._make_per_channel_quantized_tensor(values, torch.as_tensor(scale).double(),
                                                        torch.as_tensor(zero_point).long(), int(axis))

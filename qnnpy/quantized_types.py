"""PyTorch's quantization schemes and quantized dtypes as qnnpy reads them: one definition for every reader."""
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

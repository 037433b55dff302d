"""PyTorch's CPU int4 weight pack read back: the ``qdata`` of torchao's ``Int4OpaqueTensor`` (the weight-only
path of ``PrototypeInt4WeightOnlyConfig``), written by ``aten._convert_weight_to_int4pack_for_cpu`` and read by
``aten._weight_int4pack_mm_for_cpu``.

The pack holds values u in [0, 15] (the weight is (u - 8) * scale + zero), two a byte, in blocks of output
channels (``aten/src/ATen/native/cpu/int4mm_kernel.cpp``, ``weight_to_int4pack_kernel``). Block b of ``block``
rows is stored input channel by input channel, ``rows / 2`` bytes each. In a whole block of PyTorch's AVX-512
and AVX2 builds byte j holds row j (low nibble) and row j + block / 2 (high); in a shorter last block, and in
every block of a build without them, byte j holds rows 2j (low) and 2j + 1 (high). The block is 64 rows under
AVX-512, 32 otherwise. Which layout a PyTorch build packs depends on the CPU it ran on, so the layout is found
by packing a probe with this PyTorch and reading it back under each candidate.
"""
from __future__ import annotations

import functools

import numpy as np
import torch

from qnnpy.errors import ConversionError

# (rows per block, whether a whole block pairs row j with row j + block / 2) of each build.
_LAYOUTS = ((64, True), (32, True), (32, False))


def _unpack(packed: np.ndarray, rows: int, cols: int, block: int, halves: bool) -> np.ndarray:
    """The (rows, cols) values in [0, 15] of ``packed`` (uint8, rows * cols / 2 bytes) under one layout."""
    flat = packed.reshape(-1)
    values = np.empty((rows, cols), np.uint8)
    for start in range(0, rows, block):
        size = min(block, rows - start)
        chunk = flat[start * cols // 2:(start + size) * cols // 2].reshape(cols, size // 2)
        low, high = (chunk & 0x0F).T, (chunk >> 4).T
        if size == block and halves:
            values[start:start + size // 2], values[start + size // 2:start + size] = low, high
        else:
            values[start:start + size:2], values[start + 1:start + size:2] = low, high
    return values


@functools.cache
def _layout() -> tuple[int, bool]:
    """The layout this PyTorch packs in: the candidate that reads back a probe of random values."""
    probe = torch.randint(0, 16, (112, 8), generator=torch.Generator().manual_seed(0), dtype=torch.int32)
    packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(probe, 1).numpy()
    for block, halves in _LAYOUTS:
        if np.array_equal(_unpack(packed, *probe.shape, block, halves), probe.numpy()):
            return block, halves
    raise ConversionError("this PyTorch packs CPU int4 weights (aten._convert_weight_to_int4pack_for_cpu) in a layout "
                          "qnnpy does not know; Int4OpaqueTensor weights cannot be read")


def unpack_int4_weight(packed: torch.Tensor, rows: int, cols: int) -> np.ndarray:
    """The (rows, cols) int4 values u - 8 in [-8, 7], as int8, of a CPU int4 pack of at least ``rows`` rows (torchao
    pads the output channels; the padding is dropped)."""
    stored = packed.shape[0]
    if packed.dtype != torch.uint8 or packed.dim() != 2 or packed.shape[1] * 2 != cols or stored < rows or stored % 16:
        raise ConversionError(f"an int4 CPU pack of shape {tuple(packed.shape)} ({packed.dtype}) for a ({rows}, {cols}) "
                              "weight: expected uint8 (rows rounded up to 16, cols / 2)")
    values = _unpack(packed.detach().contiguous().numpy(), stored, cols, *_layout())[:rows]
    return (values.astype(np.int16) - 8).astype(np.int8)

"""Which elements PyTorch's element-wise kernels compute in their scalar tail.

aten/src/ATen/native/cpu/Loops.h runs vector blocks of 64 8-bit elements and a
scalar loop over the last n % 64 elements in memory order; the runtime reproduces
that position dependence, so the lowering selects between two formulas by position.
"""
from __future__ import annotations

import numpy as np

VECTOR_BLOCK = 64


def tail_mask(shape: tuple[int, ...], nhwc: bool) -> np.ndarray | None:
    """Boolean mask (logical NCHW layout) of the scalar-tail elements, or None when there are none.

    ``nhwc``: memory order is channels_last (rank 4) instead of the logical order."""
    n = int(np.prod(shape))
    tail = n % VECTOR_BLOCK
    if tail == 0:
        return None
    order = np.arange(n).reshape(shape)
    if nhwc and len(shape) == 4:
        # memory index of logical element (b, c, y, x) in NHWC order
        b, c, h, w = shape
        order = np.arange(n).reshape(b, h, w, c).transpose(0, 3, 1, 2)
    return order >= n - tail

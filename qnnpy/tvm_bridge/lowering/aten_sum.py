"""PyTorch's float32 sum of a contiguous row, as Relax adds (runtime/ops/aten_sum.h has the runtime's twin).

aten/src/ATen/native/cpu/SumKernel.cpp (cascade_sum, contiguous inner reduction): rows of at least 8
values are read as 8-lane vectors, summed four vectors at a time (row_sum) in cascade levels
(multi_row_sum); the leftover values are added one by one from 0, then the 8 lanes in order. Shorter
rows take the same cascade one value per lane. A term is a Relax expression (a slice of the row);
``None`` stands for the zero an accumulator starts from (0 + x is x).
"""
from __future__ import annotations

from typing import Any, Callable

from tvm.relax import op as R

LANES = 8
_INTERLEAVE = 4
_LEVELS = 4


def _add(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else R.add(a, b)


def _ceil_log2(x: int) -> int:
    return 1 if x <= 2 else (x - 1).bit_length()


def _multi_row_sum(size: int, term: Callable[[int, int], Any]) -> list[Any]:
    power = max(4, _ceil_log2(size) // _LEVELS)
    step, mask = 1 << power, (1 << power) - 1
    acc: list[list[Any]] = [[None] * _INTERLEAVE for _ in range(_LEVELS)]
    i = 0
    while i + step <= size:
        for _ in range(step):
            for k in range(_INTERLEAVE):
                acc[0][k] = _add(acc[0][k], term(i, k))
            i += 1
        for j in range(1, _LEVELS):
            for k in range(_INTERLEAVE):
                acc[j][k], acc[j - 1][k] = _add(acc[j][k], acc[j - 1][k]), None
            if i & (mask << (j * power)):
                break
    for i in range(i, size):
        for k in range(_INTERLEAVE):
            acc[0][k] = _add(acc[0][k], term(i, k))
    for j in range(1, _LEVELS):
        for k in range(_INTERLEAVE):
            acc[0][k] = _add(acc[0][k], acc[j][k])
    return acc[0]


def _row_sum(count: int, term: Callable[[int], Any]) -> Any:
    groups = count // _INTERLEAVE
    partial = _multi_row_sum(groups, lambda i, k: term(i * _INTERLEAVE + k))
    for i in range(groups * _INTERLEAVE, count):
        partial[0] = _add(partial[0], term(i))
    for k in range(1, _INTERLEAVE):
        partial[0] = _add(partial[0], partial[k])
    return partial[0]


def contiguous_sum(d: Any, n: int) -> Any:
    """The sum over the last axis (``n`` values, n >= 1) of float32 ``d`` [..., n], keeping that axis as 1."""
    def value(i: int) -> Any:
        return R.strided_slice(d, axes=[-1], begin=[i], end=[i + 1])

    if n < LANES:
        return _row_sum(n, value)
    vectors = n // LANES

    def vector(v: int) -> Any:
        return R.strided_slice(d, axes=[-1], begin=[v * LANES], end=[(v + 1) * LANES])

    lanes = _row_sum(vectors, vector)
    total = None
    for i in range(vectors * LANES, n):
        total = _add(total, value(i))
    for lane in range(LANES):
        total = _add(total, R.strided_slice(lanes, axes=[-1], begin=[lane], end=[lane + 1]))
    return total

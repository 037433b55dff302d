"""dlight-style schedule rules for the integer form on CPUs (``ApplyDefaultSchedule`` applies them).

``Int8Gemm`` and ``Int8Linear`` schedule rewrite.py's GEMMs: per parallel task a tile of 16 vectors
of int32 sums accumulated in place in the output, the reduction outside the tile, the innermost
16-lane x 4-byte step tensorized with ``vpdpbusd`` where the target has AVX-512 VNNI
(intrinsics.py), with ``vpmaddwd`` pair sums on AVX2 (the conv GEMMs' pair form), else vectorized
over 16 int32 lanes. ``Columns`` and ``Depthwise`` schedule the
gather and the depthwise sum; ``LoopNest`` takes every other function: producers read once
inlined into their consumer, the outer loops run on TVM's thread pool, the innermost loop
vectorized by 16 where 16 divides it.
"""
from __future__ import annotations

import re
from typing import Any

from tvm import s_tir, tirx
from tvm.s_tir.dlight.analysis import normalize_prim_func
from tvm.s_tir.dlight.cpu.base import CPUScheduleRule

from qnnpy.tvm_bridge.schedules.conv_gemm import PIXEL_BLOCK
from qnnpy.tvm_bridge.schedules.intrinsics import LANES, PAIR_PIXELS, dot_intrinsic, is_aarch64, pairs_intrinsic
from qnnpy.tvm_bridge.schedules.rewrite import COLUMNS_ATTR, DEPTHWISE_ATTR, GEMM_ATTR, LINEAR_ATTR, PAIRS_ATTR

ACCUMULATORS = 16  # vectors of int32 sums per task: enough independent vpdpbusd chains to hide its latency
# AArch64: a 16-lane vector of sums is four of the 32 q registers, so 4 vectors (16 registers), a conv tile of
# 4 channels x 16 pixels: each 64-byte block of activations loaded once for 4 channels' broadcast weights (with or
# without sdot).
AARCH64_ACCUMULATORS = 4


def _loads(block: Any, buffer: Any) -> int:
    """How often ``block`` reads ``buffer``, counted in its printed body (the Python API has no TIR visitor; a
    miscount only keeps a block from being inlined)."""
    return len(re.findall(rf"(?<![\w.]){re.escape(str(buffer.name))}\[", block.body.script()))


def _inline_single_reads(sch: s_tir.Schedule, blocks: list[Any]) -> list[Any]:
    """Inline each injective block whose result one consumer reads once; the others keep their own loops
    (inlining a value read several times copies its expression into each read: the fixed-point
    requantization's chain then grows to thousands of nodes and takes minutes to compile)."""
    kept = []
    for info in blocks:
        block = sch.get(info.block_rv)
        consumers = sch.get_consumers(info.block_rv)
        if (info.is_injective() and len(block.writes) == 1 and len(consumers) == 1
                and _loads(sch.get(consumers[0]), block.writes[0].source) == 1):
            try:
                sch.compute_inline(info.block_rv)
                continue
            except s_tir.ScheduleError:
                pass
        kept.append(info)
    return kept


def _vector_step(sch: s_tir.Schedule, block: Any, first_reduction: Any, lanes: Any, j: Any,
                 intrinsic: str | None) -> None:
    """The innermost step of a GEMM tile: 16 lanes x 4 bytes tensorized with ``intrinsic``, or without one
    the 4 bytes unrolled around a 16-lane int32 vector; the zeroing of the sums split off before the
    reduction (``first_reduction``) and vectorized."""
    if intrinsic is None:
        sch.reorder(j, lanes)
        sch.unroll(j)
        sch.vectorize(lanes)
    init = sch.decompose_reduction(block, first_reduction)
    if intrinsic is not None:
        sch.tensorize(lanes, intrinsic)
    sch.vectorize(sch.get_loops(init)[-1])


class Int8Gemm(CPUScheduleRule):
    """conv_gemm.gemm and conv_gemm.implicit_gemm (functions carrying rewrite.GEMM_ATTR): per task 4 output
    channels x 4 vectors of 16 pixels, or 16 channels x 1 vector where a row has one vector; on AArch64 4 channels
    x 1 vector, each step four ``sdot`` where the target has dotprod; in the AVX2 pair form 4 channels x 2 steps
    of 4 pixels (8 ymm registers of sums), each step tensorized with ``vpmaddwd`` (intrinsics.pairs_intrinsic)."""

    def apply(self, func: tirx.PrimFunc, target: Any, _tunable: bool) -> s_tir.Schedule | None:
        if not self.is_target_available(target) or func.attrs is None or GEMM_ATTR not in func.attrs:
            return None
        sch = s_tir.Schedule(func)
        block = sch.get_sblock("int8_gemm")
        if PAIRS_ATTR not in func.attrs:
            pixel_blocks, accumulators = (((1,), AARCH64_ACCUMULATORS) if is_aarch64(target)
                                          else ((PIXEL_BLOCK // LANES, 2, 1), ACCUMULATORS))
            p_in, first_reduction, j = self._tile(sch, block, LANES, pixel_blocks, accumulators, 0)
            _vector_step(sch, block, first_reduction, p_in, j, dot_intrinsic(target, "pixels"))
            return sch
        p_in, first_reduction, _ = self._tile(sch, block, PAIR_PIXELS, (2, 1), ACCUMULATORS // 2, 1)
        init = sch.decompose_reduction(block, first_reduction)
        sch.tensorize(p_in, pairs_intrinsic(target))
        sch.vectorize(sch.fuse(*sch.get_loops(init)[-2:]))
        return sch

    @staticmethod
    def _tile(sch: s_tir.Schedule, block: Any, lanes: int, pixel_blocks: tuple[int, ...], accumulators: int,
              pair_axes: int) -> tuple[Any, Any, Any]:
        """Loops (n, f, rows..., p[, half]) x (reductions..., j) as a parallel loop over tiles of f_block channels x
        p_block steps of ``lanes`` pixels (at most ``accumulators`` vectors of sums), the reductions outside the
        tile; returns (the step's pixel loop, the first reduction loop, j)."""
        loops = sch.get_loops(block)
        spatial = sum(1 for v in sch.get(block).iter_vars if v.iter_type == tirx.IterVar.DataPar)
        n, f, *rows, p = loops[:spatial - pair_axes]
        halves = loops[spatial - pair_axes:spatial]
        *reductions, j = loops[spatial:]
        steps = int(sch.get(p).extent) // lanes
        p_block = next(b for b in pixel_blocks if steps % b == 0)
        f_block = next(b for b in (accumulators // p_block, 8, 4, 2, 1) if int(sch.get(f).extent) % b == 0)
        f_out, f_in = sch.split(f, [None, f_block])
        p_out, p_mid, p_in = sch.split(p, [None, p_block, lanes])
        sch.reorder(n, f_out, *rows, p_out, *reductions, f_in, p_mid, p_in, *halves, j)
        sch.parallel(sch.fuse(n, f_out, *rows, p_out))
        sch.unroll(f_in)
        sch.unroll(p_mid)
        return p_in, reductions[0], j


class Int8Linear(CPUScheduleRule):
    """linear_gemm.gemm_channels: per task up to 4 rows x 4 blocks of 16 channels (16 vectors of sums; one
    row x 16 blocks for a single token), the reduction outside the tile, the 16-channel x 4-byte step
    tensorized with ``vpdpbusd`` (VNNI) or ``sdot`` (AArch64), with four ``vpmaddwd`` in the AVX2 pair form, else
    vectorized over 16 int32 lanes."""

    def apply(self, func: tirx.PrimFunc, target: Any, _tunable: bool) -> s_tir.Schedule | None:
        if not self.is_target_available(target) or func.attrs is None or LINEAR_ATTR not in func.attrs:
            return None
        sch = s_tir.Schedule(func)
        block = sch.get_sblock("int8_linear")
        if PAIRS_ATTR in func.attrs:
            return self._pairs(sch, block, target)
        m, blocks, lane, k4, j = sch.get_loops(block)
        rows = int(sch.get(m).extent)
        m_block = next(b for b in (4, 2, 1) if rows % b == 0)
        channel_blocks = int(sch.get(blocks).extent)
        accumulators = AARCH64_ACCUMULATORS if is_aarch64(target) else ACCUMULATORS
        b_block = next(b for b in (max(accumulators // m_block, 1), 8, 4, 2, 1) if channel_blocks % b == 0)
        m_out, m_in = sch.split(m, [None, m_block])
        b_out, b_in = sch.split(blocks, [None, b_block])
        sch.reorder(m_out, b_out, k4, m_in, b_in, lane, j)
        sch.parallel(sch.fuse(m_out, b_out))
        sch.unroll(m_in)
        sch.unroll(b_in)
        _vector_step(sch, block, k4, lane, j, dot_intrinsic(target, "channels"))
        return sch

    @staticmethod
    def _pairs(sch: s_tir.Schedule, block: Any, target: Any) -> s_tir.Schedule:
        """The AVX2 pair form: per task up to 2 rows x 1 block of 16 channels (8 ymm registers of pair sums), each
        16-channel x 4-byte step four ``vpmaddwd`` (intrinsics.pairs_intrinsic)."""
        m, blocks, lane, half, k4, j = sch.get_loops(block)
        m_out, m_in = sch.split(m, [None, next(b for b in (2, 1) if int(sch.get(m).extent) % b == 0)])
        sch.reorder(m_out, blocks, k4, m_in, lane, half, j)
        sch.parallel(sch.fuse(m_out, blocks))
        sch.unroll(m_in)
        init = sch.decompose_reduction(block, k4)
        sch.tensorize(lane, pairs_intrinsic(target, "channels"))
        sch.vectorize(sch.fuse(*sch.get_loops(init)[-2:]))
        return sch


class Columns(CPUScheduleRule):
    """conv_gemm.columns: one parallel task per (image, k4) row, whose tap and channel block are then fixed;
    the four bytes of a pixel copied as one vector."""

    def apply(self, func: tirx.PrimFunc, target: Any, _tunable: bool) -> s_tir.Schedule | None:
        if not self.is_target_available(target) or func.attrs is None or COLUMNS_ATTR not in func.attrs:
            return None
        sch = s_tir.Schedule(func)
        n, k4, _, j = sch.get_loops(sch.get_sblock("columns"))
        sch.parallel(sch.fuse(n, k4))
        sch.vectorize(j)
        return sch


class Depthwise(CPUScheduleRule):
    """conv_gemm.depthwise: per task up to 4 vectors of 16 int32 sums of one output row of one channel,
    the kernel taps outside them."""

    def apply(self, func: tirx.PrimFunc, target: Any, _tunable: bool) -> s_tir.Schedule | None:
        if not self.is_target_available(target) or func.attrs is None or DEPTHWISE_ATTR not in func.attrs:
            return None
        sch = s_tir.Schedule(func)
        block = sch.get_sblock("depthwise")
        n, c, oy, ox, ky, kx = sch.get_loops(block)
        vectors = int(sch.get(ox).extent) // LANES
        per_task = next(b for b in (4, 2, 1) if vectors % b == 0)
        ox_out, ox_mid, ox_in = sch.split(ox, [None, per_task, LANES])
        sch.reorder(n, c, oy, ox_out, ky, kx, ox_mid, ox_in)
        task = sch.fuse(n, c, oy, ox_out)
        sch.parallel(task)
        sch.unroll(ox_mid)
        sch.vectorize(ox_in)
        init = sch.decompose_reduction(block, ky)
        sch.vectorize(sch.get_loops(init)[-1])
        return sch


class LoopNest(CPUScheduleRule):
    """Any other function: inline what can be inlined, parallel outer loops, vectorized inner ones."""

    def apply(self, func: tirx.PrimFunc, target: Any, _tunable: bool) -> s_tir.Schedule | None:
        if not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        blocks = normalize_prim_func(sch)
        if blocks is None:
            return None
        blocks = _inline_single_reads(sch, blocks)
        for info in blocks:
            kinds = "".join(i.kind for i in info.iters)
            spatial = len(kinds) - len(kinds.lstrip("S"))
            if spatial == 0 or "O" in kinds:
                continue
            if not info.is_injective():
                self._reduction(sch, info.block_rv, spatial)
                continue
            loops = self._vectorize_innermost(sch, sch.get_loops(info.block_rv)[:spatial])
            if loops:
                sch.parallel(sch.fuse(*loops) if len(loops) > 1 else loops[0])
        return sch

    @staticmethod
    def _reduction(sch: s_tir.Schedule, block: Any, spatial: int) -> None:
        """A reduction (pools, means, float convs): the outer spatial loops in parallel, the innermost split into
        vectors of 16 (or 8) outputs with the reduction loops moved outside them, so that each output still
        reduces in its own order."""
        loops = sch.get_loops(block)
        *outer, last = loops[:spatial]
        extent = sch.get(last).extent
        lanes = next((v for v in (LANES, LANES // 2) if isinstance(extent, tirx.IntImm) and int(extent) % v == 0),
                     None)
        if lanes is None:
            parallel = outer or [last]
            sch.parallel(sch.fuse(*parallel) if len(parallel) > 1 else parallel[0])
            return
        last_out, last_in = sch.split(last, [None, lanes])
        sch.reorder(last_out, *loops[spatial:], last_in)
        sch.parallel(sch.fuse(*outer, last_out) if outer else last_out)
        sch.vectorize(last_in)
        init = sch.decompose_reduction(block, loops[spatial])
        sch.vectorize(sch.get_loops(init)[-1])

    @staticmethod
    def _vectorize_innermost(sch: s_tir.Schedule, loops: list[Any]) -> list[Any]:
        """Vectorize 16 lanes of the innermost loop where 16 divides it, unroll it when it is shorter, else
        leave it a plain inner loop; returns the loops left for the parallel outer loop (the innermost is
        never fused into it: its index would be recovered by a division per element)."""
        extent = sch.get(loops[-1]).extent
        if not isinstance(extent, tirx.IntImm) or len(loops) == 1 and int(extent) % LANES != 0:
            return loops
        outer_extent = sch.get(loops[-2]).extent if len(loops) > 1 else None
        if (int(extent) < LANES and isinstance(outer_extent, tirx.IntImm) and int(outer_extent) % LANES == 0):
            # A short innermost loop (the 4 bytes of a packed pixel) under one of whole vectors (the pixels): the
            # vectors go innermost, so the requantization fused into the packing runs on vectors of 16 pixels
            # read contiguously, and the short loop is unrolled around them.
            outer, inner = sch.split(loops[-2], [None, LANES])
            sch.reorder(outer, loops[-1], inner)
            sch.unroll(loops[-1])
            sch.vectorize(inner)
            return loops[:-2] + [outer]
        if int(extent) % LANES == 0:
            outer, inner = sch.split(loops[-1], [None, LANES])
            sch.vectorize(inner)
            return loops[:-1] + [outer]
        if int(extent) < LANES:
            sch.unroll(loops[-1])
        return loops[:-1]

"""Converters of aten ops that qnnpy computes as a few of its other float ops: 3-D pooling as two 2-D pools (a
3-D window is a product of windows along each axis, and its divisor the product of each axis's count), diagonal as a
strided slice of the flattened matrix, a float embedding bag as a lookup and a product with the bags'
membership, col2im as each kernel offset's columns placed and added, masked_scatter as a gather of the source by the mask's running count, and
cdist / pdist as PyTorch computes each distance (its matrix-product form of the Euclidean distance where PyTorch
takes it), and a 3-D convolution as 2-D ones, one per depth tap of its kernel."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import torch
import torch.fx

from qnnpy.convert.context import ConversionContext
from qnnpy.convert.float_args import axis, bind, max_pool3d_as_2d, operands, per_axis, rank_of, refuse
from qnnpy.convert.torch_weight_reader import QuantizedWeight

Converter = Callable[[ConversionContext, torch.fx.Node], int]
_aten = torch.ops.aten


class _Steps:
    """Intermediate float nodes of one aten node, each named after it with a suffix of its own."""

    def __init__(self, ctx: ConversionContext, node: torch.fx.Node) -> None:
        self.ctx, self.node, self.count = ctx, node, 0

    def add(self, op: str, inputs: list[int], shape: list[int] | None = None, dtype: str = "float32",
            ints: dict[str, list[int]] | None = None, floats: dict[str, float] | None = None) -> int:
        """``op`` of ``inputs``; with ``shape`` an intermediate of that shape, without it the node's output."""
        if shape is None:
            return self.ctx.add_plain(self.node, op, inputs, ints=ints, floats=floats)
        self.count += 1
        return self.ctx.add_plain(self.node, op, inputs, ints=ints, floats=floats,
                                  suffix=f"_{op.removeprefix('float_')}{self.count}", shape=shape, dtype=dtype)

    def reshape(self, x: int, shape: list[int], final: bool = False) -> int:
        return self.add("float_reshape", [x], None if final else shape, self.ctx.graph.value(x)["dtype"],
                        ints={"shape": shape})

    def crop(self, x: int, shape: list[int], begin: list[int], end: list[int]) -> int:
        """[begin, end) of each of the last two axes (``float_slice`` of each axis that changes)."""
        shape = list(shape)
        for a, (b, e) in enumerate(zip(begin, end), start=len(shape) - 2):
            if (b, e) != (0, shape[a]):
                shape[a] = e - b
                x = self.add("float_slice", [x], list(shape), self.ctx.graph.value(x)["dtype"],
                             ints={"axis": [a], "begin": [b], "end": [e], "step": [1]})
        return x

    def scalar(self, value: float | int, dtype: str = "float32") -> int:
        return self.ctx.scalar(value, dtype, self.node)

    def constant(self, array: np.ndarray, suffix: str) -> int:
        where = self.ctx.source(self.node)
        return self.ctx.graph.add_node("float_constant", [], where, where + suffix, str(array.dtype),
                                       params={"value": array}, expected_shape=list(array.shape))


def _pool3d(ctx: ConversionContext, node: torch.fx.Node, x: Any, op: str, ints_hw: dict[str, list[int]],
            ints_d: dict[str, list[int]], floats_hw: dict[str, float] | None = None,
            floats_d: dict[str, float] | None = None) -> int:
    """A 3-D pool (or resampling) of (N, C, D, H, W) as two 2-D ones: ``op`` over (H, W) of (N, C * D, H, W), then
    over D of (N, C, D, Ho * Wo) with a window of width 1 along the second axis."""
    if rank_of(ctx, x) != 5:
        raise refuse(ctx, node, "3-D pooling of an input without its batch axis is not supported")
    n, c, d, h, w = ctx.example(x).shape
    _, _, do, ho, wo = ctx.example(node).shape
    s = _Steps(ctx, node)
    planes = s.reshape(operands(ctx, node, [x], "float32")[0], [n, c * d, h, w])
    pooled_hw = s.add(op, [planes], [n, c * d, ho, wo], ints=ints_hw, floats=floats_hw)
    columns = s.reshape(pooled_hw, [n, c, d, ho * wo])
    pooled = s.add(op, [columns], [n, c, do, ho * wo], ints=ints_d, floats=floats_d)
    return s.reshape(pooled, [n, c, do, ho, wo], final=True)


def _max_pool3d(ctx: ConversionContext, node: torch.fx.Node, args: dict[str, Any]) -> int:
    hw, depth = max_pool3d_as_2d(args["kernel_size"], args["stride"], args["padding"], args["dilation"],
                                 args["ceil_mode"])
    return _pool3d(ctx, node, args["self"], "float_max_pool2d", hw, depth)


def max_pool3d_with_indices(ctx: ConversionContext, parent: torch.fx.Node, index: int, node: torch.fx.Node) -> int:
    """Output 0 of max_pool3d_with_indices: the max over (H, W), then over D (``float_max_pool2d`` twice; the max
    of a 3-D window is the max over D of the maxima of its (H, W) windows); the indices are refused."""
    if index != 0:
        raise refuse(ctx, node, "the indices output of max pooling is not supported")
    return _max_pool3d(ctx, node, bind(parent))


def convert_avg_pool3d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """avg_pool3d: ``float_avg_pool2d`` over (H, W), then over D. PyTorch divides a window's sum by the product of
    its extent along each axis (with or without the padding) or by divisor_override; the first pool divides by the
    (H, W) part (by 1 under divisor_override), the second by the D part (by divisor_override)."""
    args = bind(node)
    kernel = per_axis(args["kernel_size"], 3)
    stride = per_axis(args["stride"], 3, kernel)
    padding = per_axis(args["padding"], 3)
    common = {"ceil_mode": [int(bool(args["ceil_mode"]))], "count_include_pad": [int(bool(args["count_include_pad"]))]}
    override = int(args["divisor_override"] or 0)
    hw = {"kernel": kernel[1:], "stride": stride[1:], "padding": padding[1:], **common,
          "divisor_override": [1 if override else 0]}
    depth = {"kernel": [kernel[0], 1], "stride": [stride[0], 1], "padding": [padding[0], 0], **common,
             "divisor_override": [override]}
    return _pool3d(ctx, node, args["self"], "float_avg_pool2d", hw, depth)


def convert_adaptive_avg_pool3d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """adaptive_avg_pool3d / _adaptive_avg_pool3d: ``float_adaptive_avg_pool2d`` over (H, W), then over D (each
    axis's windows are PyTorch's adaptive ones, floor(i * in / out) to ceil((i + 1) * in / out))."""
    if rank_of(ctx, node.args[0]) != 5:
        raise refuse(ctx, node, "3-D pooling of an input without its batch axis is not supported")
    do, ho, wo = ctx.example(node).shape[2:]
    return _pool3d(ctx, node, node.args[0], "float_adaptive_avg_pool2d", {"output_size": [ho, wo]},
                   {"output_size": [do, ho * wo]})


def convert_upsample_trilinear3d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """upsample_trilinear3d: ``float_upsample_bilinear2d`` over (H, W), then over D with the second axis kept (its
    weights 1 and 0). PyTorch interpolates D outermost, t0 * (h0 * (w0 a + w1 b) + ...) + t1 * (...): the same
    products summed in the same order, each axis's weights from its own scale factor where one is given."""
    args = bind(node)
    x = args.get("input", args.get("self"))
    scales = args.get("scale_factors") or [args.get("scales_d"), args.get("scales_h"), args.get("scales_w")]
    align = {"align_corners": [int(bool(args["align_corners"]))]}
    do, ho, wo = ctx.example(node).shape[2:]
    return _pool3d(ctx, node, x, "float_upsample_bilinear2d", {"output_size": [ho, wo], **align},
                   {"output_size": [do, ho * wo], **align},
                   {"scale_h": float(scales[1] or 0.0), "scale_w": float(scales[2] or 0.0)},
                   {"scale_h": float(scales[0] or 0.0), "scale_w": 0.0})


def convert_diagonal(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """diagonal(x, offset, dim1, dim2): the two axes moved last and flattened (``float_permute``,
    ``float_reshape``), then every (n2 + 1)-th value from the diagonal's first (``float_slice``): element (i, i +
    offset) lies at i * (n2 + 1) + offset, (i - offset, i) at i * (n2 + 1) - offset * n2."""
    args = bind(node)
    x = args["self"]
    shape = list(ctx.example(x).shape)
    rank = len(shape)
    d1, d2 = axis(args["dim1"], rank), axis(args["dim2"], rank)
    offset = int(args["offset"])
    length = ctx.example(node).shape[-1]
    if length == 0:
        raise refuse(ctx, node, f"the diagonal of offset {offset} is empty (qnnpy's tensors have no empty axes)")
    s = _Steps(ctx, node)
    rest = [a for a in range(rank) if a not in (d1, d2)]
    value = ctx.value(x, node)
    dtype = ctx.graph.value(value)["dtype"]
    if rest + [d1, d2] != list(range(rank)):
        value = s.add("float_permute", [value], [shape[a] for a in rest] + [shape[d1], shape[d2]], dtype,
                      ints={"perm": rest + [d1, d2]})
    n2 = shape[d2]
    flat = s.reshape(value, [shape[a] for a in rest] + [shape[d1] * n2])
    begin = offset if offset >= 0 else -offset * n2
    step = n2 + 1
    return s.add("float_slice", [flat], ints={"axis": [len(rest)], "begin": [begin],
                                              "end": [begin + (length - 1) * step + 1], "step": [step]})


def convert_masked_scatter(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """masked_scatter(x, mask, source): where the mask is true, the source's values in order, else x. Each true
    position takes source value number (running count of true positions - 1): ``float_cumsum`` of the flattened
    mask, ``float_take`` from the flattened source, ``float_where``. A source shorter than the mask's count is an
    index error at run time, as in PyTorch."""
    x, mask, source = node.args[:3]
    out = list(ctx.example(node).shape)
    dtype = ctx.plain_dtype(ctx.example(node).dtype, node)
    size = math.prod(out)
    s = _Steps(ctx, node)
    mask_value = ctx.value(mask, node)
    if list(ctx.example(mask).shape) != out:
        mask_value = s.add("float_expand", [mask_value], out, "bool", ints={"shape": out})
    flat_mask = s.reshape(mask_value, [size])
    running = s.add("float_cumsum", [ctx.cast(flat_mask, "int64", node)], [size], "int64", ints={"axis": [0]})
    index = s.add("float_maximum", [s.add("float_sub", [running, s.scalar(1, "int64")], [size], "int64"),
                                    s.scalar(0, "int64")], [size], "int64")
    flat_source = s.reshape(operands(ctx, node, [source], dtype)[0], [ctx.example(source).numel()])
    taken = s.reshape(s.add("float_take", [flat_source, index], [size], dtype, ints={"axis": [0]}), out)
    return s.add("float_where", [mask_value, taken, operands(ctx, node, [x], dtype)[0]])


def _distances(s: _Steps, a: int, b: int, shape: list[int], p: float) -> int:
    """The p-norm distances of rows, directly: a (..., P, 1, M) and b (..., 1, R, M) broadcast to ``shape`` (...,
    P, R, M), reduced over M: p = 0 counts the differing values, p = inf takes the largest |a - b|, else
    (sum |a - b| ^ p) ^ (1 / p) (a square root for p = 2, no root for p = 1)."""
    diff = s.add("float_sub", [a, b], shape)
    reduced = shape[:-1]
    last = {"axes": [len(shape) - 1], "keepdim": [0]}
    if p == 0:
        nonzero = s.add("float_cast", [s.add("float_ne", [diff, s.scalar(0.0)], shape, "bool")], shape)
        return s.add("float_sum", [nonzero], ints=last)
    magnitude = s.add("float_abs", [diff], shape)
    if math.isinf(p):
        return s.add("float_amax", [magnitude], ints=last)
    if p == 1:
        return s.add("float_sum", [magnitude], ints=last)
    if p == 2:
        return s.add("float_sqrt", [s.add("float_sum", [s.add("float_mul", [diff, diff], shape)], reduced, ints=last)])
    powered = s.add("float_pow", [magnitude, s.scalar(float(p))], shape)
    return s.add("float_pow", [s.add("float_sum", [powered], reduced, ints=last), s.scalar(1.0 / p)])


def _euclidean_by_product(s: _Steps, x1: int, x2: int, batch: list[int], p_rows: int, r_rows: int, m: int) -> int:
    """PyTorch's Euclidean distance by matrix product (aten/src/ATen/native/Distance.cpp, _euclidean_dist):
    [-2 x1, |x1|^2, 1] . [x2, 1, |x2|^2], clamped at 0, square-rooted."""
    def norms(x: int, rows: int) -> int:
        squares = s.add("float_mul", [x, x], [*batch, rows, m])
        return s.add("float_sum", [squares], [*batch, rows, 1], ints={"axes": [len(batch) + 1], "keepdim": [1]})

    def ones(rows: int) -> int:
        return s.add("float_expand", [s.scalar(1.0)], [*batch, rows, 1], ints={"shape": [*batch, rows, 1]})

    left = s.add("float_cat", [s.add("float_mul", [x1, s.scalar(-2.0)], [*batch, p_rows, m]), norms(x1, p_rows),
                               ones(p_rows)], [*batch, p_rows, m + 2], ints={"axis": [len(batch) + 1]})
    right = s.add("float_cat", [x2, ones(r_rows), norms(x2, r_rows)], [*batch, r_rows, m + 2],
                  ints={"axis": [len(batch) + 1]})
    right_t = s.add("float_permute", [right], [*batch, m + 2, r_rows],
                    ints={"perm": [*range(len(batch)), len(batch) + 1, len(batch)]})
    product = s.add("float_matmul", [left, right_t], [*batch, p_rows, r_rows])
    return s.add("float_sqrt", [s.add("float_maximum", [product, s.scalar(0.0)], [*batch, p_rows, r_rows])])


def convert_cdist(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """_cdist_forward(x1, x2, p, compute_mode): the p-norm distance of every row of x1 to every row of x2. For p = 2
    PyTorch uses the matrix-product form where compute_mode asks for it (1), or by default (None) where either has
    more than 25 rows; so does qnnpy."""
    args = bind(node)
    p, mode = float(args["p"]), args["compute_mode"]
    a, b = operands(ctx, node, [args["x1"], args["x2"]], "float32")
    shape1, shape2 = list(ctx.example(args["x1"]).shape), list(ctx.example(args["x2"]).shape)
    out = list(ctx.example(node).shape)
    batch, p_rows, r_rows, m = out[:-2], shape1[-2], shape2[-2], shape1[-1]
    s = _Steps(ctx, node)
    if shape1[:-2] != batch:
        a = s.add("float_expand", [a], [*batch, p_rows, m], ints={"shape": [*batch, p_rows, m]})
    if shape2[:-2] != batch:
        b = s.add("float_expand", [b], [*batch, r_rows, m], ints={"shape": [*batch, r_rows, m]})
    if p == 2 and (mode == 1 or (mode is None and (p_rows > 25 or r_rows > 25))):
        return _euclidean_by_product(s, a, b, batch, p_rows, r_rows, m)
    rows = s.reshape(a, [*batch, p_rows, 1, m])
    columns = s.reshape(b, [*batch, 1, r_rows, m])
    return _distances(s, rows, columns, [*batch, p_rows, r_rows, m], p)


def convert_pdist(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """_pdist_forward(x, p): the distance of each pair of rows i < j of x (N, M), in row-major pair order: the
    distances of the pairs taken from x by two constant index lists (``float_take``), computed directly as PyTorch
    does."""
    x, p = node.args[0], float(node.args[1]) if len(node.args) > 1 else 2.0
    n, m = ctx.example(x).shape
    first, second = np.triu_indices(n, 1)
    pairs = len(first)
    if pairs == 0:
        raise refuse(ctx, node, "pdist of one row is empty (qnnpy's tensors have no empty axes)")
    s = _Steps(ctx, node)
    value = operands(ctx, node, [x], "float32")[0]
    left = s.add("float_take", [value, s.constant(first.astype(np.int64), "_first_rows")], [pairs, m], ints={"axis": [0]})
    right = s.add("float_take", [value, s.constant(second.astype(np.int64), "_second_rows")], [pairs, m],
                  ints={"axis": [0]})
    return _distances(s, left, right, [pairs, m], p)


def convert_col2im(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """col2im(cols, output_size, kernel_size, dilation, padding, stride) (``F.fold``): each kernel offset's column
    block (N, C, Lh, Lw) spread out by the stride (``float_pad`` of each value to a stride-sized cell), placed at its
    offset in the padded image (``float_pad``, ``float_slice``) and added, offsets in PyTorch's order (so each pixel
    sums its values in the order aten/src/ATen/native/im2col.h does), then the padding cut off."""
    args = bind(node)
    cols = args["self"]
    (h, w), (kh, kw) = (per_axis(args[k], 2) for k in ("output_size", "kernel_size"))
    (dh, dw), (ph, pw), (sh, sw) = (per_axis(args[k], 2) for k in ("dilation", "padding", "stride"))
    shape = list(ctx.example(cols).shape)
    n = shape[0] if len(shape) == 3 else 1
    c = shape[-2] // (kh * kw)
    lh, lw = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    hp, wp = h + 2 * ph, w + 2 * pw
    s = _Steps(ctx, node)
    blocks = s.reshape(operands(ctx, node, [cols], "float32")[0], [n, c, kh * kw, lh, lw])
    image = None
    for i in range(kh):
        for j in range(kw):
            k = i * kw + j
            block = s.add("float_slice", [blocks], [n, c, 1, lh, lw],
                          ints={"axis": [2], "begin": [k], "end": [k + 1], "step": [1]})
            spread, extent_h, extent_w = s.reshape(block, [n, c, lh, lw]), lh, lw
            if sh > 1 or sw > 1:  # each value followed by stride - 1 zeros along each axis
                cells = s.reshape(spread, [n, c, lh, 1, lw, 1])
                padded = s.add("float_pad", [cells], [n, c, lh, sh, lw, sw],
                               ints={"pads": [0, 0, 0, 0, 0, 0, 0, sh - 1, 0, 0, 0, sw - 1], "mode": [0]}, floats={"value": 0.0})
                extent_h, extent_w = lh * sh, lw * sw
                spread = s.reshape(padded, [n, c, extent_h, extent_w])
            top, left = i * dh, j * dw
            # The trailing zeros of the last cell may reach past the padded image: cut them first.
            keep_h, keep_w = min(extent_h, hp - top), min(extent_w, wp - left)
            spread = s.crop(spread, [n, c, extent_h, extent_w], [0, 0], [keep_h, keep_w])
            placed = s.add("float_pad", [spread], [n, c, hp, wp],
                           ints={"pads": [0, 0, 0, 0, top, hp - top - keep_h, left, wp - left - keep_w], "mode": [0]}, floats={"value": 0.0})
            image = placed if image is None else s.add("float_add", [image, placed], [n, c, hp, wp])
    image = s.crop(image, [n, c, hp, wp], [ph, pw], [ph + h, pw + w])
    return s.reshape(image, list(ctx.example(node).shape), final=True)


_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}


def embedding_bag(ctx: ConversionContext, parent: torch.fx.Node, index: int, node: torch.fx.Node) -> int:
    """Output 0 of _embedding_bag(weight, indices, offsets, ..., mode, ..., per_sample_weights, include_last_offset,
    padding_idx) on a float table: the looked-up rows (``float_take``), a bag-membership matrix built from the
    offsets (index i is in bag b where offsets[b] <= i < the next bag's start; an index equal to padding_idx is in
    none), then per bag the sum (``float_matmul`` of the 0/1 matrix and the rows, the rows weighted first where
    per-sample weights are given), the mean (the sum divided by the bag's count) or the max (``float_amax`` where
    a member, else -inf); an empty bag is 0, as in PyTorch. The other outputs (bag bookkeeping for the backward)
    are refused."""
    if index != 0:
        raise refuse(ctx, node, "only the bags' values (output 0) of embedding_bag are supported")
    args = bind(parent)
    mode = _BAG_MODES.get(int(args["mode"]))
    if mode is None:
        raise refuse(ctx, node, f"embedding_bag mode {args['mode']} is not supported")
    indices, offsets, weights = args["indices"], args["offsets"], args["per_sample_weights"]
    if rank_of(ctx, indices) != 1 or rank_of(ctx, offsets) != 1:
        raise refuse(ctx, node, "embedding_bag takes 1-D indices and offsets here")
    count = ctx.example(indices).shape[0]
    bags, dim = ctx.example(node).shape
    s = _Steps(ctx, node)
    rows = s.add("float_take", [operands(ctx, node, [args["weight"]], "float32")[0], ctx.value(indices, node)],
                 [count, dim], ints={"axis": [0]})
    starts = ctx.cast(ctx.value(offsets, node), "int64", node)
    given = ctx.example(offsets).shape[0]
    firsts = s.crop(s.reshape(starts, [1, given]), [1, given], [0, 0], [1, bags])
    if bool(args["include_last_offset"]):
        nexts = s.crop(s.reshape(starts, [1, given]), [1, given], [0, 1], [1, bags + 1])
    else:
        rest = s.crop(s.reshape(starts, [1, given]), [1, given], [0, 1], [1, bags])
        end = s.constant(np.array([[count]], np.int64), "_end")
        nexts = s.add("float_cat", [rest, end] if bags > 1 else [end], [1, bags], "int64", ints={"axis": [1]})
    position = s.constant(np.arange(count, dtype=np.int64).reshape(count, 1), "_positions")
    member = s.add("float_logical_and", [s.add("float_ge", [position, firsts], [count, bags], "bool"),
                                         s.add("float_lt", [position, nexts], [count, bags], "bool")], [count, bags], "bool")
    if int(args["padding_idx"]) >= 0:
        kept = s.add("float_ne", [s.reshape(ctx.cast(ctx.value(indices, node), "int64", node), [count, 1]),
                                  s.scalar(int(args["padding_idx"]), "int64")], [count, 1], "bool")
        member = s.add("float_logical_and", [member, kept], [count, bags], "bool")
    membership = s.add("float_permute", [s.add("float_cast", [member], [count, bags])], [bags, count],
                       ints={"perm": [1, 0]})
    if weights is not None:
        if mode != "sum":
            raise refuse(ctx, node, "per_sample_weights are only supported in mode sum, as in PyTorch")
        column = s.reshape(operands(ctx, node, [weights], "float32")[0], [count, 1])
        rows = s.add("float_mul", [rows, column], [count, dim])
    if mode == "max":
        grid = s.reshape(s.add("float_permute", [member], [bags, count], "bool", ints={"perm": [1, 0]}),
                         [bags, count, 1])
        masked = s.add("float_where", [grid, s.reshape(rows, [1, count, dim]), s.scalar(float("-inf"))],
                       [bags, count, dim])
        largest = s.add("float_amax", [masked], [bags, dim], ints={"axes": [1], "keepdim": [0]})
        sizes = s.add("float_sum", [membership], [bags, 1], ints={"axes": [1], "keepdim": [1]})
        filled = s.add("float_gt", [sizes, s.scalar(0.0)], [bags, 1], "bool")
        return s.add("float_where", [filled, largest, s.scalar(0.0)])
    if mode == "sum":
        return s.add("float_matmul", [membership, rows])
    total = s.add("float_matmul", [membership, rows], [bags, dim])
    sizes = s.add("float_sum", [membership], [bags, 1], ints={"axes": [1], "keepdim": [1]})
    return s.add("float_div", [total, s.add("float_maximum", [sizes, s.scalar(1.0)], [bags, 1])])


def conv3d_by_depth_taps(ctx: ConversionContext, node: torch.fx.Node, x: Any, weight: QuantizedWeight,
                         bias: np.ndarray | None, args: dict[str, Any]) -> int:
    """A 3-D convolution of (N, C, D, H, W) as 2-D ones: output depth z sums, over the kernel's depth taps t, the
    2-D convolution of input depth z * stride + t * dilation (of the depth-padded input) with the weight's tap t.
    Each tap is one ``float_conv2d`` of all output depths at once (the strided depth slice, depth moved next to
    the batch and merged with it); the taps are added in order, the bias on the first."""
    stride, padding, dilation = (per_axis(args[k], 3) for k in ("stride", "padding", "dilation"))
    n, c, d, h, w = ctx.example(x).shape
    _, o, do, ho, wo = ctx.example(node).shape
    taps = weight.data.shape[2]
    s = _Steps(ctx, node)
    value = operands(ctx, node, [x], "float32")[0]
    depth = d + 2 * padding[0]
    if padding[0]:
        value = s.add("float_pad", [value], [n, c, depth, h, w],
                      ints={"pads": [0, 0, 0, 0, padding[0], padding[0], 0, 0, 0, 0], "mode": [0]}, floats={"value": 0.0})
    attributes = {"stride": stride[1:], "padding": padding[1:], "dilation": dilation[1:], "groups": [int(args["groups"])]}
    where = ctx.source(node)
    total = None
    for t in range(taps):
        begin = t * dilation[0]
        planes = s.add("float_slice", [value], [n, c, do, h, w],
                       ints={"axis": [2], "begin": [begin], "end": [begin + (do - 1) * stride[0] + 1], "step": [stride[0]]})
        batched = s.reshape(s.add("float_permute", [planes], [n, do, c, h, w], ints={"perm": [0, 2, 1, 3, 4]}),
                            [n * do, c, h, w])
        s.count += 1
        tap = QuantizedWeight(np.ascontiguousarray(weight.data[:, :, t]), weight.scale, weight.zero_point, weight.axis)
        y = ctx.graph.add_float_layer("float_conv2d", batched, where, f"{where}_tap{s.count}", tap.data, tap.scale,
                                      tap.zero_point, tap.axis, bias if t == 0 else None, attributes, [n * do, o, ho, wo])
        total = y if total is None else s.add("float_add", [total, y], [n * do, o, ho, wo])
    return s.add("float_permute", [s.reshape(total, [n, do, o, ho, wo])], ints={"perm": [0, 2, 1, 3, 4]})


def composed_converters() -> dict[Any, Converter]:
    """The converters of the ops computed as compositions of other float ops, by aten op overload."""
    return {
        _aten.avg_pool3d.default: convert_avg_pool3d,
        _aten._adaptive_avg_pool3d.default: convert_adaptive_avg_pool3d,
        _aten.adaptive_avg_pool3d.default: convert_adaptive_avg_pool3d,
        _aten.upsample_trilinear3d.vec: convert_upsample_trilinear3d,
        _aten.upsample_trilinear3d.default: convert_upsample_trilinear3d,
        _aten.diagonal.default: convert_diagonal,
        _aten.masked_scatter.default: convert_masked_scatter,
        _aten._cdist_forward.default: convert_cdist,
        _aten._pdist_forward.default: convert_pdist,
        _aten.col2im.default: convert_col2im,
    }


COMPOSED_TUPLE_OUTPUTS = {_aten.max_pool3d_with_indices.default: max_pool3d_with_indices,
                          _aten._embedding_bag.default: embedding_bag}

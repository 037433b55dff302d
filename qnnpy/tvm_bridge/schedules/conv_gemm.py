"""The integer conv2d as TVM tensor expressions: pack the input, then one int8 GEMM over it (or over
gathered columns of it), or a depthwise sum over the centred input.

    acc[n, f, oy, ox] = sum_k (x[n, k] - z_x) w[f, k]
                      = sum_k x'[n, k] w[f, k] - z_x' colsum[f]
    (x' = x + 128, z_x' = z_x + 128 for int8 x)

so the GEMM multiplies unsigned activation bytes by signed weight bytes, as ``vpdpbusd``
does, and the zero point becomes one per-channel constant. With ``signed`` (AArch64's ``sdot``, signed bytes
both): x' = x - 128 and z_x' = z_x - 128 for uint8 x, x itself for int8 x. The reduction index k runs over
(ky, kx, c4, j) with the input channel c = 4 c4 + j, so the four bytes one instruction step
reads are four channels of one input pixel (``pack_input`` puts them side by side). Padded
positions hold z_x', whose centred value is 0; padded channels have zero weights.
"""
from __future__ import annotations

from typing import Any

from tvm import te, tirx

PIXEL_BLOCK = 64  # the pixels one GEMM tile computes: 4 vectors of 16 (rules.py)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def byte_dtype(signed: bool) -> str:
    """The dtype of the GEMM's activation bytes x'."""
    return "int8" if signed else "uint8"


def shifted_zero_point(dtype: str, zero_point: int, signed: bool = False) -> int:
    """z_x': the zero point of the bytes x' (unsigned, or ``signed``) that hold an activation of ``dtype``."""
    if signed:
        return zero_point - (128 if str(dtype) == "uint8" else 0)
    return zero_point + (128 if str(dtype) == "int8" else 0)


def activation_byte(value: Any, signed: bool = False) -> Any:
    """x' of one activation value x: unsigned, x + 128 for int8 and x itself for uint8; ``signed``, x - 128
    for uint8 and x itself for int8."""
    if str(value.dtype) == byte_dtype(signed):
        return value
    return (value.astype("int32") + (-128 if signed else 128)).astype(byte_dtype(signed))


def clamped_index(index: Any, extent: int) -> Any:
    """``index`` clamped into [0, extent): the load under an ``if_then_else`` stays in bounds even where a
    vectorized loop evaluates both branches."""
    return tirx.max(tirx.min(index, extent - 1), 0)


def pack_input(x: te.Tensor, zero_point: int, padding: tuple[int, int, int, int], width: int,
               phases: int = 1, signed: bool = False) -> te.Tensor:
    """x (N, C, H, W) int8/uint8 -> (N, ceil(C/4), H + pads, phases, ceil(width / phases), 4) bytes holding x',
    padded with z_x'; padded column q*phases + r is at [..., r, q, :] (``phases``: the conv's horizontal
    stride, so that the 16 outputs of a vector read 16 consecutive pixels of one phase; ``width``: the
    padded columns the conv reads, whole 16-pixel vectors past the right edge included)."""
    n, c, h, w = (int(d) for d in x.shape)
    top, left, bottom, _ = padding
    fill = tirx.const(shifted_zero_point(x.dtype, zero_point, signed), byte_dtype(signed))

    def value(b: Any, c4: Any, y: Any, phase: Any, q: Any, j: Any) -> Any:
        ch, iy, ix = c4 * 4 + j, y - top, q * phases + phase - left
        inside = tirx.all(ch < c, iy >= 0, iy < h, ix >= 0, ix < w)
        v = x[b, clamped_index(ch, c), clamped_index(iy, h), clamped_index(ix, w)]
        return tirx.if_then_else(inside, activation_byte(v, signed), fill)

    return te.compute((n, _ceil(c, 4), h + top + bottom, phases, _ceil(width, phases), 4), value,
                      name="packed_input")


def pointwise_columns(x: te.Tensor, zero_point: int, signed: bool = False) -> te.Tensor:
    """The columns of a 1x1, stride-1, unpadded conv straight from x: (N, ceil(C/4), H*W padded to
    PIXEL_BLOCK, 4)."""
    n, c, h, w = (int(d) for d in x.shape)
    fill = tirx.const(shifted_zero_point(x.dtype, zero_point, signed), byte_dtype(signed))
    pixels = h * w

    def value(b: Any, c4: Any, p: Any, j: Any) -> Any:
        ch, q = c4 * 4 + j, clamped_index(p, pixels)
        v = x[b, clamped_index(ch, c), q // w, q % w]
        return tirx.if_then_else(tirx.all(ch < c, p < pixels), activation_byte(v, signed), fill)

    return te.compute((n, _ceil(c, 4), _ceil(pixels, PIXEL_BLOCK) * PIXEL_BLOCK, 4), value, name="columns")


def columns(packed: te.Tensor, kernel: tuple[int, int], strides: tuple[int, int], dilation: tuple[int, int],
            out_hw: tuple[int, int]) -> te.Tensor:
    """The GEMM's left operand (N, KH*KW*C4, P padded to PIXEL_BLOCK, 4) from the packed input; the padded
    pixels repeat the last one (their sums are sliced away)."""
    n, c4, _, _, _, _ = (int(d) for d in packed.shape)
    kh, kw = kernel
    oh, ow = out_hw
    pixels = oh * ow

    def value(b: Any, k4: Any, p: Any, j: Any) -> Any:
        tap, c = k4 // c4, k4 % c4
        p = clamped_index(p, pixels)
        oy, ox = p // ow, p % ow
        return packed[b, c, oy * strides[0] + (tap // kw) * dilation[0], 0,
                      ox * strides[1] + (tap % kw) * dilation[1], j]

    return te.compute((n, kh * kw * c4, _ceil(pixels, PIXEL_BLOCK) * PIXEL_BLOCK, 4), value, name="columns")


def reduced(channels_and_pixels: tuple[int, ...], value: Any, pairs: bool, name: str) -> te.Tensor:
    """The GEMM's output: ``value(index, j)`` summed over the 4 bytes j of each k4 step and the other
    reduce axes ``value`` uses; with ``pairs`` the sums of bytes (0, 1) and (2, 3) stay apart in a last
    axis of 2 (the AVX2 form: intrinsics.pairs_intrinsic), to be added by the caller."""
    rj = te.reduce_axis((0, 2 if pairs else 4), "j")
    if pairs:
        return te.compute((*channels_and_pixels, 2), lambda *i: value(i[:-1], i[-1] * 2 + rj, rj), name=name)
    return te.compute(channels_and_pixels, lambda *i: value(i, rj, rj), name=name)


def implicit_gemm(packed: te.Tensor, weight: te.Tensor, kernel: tuple[int, int], strides: tuple[int, int],
                  dilation: tuple[int, int], out_rows: int, out_width: int, pairs: bool = False) -> te.Tensor:
    """A conv read straight from the packed input (pack_input with the horizontal stride as its phases):
    acc[n, f, oy, ox] = sum over (ky, kx, c4, j) of x'[n, 4 c4 + j, oy*sy + ky*dy, ox*sx + kx*dx] *
    weight[f, (ky*KW + kx)*C4 + c4, j]; ``out_width`` is the output width rounded up to 16 (the columns past
    the output's are sliced away); ``pairs``: see ``reduced``."""
    n, c4, _, phases, _, _ = (int(d) for d in packed.shape)
    kh, kw = kernel
    channels = int(weight.shape[0])
    ry, rx = te.reduce_axis((0, kh), "ky"), te.reduce_axis((0, kw), "kx")
    rc = te.reduce_axis((0, c4), "c4")

    def value(index: tuple[Any, ...], j: Any, rj: Any) -> Any:
        b, f, oy, ox = index
        tap = rx * dilation[1]
        pixel = packed[b, rc, oy * strides[0] + ry * dilation[0], tap % phases, ox + tap // phases, j]
        return te.sum(pixel.astype("int32") * weight[f, (ry * kw + rx) * c4 + rc, j].astype("int32"),
                      axis=[ry, rx, rc, rj])

    return reduced((n, channels, out_rows, out_width), value, pairs, "int8_gemm")


def gemm(cols: te.Tensor, weight: te.Tensor, pairs: bool = False) -> te.Tensor:
    """acc[n, f, p] = sum_{k4, j} cols[n, k4, p, j] * weight[f, k4, j] in int32 (weight: (F, K4, 4) int8);
    ``pairs``: see ``reduced``."""
    n, k4, pixels, _ = (int(d) for d in cols.shape)
    channels = int(weight.shape[0])
    rk = te.reduce_axis((0, k4), "k4")

    def value(index: tuple[Any, ...], j: Any, rj: Any) -> Any:
        b, f, p = index
        return te.sum(cols[b, rk, p, j].astype("int32") * weight[f, rk, j].astype("int32"), axis=[rk, rj])

    return reduced((n, channels, pixels), value, pairs, "int8_gemm")


def depth_taps(x: te.Tensor, zero_point: int, kernel_depth: int, stride: int, front: int, dilation: int,
               frames: int) -> te.Tensor:
    """x (N, C, D, H, W) as the images of a conv3d's output frames: (N * frames, C * kernel_depth, H, W), image
    b * frames + o holding at channel c * kernel_depth + t the input frame o * stride - front + t * dilation of
    channel c, the zero point (a centred 0) where that frame is in the padding."""
    n, c, d, h, w = (int(v) for v in x.shape)

    def value(image: Any, channel: Any, y: Any, q: Any) -> Any:
        frame = (image % frames) * stride - front + (channel % kernel_depth) * dilation
        v = x[image // frames, channel // kernel_depth, clamped_index(frame, d), y, q]
        return tirx.if_then_else(tirx.all(frame >= 0, frame < d), v, tirx.const(zero_point, x.dtype))

    return te.compute((n * frames, c * kernel_depth, h, w), value, name="depth_taps")


def spread_input(x: te.Tensor, zero_point: int, strides: tuple[int, int]) -> te.Tensor:
    """x (N, C, H, W) with stride - 1 zero points between its pixels along H and W: ((H-1)*sy + 1, (W-1)*sx + 1),
    the input of the conv a transposed conv equals (a zero point is a centred 0)."""
    n, c, h, w = (int(d) for d in x.shape)
    sy, sx = strides

    def value(b: Any, ch: Any, y: Any, q: Any) -> Any:
        on_grid = tirx.all(y % sy == 0, q % sx == 0)
        return tirx.if_then_else(on_grid, x[b, ch, clamped_index(y // sy, h), clamped_index(q // sx, w)],
                                 tirx.const(zero_point, x.dtype))

    return te.compute((n, c, (h - 1) * sy + 1, (w - 1) * sx + 1), value, name="spread_input")


def pad_centered(x: te.Tensor, zero_point: int, padding: tuple[int, int, int, int], width: int,
                 phases: int) -> te.Tensor:
    """x - z_x as int16 with 0 in the padding, its columns split by ``phases`` (the conv's horizontal stride):
    (N, C, H + pads, phases, ceil(width / phases)), padded column q*phases + r at [..., r, q]. A strided
    depthwise conv then reads 16 consecutive outputs' inputs from one contiguous row of one phase."""
    n, c, h, w = (int(d) for d in x.shape)
    top, left, bottom, _ = padding

    def value(b: Any, ch: Any, y: Any, phase: Any, q: Any) -> Any:
        iy, ix = y - top, q * phases + phase - left
        inside = tirx.all(iy >= 0, iy < h, ix >= 0, ix < w)
        v = x[b, ch, clamped_index(iy, h), clamped_index(ix, w)]
        return tirx.if_then_else(inside, v.astype("int16") - tirx.const(zero_point, "int16"),
                                 tirx.const(0, "int16"))

    return te.compute((n, c, h + top + bottom, phases, _ceil(width, phases)), value, name="centered_input")


def depthwise(padded: te.Tensor, weight: te.Tensor, strides: tuple[int, int], dilation: tuple[int, int],
              out_rows: int, out_width: int) -> te.Tensor:
    """acc[n, c, oy, ox] = sum over (ky, kx) of x_centered[n, c, oy*sy + ky*dy, ox*sx + kx*dx] * weight[c, ky, kx]
    in int32, read from pad_centered's phases (weight (C, KH, KW) int8); ``out_width`` rounded up to 16 as in
    implicit_gemm."""
    n, c, _, phases, _ = (int(d) for d in padded.shape)
    _, kh, kw = (int(d) for d in weight.shape)
    ry, rx = te.reduce_axis((0, kh), "ky"), te.reduce_axis((0, kw), "kx")

    def value(b: Any, ch: Any, oy: Any, ox: Any) -> Any:
        tap = rx * dilation[1]
        column = padded[b, ch, oy * strides[0] + ry * dilation[0], tap % phases, ox + tap // phases]
        return te.sum(column.astype("int32") * weight[ch, ry, rx].astype("int32"), axis=[ry, rx])

    return te.compute((n, c, out_rows, out_width), value, name="depthwise")

"""A Relax pass over the integer form: each int8 conv2d becomes the GEMM of conv_gemm.py, each int8 matmul
(linear layer) the GEMM of linear_gemm.py.

``lower_integer`` writes a conv layer as ``R.nn.conv2d(x - z_x widened to int16, w)`` with int32
accumulation: portable, and left by TVM's CPU pipeline as plain loops. Where the weight is a
constant (the params bound into the module) and the conv is NCHW/OIHW, this pass
writes it as an ``int8_gemm`` (weights packed here, once) minus z_x' colsum[f], which yields the
same int32 sums: over the input itself for an unpadded stride-1 1x1 conv, over the packed input
(its columns split by the stride) where the output rows fill 16-pixel vectors well
(conv_gemm.implicit_gemm), over gathered columns otherwise; ``rules.Int8Gemm`` schedules the GEMM.
A depthwise conv (one group per channel) becomes ``conv_gemm.depthwise`` over the centred, padded input,
scheduled by ``rules.Depthwise``; another grouped conv one such GEMM per group; a transposed conv (one group) the
conv it equals over its input spread by the stride; a conv3d the conv2d of its output frames' depth taps. A matmul
whose right operand is a constant int8 weight (or its transpose) becomes ``linear_gemm.gemm_channels``, scheduled
by ``rules.Int8Linear``.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import tvm
from tvm import relax, tirx
from tvm.relax import op as R

from qnnpy.tvm_bridge.schedules import conv_gemm, intrinsics, linear_gemm

GEMM_ATTR = "qnnpy.int8_gemm"
COLUMNS_ATTR = "qnnpy.columns"
DEPTHWISE_ATTR = "qnnpy.depthwise"
LINEAR_ATTR = "qnnpy.int8_linear"
PAIRS_ATTR = "qnnpy.pair_sums"
# relax's OpPatternKind kOpaque: FuseOps leaves the columns and the GEMM alone (fused into their consumer the
# gather would recompute the previous layer's epilogue KH*KW times); the epilogue fuses after the GEMM.
_OPAQUE = 8


def _bound(mutator: Any, expr: Any) -> Any:
    """The value a dataflow variable is bound to (the expression itself when it is not a variable)."""
    return mutator.lookup_binding(expr) if isinstance(expr, relax.Var) else expr


def _centered_input(mutator: Any, data: Any) -> tuple[Any, int] | None:
    """(x, z_x) when ``data`` is lower_integer's ``subtract(astype(x, "int16"), z_x)`` of an 8-bit x."""
    sub = _bound(mutator, data)
    if not isinstance(sub, relax.Call) or sub.op != tvm.ir.Op.get("relax.subtract"):
        return None
    cast = _bound(mutator, sub.args[0])
    zero = sub.args[1]
    if (not isinstance(cast, relax.Call) or cast.op != tvm.ir.Op.get("relax.astype")
            or not isinstance(zero, tvm.ir.expr.Constant) or zero.value.numpy().size != 1):
        return None
    x = cast.args[0]
    if str(x.ty.dtype) not in ("int8", "uint8") or str(cast.attrs.dtype) != "int16":
        return None
    return x, int(zero.value.numpy().reshape(()))


def _padded_width(width: int) -> int:
    """The output width rounded up to whole vectors (the implicit GEMM is used where that adds at most a
    seventh: 56 -> 64 and 14 -> 16, not 7 -> 16)."""
    return -(-width // intrinsics.LANES) * intrinsics.LANES


def _columns_read(out_width: int, stride: int, dilation: int, kernel_width: int) -> int:
    """How many padded input columns ``out_width`` outputs of a row read."""
    return (out_width - 1) * stride + dilation * (kernel_width - 1) + 1


def _packed_weight(w: np.ndarray) -> np.ndarray:
    """(F, C, KH, KW) -> (F, KH*KW*ceil(C/4), 4): k = ((ky*KW + kx)*C4 + c4)*4 + j, c = 4*c4 + j, zero padded."""
    f, c, kh, kw = w.shape
    c4 = -(-c // 4)
    padded = np.zeros((f, c4 * 4, kh, kw), np.int8)
    padded[:, :c] = w
    return np.ascontiguousarray(padded.transpose(0, 2, 3, 1).reshape(f, kh * kw * c4, 4))


def _linear_weight(mutator: Any, rhs: Any) -> np.ndarray | None:
    """The (N, K) int8 weight of lower_integer's matmul operand: a (K, N) constant or the transpose of an (N, K) one."""
    value = _bound(mutator, rhs)
    if isinstance(value, tvm.ir.expr.Constant):
        w = value.value.numpy()
        return np.ascontiguousarray(w.T) if w.ndim == 2 and w.dtype == np.int8 else None
    if (isinstance(value, relax.Call) and value.op == tvm.ir.Op.get("relax.permute_dims")
            and isinstance(value.args[0], tvm.ir.expr.Constant)
            and (value.attrs.axes is None or [int(a) for a in value.attrs.axes] == [1, 0])):
        w = value.args[0].value.numpy()
        return w if w.ndim == 2 and w.dtype == np.int8 else None
    return None


def _packed_linear_weight(w: np.ndarray) -> np.ndarray:
    """(N, K) -> (ceil(N/16), ceil(K/4), 16, 4), zero padded: block [b, k4] holds channels 16b.. x weights 4k4.."""
    n, k = w.shape
    blocks, k4 = -(-n // intrinsics.LANES), -(-k // 4)
    padded = np.zeros((blocks * intrinsics.LANES, k4 * 4), np.int8)
    padded[:n, :k] = w
    return np.ascontiguousarray(padded.reshape(blocks, intrinsics.LANES, k4, 4).transpose(0, 2, 1, 3))


def _pair_sums_added(acc: Any) -> Any:
    """A GEMM's sums in the AVX2 pair form (a last axis of 2) added into one."""
    last = len(acc.ty.shape) - 1
    halves = [R.squeeze(R.strided_slice(acc, axes=[last], begin=[i], end=[i + 1]), [last]) for i in (0, 1)]
    return R.add(*halves)


@relax.expr_functor.mutator
class _Int8LayersToGemm(relax.PyExprMutator):
    def __init__(self, mod: Any, pairs: bool, signed: bool):
        super().__init__(mod)
        self.pairs, self.signed = pairs, signed

    def _gemm(self, compute: Any, *args: Any) -> Any:
        """Emit conv_gemm's ``compute`` GEMM; in the AVX2 pair form its two sums per output are added here."""
        attrs = {GEMM_ATTR: 1, "op_pattern": _OPAQUE, **({PAIRS_ATTR: 1} if self.pairs else {})}
        acc = self.builder_.emit_te(compute, *args, pairs=self.pairs, primfunc_name_hint="int8_gemm",
                                    primfunc_attrs=attrs)
        return _pair_sums_added(acc) if self.pairs else acc

    def visit_call_(self, call: Any) -> Any:
        call = super().visit_call_(call)
        if call.op == tvm.ir.Op.get("relax.matmul"):
            return self._linear(call)
        if call.op == tvm.ir.Op.get("relax.nn.conv2d_transpose"):
            return self._transposed(call)
        if call.op == tvm.ir.Op.get("relax.nn.conv3d"):
            return self._conv3d(call)
        if call.op != tvm.ir.Op.get("relax.nn.conv2d"):
            return call
        layer = self._int8_layer(call, "NCHW", "OIHW")
        if layer is None:
            return call
        x, zero_point, w = layer
        attrs = call.attrs
        conv = self._conv2d(x, zero_point, w, tuple(int(s) for s in attrs.strides), tuple(int(p) for p in attrs.padding),
                            tuple(int(d) for d in attrs.dilation), int(attrs.groups))
        return call if conv is None else conv

    def _int8_layer(self, call: Any, data_layout: str, kernel_layout: str) -> tuple[Any, int, np.ndarray] | None:
        """(x, z_x, w) of lower_integer's conv of ``x - z_x`` (an 8-bit x) with a constant int8 weight ``w`` in these
        layouts and int32 sums, else None."""
        attrs = call.attrs
        if (str(attrs.data_layout) != data_layout or str(attrs.kernel_layout) != kernel_layout
                or str(attrs.out_dtype) != "int32" or not isinstance(call.args[1], tvm.ir.expr.Constant)):
            return None
        centered = _centered_input(self, call.args[0])
        w = call.args[1].value.numpy()
        if centered is None or w.dtype != np.int8:
            return None
        return centered[0], centered[1], w

    def _conv3d(self, call: Any) -> Any:
        """A conv3d (the integer form's NCDHW / OIDHW) as the conv2d the runtime computes (src/runtime/conv3d.h): one
        image per output frame, whose channels are each input channel's depth taps (conv_gemm.depth_taps); the
        kernel's depth becomes part of its input channels; the frames back in place after."""
        layer = self._int8_layer(call, "NCDHW", "OIDHW")
        if layer is None:
            return call
        x, zero_point, w = layer
        attrs = call.attrs
        n, _, d, _, _ = (int(v) for v in x.ty.shape)
        f, cg, kd, kh, kw = w.shape
        sd, sh, sw = (int(v) for v in attrs.strides)
        front, top, left, back, bottom, right = (int(v) for v in attrs.padding)
        dd, dh, dw = (int(v) for v in attrs.dilation)
        frames = (d + front + back - dd * (kd - 1) - 1) // sd + 1
        taps = self.builder_.emit_te(conv_gemm.depth_taps, x, zero_point, kd, sd, front, dd, frames,
                                     primfunc_name_hint="depth_taps")
        conv = self._conv2d(taps, zero_point, w.reshape(f, cg * kd, kh, kw), (sh, sw), (top, left, bottom, right),
                            (dh, dw), int(attrs.groups))
        if conv is None:
            return call
        acc = self.builder_.emit(conv)
        _, _, oh, ow = (int(v) for v in acc.ty.shape)
        return R.permute_dims(R.reshape(acc, (n, frames, f, oh, ow)), [0, 2, 1, 3, 4])

    def _conv2d(self, x: Any, zero_point: int, w: np.ndarray, strides: tuple[int, int],
                padding: tuple[int, int, int, int], dilation: tuple[int, int], groups: int) -> Any:
        """The int32 sums of a conv2d of the 8-bit ``x`` with the int8 ``w`` as this pass's GEMMs (depthwise, one per group, or one
        over all channels), or None where none applies (the caller keeps TVM's conv)."""
        n, c, h, width = (int(d) for d in x.ty.shape)
        f, _, kh, kw = w.shape
        if c % groups or f % groups or (groups == c and f != c):
            return None
        oh = (h + padding[0] + padding[2] - dilation[0] * (kh - 1) - 1) // strides[0] + 1
        ow = (width + padding[1] + padding[3] - dilation[1] * (kw - 1) - 1) // strides[1] + 1
        bb = self.builder_
        if groups == c and c > 1:
            out_width = _padded_width(ow)
            padded = bb.emit_te(conv_gemm.pad_centered, x, zero_point, padding,
                                _columns_read(out_width, strides[1], dilation[1], kw), strides[1],
                                primfunc_name_hint="centered_input")
            acc = bb.emit_te(conv_gemm.depthwise, padded, relax.const(np.ascontiguousarray(w[:, 0])), strides,
                             dilation, oh, out_width, primfunc_name_hint="depthwise",
                             primfunc_attrs={DEPTHWISE_ATTR: 1, "op_pattern": _OPAQUE})
            return R.strided_slice(acc, axes=[3], begin=[0], end=[ow])
        if groups > 1:
            # A grouped conv (ResNeXt, RegNet): one GEMM per group over its slice of the input channels, their sums
            # concatenated along the output channels (each group's sums are its own, as in TVM's grouped conv2d).
            cg, fg = c // groups, f // groups
            parts = []
            for g in range(groups):
                part = bb.emit(R.strided_slice(x, axes=[1], begin=[g * cg], end=[(g + 1) * cg]))
                parts.append(bb.emit(self._dense_conv(part, zero_point, w[g * fg:(g + 1) * fg], strides, padding,
                                                      dilation, (oh, ow))))
            return R.concat(parts, axis=1)
        return self._dense_conv(x, zero_point, w, strides, padding, dilation, (oh, ow))

    def _transposed(self, call: Any) -> Any:
        """A transposed conv with one group as the conv it equals: over the input with stride - 1 zero points inserted
        between its pixels (centred values 0), padded by dilation * (kernel - 1) - padding (plus the output padding
        after), with the kernel flipped and its in / out channels swapped, stride 1; refused (kept TVM's) where that
        padding would be negative."""
        layer = self._int8_layer(call, "NCHW", "IOHW")
        attrs = call.attrs
        if layer is None or int(attrs.groups) != 1:
            return call
        x, zero_point, w = layer
        _, _, kh, kw = w.shape
        strides = tuple(int(v) for v in attrs.strides)
        dilation = tuple(int(v) for v in attrs.dilation)
        top, left, bottom, right = (int(v) for v in attrs.padding)
        extra_h, extra_w = (int(v) for v in attrs.output_padding)
        padding = (dilation[0] * (kh - 1) - top, dilation[1] * (kw - 1) - left,
                   dilation[0] * (kh - 1) - bottom + extra_h, dilation[1] * (kw - 1) - right + extra_w)
        if min(padding) < 0:
            return call
        spread = self.builder_.emit_te(conv_gemm.spread_input, x, zero_point, strides, primfunc_name_hint="spread_input")
        flipped = np.ascontiguousarray(w.transpose(1, 0, 2, 3)[:, :, ::-1, ::-1])
        _, _, h, width = (int(d) for d in spread.ty.shape)
        oh = h + padding[0] + padding[2] - dilation[0] * (kh - 1)
        ow = width + padding[1] + padding[3] - dilation[1] * (kw - 1)
        return self._dense_conv(spread, zero_point, flipped, (1, 1), padding, dilation, (oh, ow))

    def _dense_conv(self, x: Any, zero_point: int, w: np.ndarray, strides: tuple[int, int],
                    padding: tuple[int, int, int, int], dilation: tuple[int, int], out_hw: tuple[int, int]) -> Any:
        """The int32 sums of one group's conv of the 8-bit ``x`` (zero point ``zero_point``) with the constant
        ``w`` (F, C, KH, KW) as a GEMM: over the input itself, the packed input or gathered columns."""
        bb = self.builder_
        n, _, _, width = (int(d) for d in x.ty.shape)
        f, _, kh, kw = w.shape
        oh, ow = out_hw
        shifted_zero = conv_gemm.shifted_zero_point(x.ty.dtype, zero_point, self.signed)
        weight = relax.const(_packed_weight(w))
        if (kh, kw, *strides, *padding) == (1, 1, 1, 1, 0, 0, 0, 0):
            cols = bb.emit_te(conv_gemm.pointwise_columns, x, zero_point, self.signed,
                              primfunc_name_hint="pointwise_columns")
            acc = self._gemm(conv_gemm.gemm, cols, weight)
            acc = R.reshape(R.strided_slice(acc, axes=[2], begin=[0], end=[oh * ow]), (n, f, oh, ow))
        elif _padded_width(ow) * 7 <= ow * 8:
            out_width = _padded_width(ow)
            packed = bb.emit_te(conv_gemm.pack_input, x, zero_point, padding,
                                _columns_read(out_width, strides[1], dilation[1], kw), strides[1], self.signed,
                                primfunc_name_hint="pack_input")
            acc = self._gemm(conv_gemm.implicit_gemm, packed, weight, (kh, kw), strides, dilation, oh, out_width)
            acc = R.strided_slice(acc, axes=[3], begin=[0], end=[ow])
        else:
            packed = bb.emit_te(conv_gemm.pack_input, x, zero_point, padding, width + padding[1] + padding[3], 1,
                                self.signed, primfunc_name_hint="pack_input")
            cols = bb.emit_te(conv_gemm.columns, packed, (kh, kw), strides, dilation, (oh, ow),
                              primfunc_name_hint="columns", primfunc_attrs={COLUMNS_ATTR: 1, "op_pattern": _OPAQUE})
            acc = self._gemm(conv_gemm.gemm, cols, weight)
            acc = R.reshape(R.strided_slice(acc, axes=[2], begin=[0], end=[oh * ow]), (n, f, oh, ow))
        acc = bb.emit(acc)
        correction = (w.astype(np.int64).sum(axis=(1, 2, 3)) * shifted_zero).astype(np.int32).reshape(1, f, 1, 1)
        return R.subtract(acc, relax.const(correction))

    def _linear(self, call: Any) -> Any:
        """lower_integer's ``matmul(x - z_x, w)`` with a constant int8 weight as linear_gemm's GEMM."""
        centered = _centered_input(self, call.args[0])
        w = _linear_weight(self, call.args[1])
        if centered is None or w is None or str(call.attrs.out_dtype) != "int32":
            return call
        x, zero_point = centered
        if not all(isinstance(d, tirx.IntImm) for d in x.ty.shape):
            return call  # a symbolic number of rows: TVM's own matmul
        shape = [int(d) for d in x.ty.shape]
        channels, depth = w.shape
        if shape[-1] != depth:
            return call
        rows = int(np.prod(shape[:-1], dtype=np.int64))
        packed_weight = _packed_linear_weight(w)
        bb = self.builder_
        packed = bb.emit_te(linear_gemm.pack_rows, x, zero_point, rows, packed_weight.shape[1] * 4, self.signed,
                            primfunc_name_hint="packed_rows")
        attrs = {LINEAR_ATTR: 1, "op_pattern": _OPAQUE, **({PAIRS_ATTR: 1} if self.pairs else {})}
        acc = bb.emit_te(linear_gemm.gemm_channels, packed, relax.const(packed_weight), self.pairs,
                         primfunc_name_hint="int8_linear", primfunc_attrs=attrs)
        if self.pairs:
            acc = _pair_sums_added(acc)
        acc = R.reshape(acc, (rows, packed_weight.shape[0] * intrinsics.LANES))
        acc = bb.emit(R.reshape(R.strided_slice(acc, axes=[1], begin=[0], end=[channels]), (*shape[:-1], channels)))
        shifted_zero = conv_gemm.shifted_zero_point(x.ty.dtype, zero_point, self.signed)
        correction = (w.astype(np.int64).sum(axis=1) * shifted_zero).astype(np.int32)
        return R.subtract(acc, relax.const(correction))


@tvm.transform.module_pass(opt_level=0, name="qnnpy.Int8LayersToGemm")
class Int8LayersToGemm:
    """Rewrite the integer form's int8 conv2d and matmul layers as packed GEMMs (see the module docstring);
    for a ``target`` with AVX2 and no AVX-512 VNNI the conv GEMMs take the pair form
    (intrinsics.pairs_intrinsic); for AArch64 with the dot-product extension the activation bytes are signed
    (intrinsics.signed_activations)."""

    def __init__(self, target: Any = None):
        self.pairs = target is not None and intrinsics.pairs_intrinsic(target) is not None
        self.signed = target is not None and intrinsics.signed_activations(target)

    def transform_module(self, mod: Any, _ctx: Any) -> Any:
        mutator = _Int8LayersToGemm(mod, self.pairs, self.signed)
        for gv, func in mod.functions_items():
            if isinstance(func, relax.Function):
                mutator.builder_.update_func(gv, mutator.visit_expr(func))
        return mutator.builder_.get()

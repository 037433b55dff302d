"""conv2d, conv3d, conv2d_transpose and matmul (linear): integer op with int32 accumulation,
int32 bias, requantization under the profile.

    acc = op(x - zx, w) in int32       (the activation is widened to int16 inside the
                                        graph; the int8 weight is the op's operand)
    int32_bias:  y = clamp(rne(fl(float(acc + bias_q[c]) * m[c])) + zy, lo, hi)
    fbgemm:      y = clamp(rne(fl(fl(float(acc) + fbias[c]) * m[c])) + zy, lo, hi)
    fixed_point: y = clamp(MultiplyByQuantizedMultiplier(acc + bias_q[c], M0[c], shift[c]) + zy, lo, hi)
                 (arith.fixed_point_requantize; (M0, shift) = QuantizeMultiplier(double(s_x) double(s_w[c]) /
                 double(s_y)), from the runtime with hints, else from _core.quantize_multiplier)

lo = zy with a fused relu. With hints, m, fbias, lo and hi are the runtime's
(prepared_layer.cpp). Without, they follow the same formulas from the module's
constants: m = fl(fl(s_w[c] s_x) fl(1/s_y)) for int32_bias (the bias must then be in
scale fl(s_x s_w[c])); fbgemm takes the dequantized int32 bias as its float bias,
fbias = fl(fl(s_b q_b) / a), a = fl(s_x s_w[c]), m = fl(a / s_y).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from tvm.relax import op as R

from qnnpy import _core
from qnnpy.profiles import ONEDNN_PROFILES

from qnnpy.tvm_bridge.lowering.arith import (centered, dtype_range, fixed_point_requantize, onednn_requantize,
                                              per_channel, requantize)
from qnnpy.tvm_bridge.lowering.island import Dequantized, Island, NotLowerable, op_name
from qnnpy.tvm_bridge.lowering.rules.context import Context

WEIGHTED = ("nn.conv2d", "nn.conv3d", "nn.conv2d_transpose", "matmul")


def _peel(island: Island) -> tuple[Any, Any, bool] | None:
    """(weighted op call, bias operand or None, fused relu) when the island is a weighted layer."""
    e = island.call(island.root)
    relu = False
    if op_name(e) == "nn.relu" and op_name(island.call(e.args[0])) in ("add",) + WEIGHTED:
        relu, e = True, island.call(e.args[0])
    bias = None
    if op_name(e) == "add":
        a, b = island.call(e.args[0]), island.call(e.args[1])
        if op_name(a) in WEIGHTED:
            e, bias = a, e.args[1]
        elif op_name(b) in WEIGHTED:
            e, bias = b, e.args[0]
        else:
            return None
    return (e, bias, relu) if op_name(e) in WEIGHTED else None


def anchor_below_epilogue(island: Island) -> str | None:
    peeled = _peel(island)
    return op_name(peeled[0]) if peeled else None


def _bias(island: Island, bias: Any) -> Dequantized | None:
    if bias is None:
        return None
    e = island.call(bias)
    if op_name(e) == "reshape":
        e = e.args[0]
    b = island.bindings.dequantized(e, "bias")
    if str(b.data.ty.dtype) != "int32":
        raise NotLowerable(f"the bias is {b.data.ty.dtype}, not int32")
    if np.any(b.q.zero_point != 0):
        raise NotLowerable("the bias has a nonzero zero point")
    return b


def _weight(island: Island, expr: Any, axis: int) -> Dequantized:
    w = island.bindings.dequantized(expr, "weight")
    if np.any(w.q.zero_point != 0):
        raise NotLowerable("the weight has a nonzero zero point (no widened weight copy is made)")
    if not w.q.per_tensor and w.q.axis != axis:
        raise NotLowerable(f"the weight is quantized along axis {w.q.axis}, not the output-channel axis {axis}")
    return w


def _constants(ctx: Context, island: Island, x: Dequantized, w: Dequantized, bias: Dequantized | None,
               relu: bool, channels: int) -> dict[str, Any]:
    """mult, fbias (or None), whether the int32 bias is added, zp, lo, hi."""
    s_x, z_x = x.q.scalar("the input")
    s_y, z_y = island.out.scalar("the output")
    lo, hi = dtype_range(island.out_dtype)
    if ctx.node(island.name, "conv2d", "linear") is not None:
        rq = ctx.hints.requantization(island.name, ctx.profile)
        profile = rq["profile"]  # an x86 profile's layer resolves to onednn's or fbgemm's arithmetic
        float_bias = profile == "fbgemm" or profile in ONEDNN_PROFILES
        if not float_bias and bias is not None:
            known = island.bindings.constant(bias.data, "bias") if _known(island, bias.data) else None
            if known is not None and not np.array_equal(known.reshape(-1), rq["ibias"]):
                raise NotLowerable("the module's int32 bias differs from the runtime's")
        fbias = rq["fbias"] if float_bias and np.any(rq["fbias"] != 0) else None
        fixed = (rq["fixed_multiplier"], rq["fixed_shift"]) if profile == "fixed_point" else None
        onednn = (np.float32(rq["src_scale"]), rq["w_scale"]) if rq["w_scale"].size else None
        return {"mult": rq["mult"], "fbias": fbias, "int_bias": not float_bias, "fixed": fixed, "onednn": onednn,
                "zp": rq["zp"], "lo": rq["lo"], "hi": rq["hi"]}
    if ctx.profile in ONEDNN_PROFILES:
        raise NotLowerable(f"profile {ctx.profile} needs the module's hints (a module qnnpy converted)")
    s_w = np.broadcast_to(w.q.scale.reshape(-1), (channels,)).astype(np.float32)
    a = (s_w * s_x).astype(np.float32)
    zp, lo = z_y, (z_y if relu else lo)
    if ctx.profile != "fbgemm":
        if bias is not None and not np.array_equal(np.broadcast_to(bias.q.scale.reshape(-1), (channels,)), a):
            raise NotLowerable("the int32 bias is not in scale s_in * s_w")
        mult = (a * (np.float32(1) / s_y)).astype(np.float32)
        fixed = _quantized_multipliers(s_x, s_w, s_y) if ctx.profile == "fixed_point" else None
        return {"mult": mult, "fbias": None, "int_bias": True, "fixed": fixed, "onednn": None, "zp": zp, "lo": lo,
                "hi": hi}
    fbias = None
    if bias is not None:
        q = island.bindings.constant(bias.data, "bias").astype(np.float32).reshape(-1)
        b = (np.broadcast_to(bias.q.scale.reshape(-1), (channels,)).astype(np.float32) * q).astype(np.float32)
        fbias = (b / a).astype(np.float32)
    return {"mult": (a / s_y).astype(np.float32), "fbias": fbias, "int_bias": False, "fixed": None, "onednn": None,
            "zp": zp, "lo": lo, "hi": hi}


def _quantized_multipliers(s_x: np.float32, s_w: np.ndarray, s_y: np.float32) -> tuple[np.ndarray, np.ndarray]:
    """(M0[c], shift[c]) of m[c] = double(s_x) double(s_w[c]) / double(s_y) (TFLite's
    PopulateConvolutionQuantizationParams), by the runtime's QuantizeMultiplier."""
    pairs = []
    for w in s_w:
        try:
            pairs.append(_core.quantize_multiplier(float(s_x) * float(w) / float(s_y)))
        except ValueError as e:
            raise NotLowerable(f"fixed_point multiplier: {e}") from e
    return (np.array([p[0] for p in pairs], np.int32), np.array([p[1] for p in pairs], np.int32))


def _known(island: Island, expr: Any) -> bool:
    try:
        island.bindings.constant(expr, "")
        return True
    except NotLowerable:
        return False


def _finish(ctx: Context, island: Island, acc: Any, x: Dequantized, w: Dequantized, bias: Dequantized | None,
            relu: bool, rank: int, axis: int) -> Any:
    channels = island.out_shape[axis]
    c = _constants(ctx, island, x, w, bias, relu, channels)
    if bias is not None and c["int_bias"]:
        acc = R.add(acc, R.reshape(bias.data, [channels if d == axis else 1 for d in range(rank)]))
    if c["fixed"] is not None:
        multiplier, shift = c["fixed"]
        return fixed_point_requantize(acc, np.asarray(multiplier), np.asarray(shift), rank, axis, int(c["zp"]),
                                      int(c["lo"]), int(c["hi"]), island.out_dtype)
    fbias = None if c["fbias"] is None else per_channel(c["fbias"], rank, axis, "float32")
    if c["onednn"] is not None:
        src_scale, w_scale = c["onednn"]
        return onednn_requantize(acc, src_scale, per_channel(w_scale, rank, axis, "float32"), fbias,
                                 per_channel(c["mult"], rank, axis, "float32"), int(c["zp"]), int(c["lo"]),
                                 int(c["hi"]), island.out_dtype)
    return requantize(acc, per_channel(c["mult"], rank, axis, "float32"), int(c["zp"]), int(c["lo"]), int(c["hi"]),
                      island.out_dtype, fbias)


DATA_LAYOUTS = ("NCHW", "NHWC")
KERNEL_LAYOUTS = ("OIHW", "HWIO", "HWOI", "OHWI")


def lower_conv2d(ctx: Context, island: Island) -> Any:
    conv, bias_expr, relu = _peel(island)
    attrs = conv.attrs
    data_layout, kernel_layout = str(attrs.data_layout), str(attrs.kernel_layout)
    out_layout = str(attrs.out_layout) if attrs.out_layout else data_layout
    if data_layout not in DATA_LAYOUTS or kernel_layout not in KERNEL_LAYOUTS or out_layout != data_layout:
        raise NotLowerable(f"layouts {data_layout}/{kernel_layout}/{out_layout}")
    if ctx.hints is not None and (data_layout, kernel_layout) != ("NCHW", "OIHW"):
        raise NotLowerable("qnnpy's modules are NCHW/OIHW")
    x = island.bindings.dequantized(conv.args[0], "the input")
    w = _weight(island, conv.args[1], kernel_layout.index("O"))
    bias = _bias(island, bias_expr)
    _, z_x = x.q.scalar("the input")
    acc = R.nn.conv2d(centered(x.data, z_x), w.data, strides=attrs.strides, padding=attrs.padding,
                      dilation=attrs.dilation, groups=attrs.groups, data_layout=data_layout,
                      kernel_layout=kernel_layout, out_dtype="int32")
    return _finish(ctx, island, acc, x, w, bias, relu, 4, data_layout.index("C"))


def _layer(island: Island, layouts: tuple[str, str], weight_axis: int) -> tuple[Any, Dequantized, Dequantized,
                                                                                Dequantized | None, bool]:
    """(the conv call, its input, weight and bias, the fused relu) of a conv island in qnnpy's ``layouts``."""
    conv, bias_expr, relu = _peel(island)
    attrs = conv.attrs
    if (str(attrs.data_layout), str(attrs.kernel_layout)) != layouts:
        raise NotLowerable(f"layout {attrs.data_layout}/{attrs.kernel_layout}, expected {'/'.join(layouts)}")
    x = island.bindings.dequantized(conv.args[0], "the input")
    return conv, x, _weight(island, conv.args[1], weight_axis), _bias(island, bias_expr), relu


def lower_conv2d_transpose(ctx: Context, island: Island) -> Any:
    conv, x, w, bias, relu = _layer(island, ("NCHW", "IOHW"), 1)
    if not w.q.per_tensor:
        raise NotLowerable("per-channel transposed-conv weights")
    _, z_x = x.q.scalar("the input")
    attrs = conv.attrs
    acc = R.nn.conv2d_transpose(centered(x.data, z_x), w.data, strides=attrs.strides, padding=attrs.padding,
                                output_padding=attrs.output_padding, dilation=attrs.dilation, groups=attrs.groups,
                                out_dtype="int32")
    return _finish_from_module(ctx, island, acc, x, w, bias, relu, 4, "conv_transpose2d")


def lower_conv3d(ctx: Context, island: Island) -> Any:
    """conv3d (NCDHW / OIDHW, as qnnpy emits it) with int32 accumulation; the runtime computes it as a conv2d with
    the depth taps as channels (src/runtime/conv3d.h), whose sums are the same integers."""
    conv, x, w, bias, relu = _layer(island, ("NCDHW", "OIDHW"), 0)
    _, z_x = x.q.scalar("the input")
    attrs = conv.attrs
    acc = R.nn.conv3d(centered(x.data, z_x), w.data, strides=attrs.strides, padding=attrs.padding,
                      dilation=attrs.dilation, groups=attrs.groups, out_dtype="int32")
    return _finish_from_module(ctx, island, acc, x, w, bias, relu, 5, "conv3d")


def _finish_from_module(ctx: Context, island: Island, acc: Any, x: Dequantized, w: Dequantized,
                        bias: Dequantized | None, relu: bool, rank: int, op: str) -> Any:
    """The requantization of a layer the hints do not describe (conv_transpose2d, conv3d): the runtime's formulas
    from the module's constants, and under fbgemm from the node's float bias."""
    if ctx.profile in ONEDNN_PROFILES:
        raise NotLowerable(f"{op} under profile {ctx.profile} (oneDNN's order) is not lowered")
    if ctx.hints is not None and ctx.profile == "fbgemm":
        return _float_bias_fbgemm(ctx, island, acc, x, w, relu, rank, op)
    hintless = Context(ctx.profile, ctx.params, None)
    return _finish(hintless, island, acc, x, w, bias, relu, rank, 1)


def _float_bias_fbgemm(ctx: Context, island: Island, acc: Any, x: Dequantized, w: Dequantized, relu: bool, rank: int,
                       op: str) -> Any:
    """fbgemm requantization from the node's float bias (prepared_layer.cpp): a = fl(s_x s_w[c]), m = fl(a / s_y),
    fbias = fl(b fl(1 / double(a))) for a per-tensor weight, fl(b / a) for a per-channel one."""
    index = ctx.node(island.name, op)
    s_x, _ = x.q.scalar("the input")
    s_y, z_y = island.out.scalar("the output")
    channels = island.out_shape[1]
    s_w = np.broadcast_to(w.q.scale.reshape(-1).astype(np.float32), (channels,))
    a = (s_w * np.float32(s_x)).astype(np.float32)
    b = np.asarray(_core.lowering_float_node_param(ctx.hints.graph, index, "bias_float"), np.float32)
    fbias = None
    if b.size:
        inverse = (1.0 / a.astype(np.float64)).astype(np.float32)
        fbias = per_channel((b * inverse if w.q.per_tensor else b / a).astype(np.float32), rank, 1, "float32")
    lo, hi = dtype_range(island.out_dtype)
    mult = (a / s_y).astype(np.float32)
    return requantize(acc, per_channel(mult, rank, 1, "float32"), z_y, z_y if relu else lo, hi, island.out_dtype, fbias)


def lower_matmul(ctx: Context, island: Island) -> Any:
    mm, bias_expr, relu = _peel(island)
    x = island.bindings.dequantized(mm.args[0], "the input")
    rhs = island.call(mm.args[1])
    # R.permute_dims without axes reverses them (a float_linear's transposed weight).
    if op_name(rhs) == "permute_dims" and (rhs.attrs.axes is None or [int(a) for a in rhs.attrs.axes] == [1, 0]):
        w = _weight(island, rhs.args[0], 0)
        weight = R.permute_dims(w.data, [1, 0])
    else:
        w = _weight(island, mm.args[1], 1)
        weight = w.data
    bias = _bias(island, bias_expr)
    _, z_x = x.q.scalar("the input")
    acc = R.matmul(centered(x.data, z_x), weight, out_dtype="int32")
    rank = len(island.out_shape)
    return _finish(ctx, island, acc, x, w, bias, relu, rank, rank - 1)

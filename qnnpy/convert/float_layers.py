"""Converters of aten layers computed in float: convolutions and linears with a constant weight (int8 with its
qparams, as a PT2E graph holds a quantized weight, or float32), products, normalizations, pooling, upsampling
and softmax (``src/ops/float_ops.cpp``, ``float_transformer_ops.cpp``, ``norm.cpp``, ``pool.cpp``, ``shape.cpp``)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch
import torch.fx

from qnnpy.convert.context import ConversionContext
from qnnpy.convert.float_args import axis, bind, constant_tensor, operands, rank_of, refuse
from qnnpy.convert.float_composed import conv3d_by_depth_taps
from qnnpy.convert.torch_weight_reader import QuantizedWeight, quantized_weight

Converter = Callable[[ConversionContext, torch.fx.Node], int]
_aten = torch.ops.aten


def _pair(v: Any) -> list[int]:
    """An int or a list of one or two ints as (h, w)."""
    if isinstance(v, (tuple, list)):
        values = [int(x) for x in v]
        return values * 2 if len(values) == 1 else values
    return [int(v), int(v)]


def _layer_weight(ctx: ConversionContext, node: torch.fx.Node, arg: Any) -> QuantizedWeight:
    """The weight of a float conv / linear: int8 with its qparams (a quantized constant: the PT2E weight of a
    layer the quantizer left in float), or float32 (empty qparams)."""
    if isinstance(arg, torch.fx.Node) and arg.op == "get_attr" and ctx.example(arg).is_quantized:
        return quantized_weight(ctx.example(arg), ctx.source(node))
    w = constant_tensor(ctx, node, arg, "weight")
    return QuantizedWeight(w.contiguous().numpy(), np.zeros(0, np.float32), np.zeros(0, np.int64), -1)


def _bias(ctx: ConversionContext, node: torch.fx.Node, arg: Any) -> np.ndarray | None:
    b = constant_tensor(ctx, node, arg, "bias")
    return None if b is None else b.contiguous().numpy()


def _conv2d(ctx: ConversionContext, node: torch.fx.Node, x: int, weight: QuantizedWeight, bias: np.ndarray | None,
            attributes: dict[str, list[int]], shape: list[int], suffix: str = "") -> int:
    where = ctx.source(node)
    return ctx.graph.add_float_layer("float_conv2d", x, where, where + suffix, weight.data, weight.scale,
                                     weight.zero_point, weight.axis, bias, attributes, shape)


def convert_convolution(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """convolution / conv1d / conv2d / conv3d with a constant weight: ``float_conv2d`` (a 1-D conv as PyTorch runs
    it, a height-1 conv2d between reshapes; a 3-D one as a conv2d per depth tap, qnnpy.convert.float_composed).
    Transposed convolutions are refused."""
    args = bind(node)
    x, weight = args["input"], args["weight"]
    if args.get("transposed"):
        raise refuse(ctx, node, "a transposed convolution in float is not supported")
    padding = args["padding"]
    if isinstance(padding, str):
        raise refuse(ctx, node, f"conv padding={padding!r} is not supported (give the numbers)")
    rank = rank_of(ctx, x)
    if rank not in (3, 4, 5):
        raise refuse(ctx, node, f"a convolution of a rank-{rank} input is not supported (give the batch axis)")
    w = _layer_weight(ctx, node, weight)
    if rank == 5:
        return conv3d_by_depth_taps(ctx, node, x, w, _bias(ctx, node, args["bias"]), args)
    attributes = {"stride": _pair(args["stride"]), "padding": _pair(padding), "dilation": _pair(args["dilation"]),
                  "groups": [int(args["groups"])]}
    x_id = ctx.value(x, node)
    out_shape = list(ctx.example(node).shape)
    if rank == 4:
        return _conv2d(ctx, node, x_id, w, _bias(ctx, node, args["bias"]), attributes, out_shape)
    n, c, length = ctx.example(x).shape
    for key in ("stride", "padding", "dilation"):
        attributes[key] = [1 if key != "padding" else 0, attributes[key][0]]
    x4 = ctx.add_plain(node, "float_reshape", [x_id], ints={"shape": [n, c, 1, length]}, suffix="_nchw",
                       shape=[n, c, 1, length])
    w.data = w.data[:, :, None, :]
    y = _conv2d(ctx, node, x4, w, _bias(ctx, node, args["bias"]), attributes, [n, out_shape[1], 1, out_shape[2]],
                "_conv2d")
    return ctx.add_plain(node, "float_reshape", [y], ints={"shape": out_shape})


def convert_linear(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """linear(x, weight, bias): ``float_linear`` with a constant weight; a computed weight is a matmul with its
    transpose (then the bias added)."""
    x, weight = node.args[:2]
    bias = node.args[2] if len(node.args) > 2 else node.kwargs.get("bias")
    if isinstance(weight, torch.fx.Node) and weight.op == "get_attr":
        w = _layer_weight(ctx, node, weight)
        where = ctx.source(node)
        return ctx.graph.add_float_layer("float_linear", ctx.value(x, node), where, where, w.data, w.scale,
                                         w.zero_point, w.axis, _bias(ctx, node, bias), {}, list(ctx.example(node).shape))
    w_shape = list(ctx.example(weight).shape)
    w_t = ctx.add_plain(node, "float_permute", [ctx.value(weight, node)], ints={"perm": [1, 0]}, suffix="_weight_t",
                        shape=w_shape[::-1])
    y = ctx.add_plain(node, "float_matmul", [ctx.value(x, node), w_t], suffix="_mm" if bias is not None else "")
    return y if bias is None else ctx.add_plain(node, "float_add", [y, ctx.value(bias, node)])


def convert_matmul(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """mm / bmm / matmul of float tensors (batch axes broadcast): ``float_matmul``; a vector operand is a matrix
    of one row (first) or one column (second) for the product, as torch.matmul defines it, and the output
    drops that axis."""
    a, b = node.args[:2]
    ids = operands(ctx, node, [a, b], "float32")
    shapes = [list(ctx.example(t).shape) for t in (a, b)]
    if shapes[0] == [] or shapes[1] == []:
        raise refuse(ctx, node, "matmul of a scalar is not supported")
    matrices = [[1, *shapes[0]] if len(shapes[0]) == 1 else shapes[0], [*shapes[1], 1] if len(shapes[1]) == 1 else shapes[1]]
    for i in (0, 1):
        if matrices[i] != shapes[i]:
            ids[i] = ctx.add_plain(node, "float_reshape", [ids[i]], ints={"shape": matrices[i]}, suffix=f"_matrix{i}",
                                   shape=matrices[i])
    if matrices == shapes:
        return ctx.add_plain(node, "float_matmul", ids)
    batch = list(torch.broadcast_shapes(tuple(matrices[0][:-2]), tuple(matrices[1][:-2])))
    product = ctx.add_plain(node, "float_matmul", ids, suffix="_matrix", shape=[*batch, matrices[0][-2], matrices[1][-1]])
    return ctx.add_plain(node, "float_reshape", [product], ints={"shape": list(ctx.example(node).shape)})


def convert_addmm(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """addmm(input, mat1, mat2, beta, alpha) = beta * input + alpha * (mat1 @ mat2)."""
    args = bind(node)
    y = ctx.add_plain(node, "float_matmul", operands(ctx, node, [args["mat1"], args["mat2"]], "float32"), suffix="_mm")
    if args["alpha"] != 1:
        y = ctx.add_plain(node, "float_mul", [y, ctx.scalar(args["alpha"], "float32", node)], suffix="_alpha")
    bias = operands(ctx, node, [args["self"]], "float32")[0]
    if args["beta"] != 1:
        bias = ctx.add_plain(node, "float_mul", [bias, ctx.scalar(args["beta"], "float32", node)], suffix="_beta",
                             shape=list(ctx.example(args["self"]).shape))
    return ctx.add_plain(node, "float_add", [y, bias])


def _norm_part(ctx: ConversionContext, node: torch.fx.Node, arg: Any, shape: list[int], fill: float, what: str) -> np.ndarray:
    t = constant_tensor(ctx, node, arg, what)
    return np.full(shape, fill, np.float32) if t is None else t.reshape(shape).contiguous().numpy()


def _layer_norm(ctx: ConversionContext, node: torch.fx.Node, args: dict[str, Any]) -> int:
    shape = [int(d) for d in args["normalized_shape"]]
    where = ctx.source(node)
    return ctx.graph.add_normalization(
        "float_layer_norm", ctx.value(args["input"], node), where, where,
        _norm_part(ctx, node, args["weight"], shape, 1.0, "weight"), _norm_part(ctx, node, args["bias"], shape, 0.0, "bias"),
        {"normalized_rank": [len(shape)]}, float(args["eps"]), "float32", expected_shape=list(ctx.example(node).shape))


def convert_layer_norm(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """layer_norm(x, normalized_shape, weight, bias, eps): ``float_layer_norm`` over the last axes."""
    return _layer_norm(ctx, node, bind(node))


def native_layer_norm(ctx: ConversionContext, parent: torch.fx.Node, index: int, node: torch.fx.Node) -> int:
    """Output 0 of native_layer_norm(x, normalized_shape, weight, bias, eps): ``float_layer_norm``."""
    if index != 0:
        raise refuse(ctx, node, "the mean / rstd outputs of layer_norm (training only) are not supported")
    return _layer_norm(ctx, node, bind(parent))


def _batch_norm(ctx: ConversionContext, node: torch.fx.Node, args: dict[str, Any]) -> int:
    x = args["input"]
    if args.get("training"):
        # Statistics of the input itself: over one sample (instance_norm's decomposition reshapes the batch into
        # the channels) each channel is normalized over its own values, a group norm with a group per channel.
        shape = ctx.example(x).shape
        if shape[0] != 1:
            raise refuse(ctx, node, f"batch_norm with the statistics of a batch of {shape[0]} samples (training=True) "
                                    "is not supported: its output depends on the other samples of the batch")
        return _group_norm(ctx, node, x, shape[1], args["weight"], args["bias"], args["eps"])
    channels = [ctx.example(x).shape[1]]
    params = {"bn_weight": _norm_part(ctx, node, args["weight"], channels, 1.0, "weight"),
              "bn_bias": _norm_part(ctx, node, args["bias"], channels, 0.0, "bias"),
              "bn_running_mean": _norm_part(ctx, node, args["running_mean"], channels, 0.0, "running mean"),
              "bn_running_var": _norm_part(ctx, node, args["running_var"], channels, 1.0, "running variance")}
    return ctx.add_plain(node, "float_batch_norm", [ctx.value(x, node)], floats={"eps": float(args["eps"])},
                         params=params, shape=list(ctx.example(x).shape), dtype="float32")


def convert_batch_norm(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """batch_norm in eval mode (running statistics): ``float_batch_norm``."""
    return _batch_norm(ctx, node, bind(node))


def batch_norm_output(ctx: ConversionContext, parent: torch.fx.Node, index: int, node: torch.fx.Node) -> int:
    """Output 0 of _native_batch_norm_legit (with or without running statistics), its no_training form and
    native_batch_norm: ``float_batch_norm``, or with training=True (the input's own statistics) over one sample
    ``float_group_norm`` (_batch_norm)."""
    if index != 0:
        raise refuse(ctx, node, "the saved mean / invstd outputs of batch_norm (training only) are not supported")
    return _batch_norm(ctx, node, bind(parent))


def _group_norm(ctx: ConversionContext, node: torch.fx.Node, x: Any, groups: int, weight: Any, bias: Any,
                eps: float) -> int:
    channels = [ctx.example(x).shape[1]]
    where = ctx.source(node)
    return ctx.graph.add_normalization(
        "float_group_norm", ctx.value(x, node), where, where, _norm_part(ctx, node, weight, channels, 1.0, "weight"),
        _norm_part(ctx, node, bias, channels, 0.0, "bias"), {"num_groups": [int(groups)]}, float(eps), "float32",
        expected_shape=list(ctx.example(x).shape))


def convert_group_norm(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """group_norm(x, num_groups, weight, bias, eps): ``float_group_norm``."""
    args = bind(node)
    return _group_norm(ctx, node, args["input"], args["num_groups"], args["weight"], args["bias"], args["eps"])


def convert_instance_norm(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """instance_norm(x, weight, bias, running_mean, running_var, use_input_stats, momentum, eps): with the input's
    statistics (nn.InstanceNorm's default, in eval mode too) each sample's channels are normalized over their
    own values, ``float_group_norm`` with one group per channel; with running statistics ``float_batch_norm``."""
    args = bind(node)
    x = args["input"]
    if args["use_input_stats"]:
        return _group_norm(ctx, node, x, ctx.example(x).shape[1], args["weight"], args["bias"], args["eps"])
    return _batch_norm(ctx, node, {**args, "training": False})


def native_group_norm(ctx: ConversionContext, parent: torch.fx.Node, index: int, node: torch.fx.Node) -> int:
    """Output 0 of native_group_norm(x, weight, bias, N, C, HxW, group, eps): ``float_group_norm``."""
    if index != 0:
        raise refuse(ctx, node, "the mean / rstd outputs of group_norm (training only) are not supported")
    args = bind(parent)
    return _group_norm(ctx, node, args["input"], args["group"], args["weight"], args["bias"], args["eps"])


def _max_pool2d(ctx: ConversionContext, node: torch.fx.Node, args: dict[str, Any]) -> int:
    x = args["self"]
    if rank_of(ctx, x) != 4:
        raise refuse(ctx, node, "max pooling of a rank-3 input is not supported (give the batch axis)")
    kernel = _pair(args["kernel_size"])
    stride = _pair(args["stride"]) if args["stride"] else kernel
    return ctx.add_plain(node, "float_max_pool2d", operands(ctx, node, [x], "float32"),
                         ints={"kernel": kernel, "stride": stride, "padding": _pair(args["padding"]),
                               "dilation": _pair(args["dilation"]), "ceil_mode": [int(bool(args["ceil_mode"]))]})


def convert_max_pool2d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """max_pool2d of a float tensor: ``float_max_pool2d``."""
    return _max_pool2d(ctx, node, bind(node))


def max_pool2d_with_indices(ctx: ConversionContext, parent: torch.fx.Node, index: int, node: torch.fx.Node) -> int:
    """Output 0 of max_pool2d_with_indices: ``float_max_pool2d``; the indices are refused."""
    if index != 0:
        raise refuse(ctx, node, "the indices output of max pooling is not supported")
    return _max_pool2d(ctx, node, bind(parent))


def convert_avg_pool2d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """avg_pool2d of a float tensor: ``float_avg_pool2d``."""
    args = bind(node)
    x = args["self"]
    if rank_of(ctx, x) != 4:
        raise refuse(ctx, node, "average pooling of a rank-3 input is not supported (give the batch axis)")
    kernel = _pair(args["kernel_size"])
    stride = _pair(args["stride"]) if args["stride"] else kernel
    return ctx.add_plain(node, "float_avg_pool2d", operands(ctx, node, [x], "float32"),
                         ints={"kernel": kernel, "stride": stride, "padding": _pair(args["padding"]),
                               "ceil_mode": [int(bool(args["ceil_mode"]))],
                               "count_include_pad": [int(bool(args["count_include_pad"]))],
                               "divisor_override": [int(args["divisor_override"] or 0)]})


def _as_height_one(ctx: ConversionContext, node: torch.fx.Node, x: Any, op: str, ints: dict[str, list[int]]) -> int:
    """A 1-D pool of an (N, C, L) tensor as PyTorch computes it: the 2-D pool of (N, C, 1, L), reshaped back."""
    if rank_of(ctx, x) != 3:
        raise refuse(ctx, node, "1-D pooling of an input without its batch axis is not supported")
    n, c, length = ctx.example(x).shape
    out = list(ctx.example(node).shape)
    x4 = ctx.add_plain(node, "float_reshape", operands(ctx, node, [x], "float32"), ints={"shape": [n, c, 1, length]},
                       suffix="_nchw", shape=[n, c, 1, length])
    pooled = ctx.add_plain(node, op, [x4], ints=ints, suffix="_pool2d", shape=[n, c, 1, out[2]])
    return ctx.add_plain(node, "float_reshape", [pooled], ints={"shape": out})


def convert_avg_pool1d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """avg_pool1d(x, kernel_size, stride, padding, ceil_mode, count_include_pad): ``float_avg_pool2d`` of height 1."""
    args = bind(node)
    kernel = [1, int(args["kernel_size"][0])]
    stride = [1, int(args["stride"][0])] if args["stride"] else kernel
    return _as_height_one(ctx, node, args["self"], "float_avg_pool2d",
                          {"kernel": kernel, "stride": stride, "padding": [0, int(args["padding"][0])],
                           "ceil_mode": [int(bool(args["ceil_mode"]))],
                           "count_include_pad": [int(bool(args["count_include_pad"]))], "divisor_override": [0]})


def convert_adaptive_avg_pool1d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """adaptive_avg_pool1d(x, output_size): ``float_adaptive_avg_pool2d`` of height 1."""
    return _as_height_one(ctx, node, node.args[0], "float_adaptive_avg_pool2d",
                          {"output_size": [1, int(ctx.example(node).shape[2])]})


def convert_adaptive_avg_pool2d(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """adaptive_avg_pool2d of a float tensor; the output size is read from the example output."""
    if rank_of(ctx, node.args[0]) != 4:
        raise refuse(ctx, node, "adaptive average pooling of a rank-3 input is not supported (give the batch axis)")
    return ctx.add_plain(node, "float_adaptive_avg_pool2d", operands(ctx, node, [node.args[0]], "float32"),
                         ints={"output_size": list(ctx.example(node).shape)[2:]})


def _upsample(ir_op: str) -> Converter:
    def convert(ctx: ConversionContext, node: torch.fx.Node) -> int:
        args = bind(node)
        x = args.get("input", args.get("self"))
        scales = args.get("scale_factors") or [args.get("scales_h"), args.get("scales_w")]
        ints = {"output_size": list(ctx.example(node).shape)[2:]}
        if "align_corners" in args:
            ints["align_corners"] = [int(bool(args["align_corners"]))]
        floats = {"scale_h": float(scales[0] or 0.0), "scale_w": float(scales[-1] or 0.0)}
        return ctx.add_plain(node, ir_op, operands(ctx, node, [x], "float32"), ints=ints, floats=floats)
    convert.__doc__ = f"``{ir_op}`` to the example output's size, with PyTorch's scale factors where given."
    return convert


def convert_grid_sample(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """grid_sampler_2d(x, grid, interpolation_mode, padding_mode, align_corners) of an NCHW float tensor:
    ``float_grid_sample`` (bilinear or nearest; zeros, border or reflection padding)."""
    args = bind(node)
    if int(args["interpolation_mode"]) not in (0, 1):
        raise refuse(ctx, node, "bicubic grid sampling is not supported (bilinear and nearest are)")
    if rank_of(ctx, args["input"]) != 4:
        raise refuse(ctx, node, "grid sampling of a rank-5 (volumetric) input is not supported")
    return ctx.add_plain(node, "float_grid_sample", operands(ctx, node, [args["input"], args["grid"]], "float32"),
                         ints={"mode": [int(args["interpolation_mode"])], "padding_mode": [int(args["padding_mode"])],
                               "align_corners": [int(bool(args["align_corners"]))]})


def convert_softmax(ctx: ConversionContext, node: torch.fx.Node) -> int:
    """softmax / _softmax of a float tensor along dim (half_to_float False, dtype None or float32)."""
    args = bind(node)
    if args.get("half_to_float") or args.get("dtype") not in (None, torch.float32):
        raise refuse(ctx, node, "softmax to another dtype is not supported (float32 only)")
    x = args["self"]
    return ctx.add_plain(node, "float_softmax", operands(ctx, node, [x], "float32"),
                         ints={"axis": [axis(args["dim"], rank_of(ctx, x))]})


def layer_converters() -> dict[Any, Converter]:
    """The converters of float layers, by aten op overload."""
    return {
        _aten.convolution.default: convert_convolution,
        _aten.conv2d.default: convert_convolution,
        _aten.conv1d.default: convert_convolution,
        _aten.conv3d.default: convert_convolution,
        _aten._convolution.default: convert_convolution,
        _aten.linear.default: convert_linear,
        _aten.mm.default: convert_matmul,
        _aten.bmm.default: convert_matmul,
        _aten.matmul.default: convert_matmul,
        _aten.addmm.default: convert_addmm,
        _aten.layer_norm.default: convert_layer_norm,
        _aten.batch_norm.default: convert_batch_norm,
        _aten.group_norm.default: convert_group_norm,
        _aten.instance_norm.default: convert_instance_norm,
        _aten.max_pool2d.default: convert_max_pool2d,
        _aten.avg_pool2d.default: convert_avg_pool2d,
        _aten.adaptive_avg_pool2d.default: convert_adaptive_avg_pool2d,
        _aten._adaptive_avg_pool2d.default: convert_adaptive_avg_pool2d,
        _aten.avg_pool1d.default: convert_avg_pool1d,
        _aten.adaptive_avg_pool1d.default: convert_adaptive_avg_pool1d,
        _aten.upsample_nearest2d.vec: _upsample("float_upsample_nearest2d"),
        _aten.upsample_nearest2d.default: _upsample("float_upsample_nearest2d"),
        _aten.upsample_bilinear2d.vec: _upsample("float_upsample_bilinear2d"),
        _aten.upsample_bilinear2d.default: _upsample("float_upsample_bilinear2d"),
        _aten.grid_sampler_2d.default: convert_grid_sample,
        _aten.grid_sampler.default: convert_grid_sample,
        _aten._softmax.default: convert_softmax,
        _aten.softmax.int: convert_softmax,
    }


# Ops with several outputs whose parts operator.getitem takes: converter of (parent, index, getitem node).
LAYER_TUPLE_OUTPUTS = {
    _aten.native_layer_norm.default: native_layer_norm,
    _aten._native_batch_norm_legit_no_training.default: batch_norm_output,
    _aten._native_batch_norm_legit.default: batch_norm_output,
    _aten._native_batch_norm_legit.no_stats: batch_norm_output,
    _aten.native_batch_norm.default: batch_norm_output,
    _aten.native_group_norm.default: native_group_norm,
    _aten.max_pool2d_with_indices.default: max_pool2d_with_indices,
}

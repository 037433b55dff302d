"""The lowering rules, one file per op family, found through one table keyed by the
Relax op name of the island's anchor (the op left after peeling the epilogue: a
fused relu and the bias add of conv2d / conv2d_transpose / matmul)."""
from __future__ import annotations

from typing import Any, Callable

from qnnpy.tvm_bridge.lowering.island import Island, NotLowerable, op_name
from qnnpy.tvm_bridge.lowering.rules.context import Context
from qnnpy.tvm_bridge.lowering.rules import concat, conv, elementwise, norm, pool, pool3d, quantize, shape, unary

Rule = Callable[[Context, Island], Any]

RULES: dict[str, Rule] = {
    "nn.conv2d": conv.lower_conv2d,
    "nn.conv2d_transpose": conv.lower_conv2d_transpose,
    "nn.conv3d": conv.lower_conv3d,
    "matmul": conv.lower_matmul,
    "add": elementwise.lower_add,
    "multiply": elementwise.lower_multiply,
    "nn.relu": unary.lower_unary,
    "clip": unary.lower_unary,
    "sigmoid": unary.lower_unary,
    "nn.leakyrelu": unary.lower_unary,
    "divide": unary.lower_unary,
    "where": unary.lower_unary,  # elu: where(x > 0, x, alpha * (exp(x) - 1))
    "tanh": unary.lower_unary,  # quantized_tanh
    "nn.max_pool2d": pool.lower_max_pool2d,
    "nn.adaptive_avg_pool2d": pool.lower_adaptive_avg_pool2d,
    "nn.avg_pool2d": pool.lower_avg_pool2d,
    "nn.avg_pool3d": pool3d.lower_avg_pool3d,
    "nn.adaptive_avg_pool3d": pool3d.lower_adaptive_avg_pool3d,
    "mean": pool.lower_mean,
    "concat": concat.lower_concat,
    "TupleGetItem": norm.lower_batch_norm,  # batch_norm(...)[0]
    "nn.layer_norm": norm.keep_normalization_float,  # quantized_layer_norm
    "nn.group_norm": norm.keep_normalization_float,  # quantized_group_norm (and instance norm)
    "nn.softmax": norm.keep_normalization_float,  # quantized_softmax
    "reshape": shape.lower_data_movement,
    "permute_dims": shape.lower_data_movement,
    "strided_slice": shape.lower_data_movement,
    "take": shape.lower_data_movement,
    "image.resize2d": shape.lower_data_movement,
    "Var": quantize.lower_quantize,  # quantize of a function input
}


def anchor_name(island: Island) -> str:
    """The op name that selects the rule: the island's root, or the op under its epilogue."""
    root = island.call(island.root)
    name = op_name(root)
    if name is None:
        return type(root).__name__
    weighted = conv.anchor_below_epilogue(island)
    if weighted:
        return weighted
    if name == "nn.relu" and op_name(island.call(root.args[0])) == "add":
        return "add"  # add_relu
    if name == "multiply" and op_name(island.call(root.args[0])) in ("nn.avg_pool2d", "nn.avg_pool3d"):
        return op_name(island.call(root.args[0]))  # with divisor_override: pool * (kernel volume / divisor)
    return name


def lower_island(ctx: Context, island: Island) -> tuple[Any, str]:
    """(integer expression or None to keep the binding, rule name)."""
    name = anchor_name(island)
    rule = RULES.get(name)
    if rule is None:
        raise NotLowerable(f"no integer rule for {name}")
    return rule(ctx, island), name

"""The float form of every aten op qnnpy converts when it computes in float (its inputs and output are not
quantized): one converter per op overload, from the element-wise, movement, reduction, layer, scatter and
composed families. PT2E's
float parts, TorchScript's float ops and every float op of an eager / FX graph (decomposed into aten ops first:
qnnpy.capture.float_decomposition) reach them."""
from __future__ import annotations

from typing import Any, Callable

import torch
import torch.fx

from qnnpy.convert.attention import ATTENTION, convert_attention
from qnnpy.convert.context import ConversionContext
from qnnpy.convert.embedding_ops import convert_float_embedding
from qnnpy.convert.float_composed import COMPOSED_TUPLE_OUTPUTS, composed_converters
from qnnpy.convert.float_elementwise import elementwise_converters
from qnnpy.convert.float_layers import LAYER_TUPLE_OUTPUTS, layer_converters
from qnnpy.convert.float_movement import movement_converters
from qnnpy.convert.float_reduce import REDUCE_TUPLE_OUTPUTS, reduce_converters
from qnnpy.convert.float_scatter import SCATTER_TUPLE_OUTPUTS, scatter_converters

Converter = Callable[[ConversionContext, torch.fx.Node], int]
# The part ``index`` of an op with several outputs, taken by ``operator.getitem``: (ctx, op node, index, getitem node).
PartConverter = Callable[[ConversionContext, torch.fx.Node, int, torch.fx.Node], int]

FLOAT_ATEN: dict[Any, Converter] = {
    **elementwise_converters(),
    **movement_converters(),
    **reduce_converters(),
    **layer_converters(),
    **scatter_converters(),
    **composed_converters(),
    torch.ops.aten.embedding.default: convert_float_embedding,
    ATTENTION: convert_attention,
}

FLOAT_TUPLE_OUTPUTS: dict[Any, PartConverter] = {**REDUCE_TUPLE_OUTPUTS, **LAYER_TUPLE_OUTPUTS, **SCATTER_TUPLE_OUTPUTS,
                                                 **COMPOSED_TUPLE_OUTPUTS}

"""One-op int8 .tflite models written with the flatbuffer schema LiteRT ships (ai_edge_litert).

Each model has one quantized input (int8), constant int8 weights and int32 bias, one CONV_2D,
DEPTHWISE_CONV_2D or FULLY_CONNECTED op and an int8 output, as TFLite's int8 quantization spec
lays them out: NHWC activations, conv weights OHWI (depthwise 1HWC), per-channel weight scales
with zero points 0, bias scale s_x * s_w[c].
"""
from __future__ import annotations

from dataclasses import dataclass

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema


@dataclass
class QTensor:
    """A tensor of the model: values for constants (None for activations) and its qparams."""

    shape: tuple[int, ...]
    dtype: str                      # "int8" or "int32"
    scale: np.ndarray               # one per tensor or per channel
    zero_point: np.ndarray
    quantized_dimension: int = 0
    data: np.ndarray | None = None


_TYPES = {"int8": schema.TensorType.INT8, "int32": schema.TensorType.INT32}


def _tensor(t: QTensor, name: str, buffer: int) -> schema.TensorT:
    out = schema.TensorT()
    out.shape = list(t.shape)
    out.type = _TYPES[t.dtype]
    out.buffer = buffer
    out.name = name
    q = schema.QuantizationParametersT()
    q.scale = [float(s) for s in np.ravel(t.scale)]
    q.zeroPoint = [int(z) for z in np.ravel(t.zero_point)]
    q.quantizedDimension = t.quantized_dimension
    out.quantization = q
    return out


def _options(op: str, stride: tuple[int, int], same_padding: bool, relu: bool, depth_multiplier: int):
    act = schema.ActivationFunctionType.RELU if relu else schema.ActivationFunctionType.NONE
    if op == "FULLY_CONNECTED":
        o = schema.FullyConnectedOptionsT()
        o.fusedActivationFunction = act
        return schema.BuiltinOptions.FullyConnectedOptions, o
    o = schema.Conv2DOptionsT() if op == "CONV_2D" else schema.DepthwiseConv2DOptionsT()
    o.padding = schema.Padding.SAME if same_padding else schema.Padding.VALID
    o.strideH, o.strideW = stride
    o.fusedActivationFunction = act
    if op == "CONV_2D":
        return schema.BuiltinOptions.Conv2DOptions, o
    o.depthMultiplier = depth_multiplier
    return schema.BuiltinOptions.DepthwiseConv2DOptions, o


def one_op_model(op: str, x: QTensor, weight: QTensor, bias: QTensor, y: QTensor, stride: tuple[int, int] = (1, 1),
                 same_padding: bool = False, relu: bool = False, depth_multiplier: int = 1) -> bytes:
    """The .tflite bytes of y = op(x, weight, bias); op is CONV_2D, DEPTHWISE_CONV_2D or FULLY_CONNECTED."""
    buffers = [schema.BufferT()]  # buffer 0: empty, for activations
    tensors = []
    for i, (t, name) in enumerate(((x, "x"), (weight, "weight"), (bias, "bias"), (y, "y"))):
        index = 0
        if t.data is not None:
            b = schema.BufferT()
            b.data = np.ascontiguousarray(t.data, dtype=t.dtype).tobytes()
            buffers.append(b)
            index = len(buffers) - 1
        tensors.append(_tensor(t, name, index))
    code = schema.OperatorCodeT()
    code.builtinCode = getattr(schema.BuiltinOperator, op)
    code.deprecatedBuiltinCode = min(code.builtinCode, 127)
    code.version = 3 if op != "FULLY_CONNECTED" else 5
    operator = schema.OperatorT()
    operator.opcodeIndex = 0
    operator.inputs, operator.outputs = [0, 1, 2], [3]
    operator.builtinOptionsType, operator.builtinOptions = _options(op, stride, same_padding, relu, depth_multiplier)
    graph = schema.SubGraphT()
    graph.tensors, graph.inputs, graph.outputs, graph.operators = tensors, [0], [3], [operator]
    graph.name = "main"
    model = schema.ModelT()
    model.version = 3
    model.operatorCodes, model.subgraphs, model.buffers = [code], [graph], buffers
    model.description = "qnnpy fixed_point test"
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())

"""Writes graph.qnnpy files byte by byte, so tests can hand qnnpy any content a file may hold.

The layout is the one src/ir/serialize.cpp reads (format version 1), written here
independently of the C++ writer: every count is a little-endian uint64, every
string and vector a count followed by its bytes.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

DTYPES = {"float32": 0, "uint8": 1, "int8": 2, "int32": 3}


@dataclass
class FileParam:
    name: str
    dtype: str
    shape: list[int]
    data: bytes
    scale: list[float] = field(default_factory=list)
    zero_point: list[int] = field(default_factory=list)
    axis: int = -1


@dataclass
class FileValue:
    """A graph input (op is None) or the output of a node."""

    name: str
    dtype: str
    shape: list[int]
    scale: list[float] = field(default_factory=list)
    zero_point: list[int] = field(default_factory=list)
    op: str | None = None
    inputs: list[int] = field(default_factory=list)
    params: dict[str, int] = field(default_factory=dict)
    ints: dict[str, list[int]] = field(default_factory=dict)
    floats: dict[str, float] = field(default_factory=dict)
    source: str = ""


def _count(n: int) -> bytes:
    return struct.pack("<Q", n)


def _str(s: str) -> bytes:
    b = s.encode()
    return _count(len(b)) + b


def _vec(fmt: str, items: list) -> bytes:
    return _count(len(items)) + struct.pack(f"<{len(items)}{fmt}", *items)


def _qparams(scale: list[float], zero_point: list[int], axis: int) -> bytes:
    return _vec("f", scale) + _vec("i", zero_point) + struct.pack("<i", axis)


def graph_file(params: list[FileParam], values: list[FileValue], outputs: list[int], version: bytes = b"01") -> bytes:
    """The bytes of a graph file; values are listed in id order, inputs first or interleaved."""
    out = b"QNNPYG" + version + _count(len(params))
    for p in params:
        out += _str(p.name) + bytes([DTYPES[p.dtype]]) + _vec("q", p.shape) + _count(len(p.data)) + p.data
        out += _qparams(p.scale, p.zero_point, p.axis) + b"\x01"
    producer = 0
    out += _count(len(values))
    for v in values:
        out += struct.pack("<i", -1 if v.op is None else producer)
        producer += v.op is not None
        out += _str(v.name) + bytes([DTYPES[v.dtype]]) + _vec("q", v.shape) + _qparams(v.scale, v.zero_point, -1)
        if v.op is None:
            continue
        out += _str(v.op) + _str(v.source or f"layer_{v.name}") + _vec("i", v.inputs)
        out += _count(len(v.params)) + b"".join(_str(k) + struct.pack("<i", i) for k, i in sorted(v.params.items()))
        out += _count(len(v.ints)) + b"".join(_str(k) + _vec("q", x) for k, x in sorted(v.ints.items()))
        out += _count(len(v.floats)) + b"".join(_str(k) + struct.pack("<d", x) for k, x in sorted(v.floats.items()))
    inputs = [i for i, v in enumerate(values) if v.op is None]
    return out + _vec("i", inputs) + _vec("i", outputs)


def quantize_value(shape: list[int], dtype: str = "uint8", scale: float = 0.1, zero_point: int = 128) -> list[FileValue]:
    """A float input of ``shape`` and its quantize node: values 0 and 1."""
    return [FileValue("x", "float32", shape),
            FileValue("xq", dtype, shape, [scale], [zero_point], op="quantize", inputs=[0], source="quant")]


def int8_weight(shape: list[int], scale: list[float] | None = None, zero_point: list[int] | None = None,
                axis: int = -1) -> FileParam:
    """An int8 weight of ones with the given quantization (per tensor 0.05 / 0 by default)."""
    data = np.ones(shape, np.int8).tobytes()
    return FileParam("w", "int8", shape, data, scale or [0.05], zero_point or [0], axis)


def conv_value(inputs: list[int], out_shape: list[int], **ints: list[int]) -> FileValue:
    """A conv2d node on value ``inputs[0]`` with weight param 0 and the attributes given (defaults: 1x1 conv)."""
    attrs = {"stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "groups": [1], "relu": [0]}
    attrs.update(ints)
    return FileValue("y", "uint8", out_shape, [0.2], [0], op="conv2d", inputs=inputs, params={"weight": 0},
                     ints=attrs, source="body.conv")

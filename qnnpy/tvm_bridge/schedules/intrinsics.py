"""The dot-product instruction the int8 GEMM schedule tensorizes with, as a TVM tensor intrinsic.

``vpdpbusd`` (AVX-512 VNNI) adds to each of 16 int32 lanes the sum of four products of an
unsigned byte of its first operand and a signed byte of its second. One intrinsic here
vectorizes over 16 output *pixels* (the convs): lane i accumulates ``sum_j A[i, j] * B[j]`` with A
the u8 activations of 16 pixels x 4 reduction steps (64 contiguous bytes) and B four int8 weights
broadcast to every lane; the other over 16 output *channels* (the linear layers, whose rows may
be one token): ``sum_j A[j] * B[i, j]``, four activation bytes broadcast, B 16 channels x 4 weights. (TVM's own ``dot_16x4_vnni`` vectorizes over output channels and
passes the bytes as ``int32x16``, which the LLVM 22 in apache-tvm 0.27 rejects: that intrinsic
now takes ``<64 x i8>`` operands.)
"""
from __future__ import annotations

import functools
from typing import Any

from tvm.s_tir import TensorIntrin
from tvm.script import tirx as T
from tvm.target import codegen

VNNI_PIXELS = "qnnpy_vnni_u8s8_16x4_pixels"
VNNI_CHANNELS = "qnnpy_vnni_u8s8_16x4_channels"
LANES = 16


@T.prim_func(s_tir=True)
def _pixels_desc(A: T.Buffer((16, 4), "uint8", offset_factor=1), B: T.Buffer((4,), "int8", offset_factor=1),
                 C: T.Buffer((16,), "int32", offset_factor=1)) -> None:
    with T.sblock("root"):
        T.reads(C[0:16], A[0:16, 0:4], B[0:4])
        T.writes(C[0:16])
        for i in T.serial(0, 16):
            for k in T.serial(0, 4):
                with T.sblock("update"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    C[vi] = C[vi] + T.cast(A[vi, vk], "int32") * T.cast(B[vk], "int32")


@T.prim_func(s_tir=True)
def _pixels_vnni(A: T.Buffer((16, 4), "uint8", offset_factor=1), B: T.Buffer((4,), "int8", offset_factor=1),
                 C: T.Buffer((16,), "int32", offset_factor=1)) -> None:
    with T.sblock("root"):
        T.reads(C[0:16], A[0:16, 0:4], B[0:4])
        T.writes(C[0:16])
        weights = T.reinterpret(T.broadcast(T.reinterpret(B.vload([0], "int8x4"), dtype="int32"), 16), dtype="int8x64")
        C[T.ramp(T.int32(0), 1, 16)] = T.call_llvm_pure_intrin(
            T.llvm_lookup_intrinsic_id("llvm.x86.avx512.vpdpbusd.512"), C.vload([0], "int32x16"),
            A.vload([0, 0], "uint8x64"), weights, dtype="int32x16")


@T.prim_func(s_tir=True)
def _channels_desc(A: T.Buffer((4,), "uint8", offset_factor=1), B: T.Buffer((16, 4), "int8", offset_factor=1),
                   C: T.Buffer((16,), "int32", offset_factor=1)) -> None:
    with T.sblock("root"):
        T.reads(C[0:16], A[0:4], B[0:16, 0:4])
        T.writes(C[0:16])
        for i in T.serial(0, 16):
            for k in T.serial(0, 4):
                with T.sblock("update"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    C[vi] = C[vi] + T.cast(A[vk], "int32") * T.cast(B[vi, vk], "int32")


@T.prim_func(s_tir=True)
def _channels_vnni(A: T.Buffer((4,), "uint8", offset_factor=1), B: T.Buffer((16, 4), "int8", offset_factor=1),
                   C: T.Buffer((16,), "int32", offset_factor=1)) -> None:
    with T.sblock("root"):
        T.reads(C[0:16], A[0:4], B[0:16, 0:4])
        T.writes(C[0:16])
        activations = T.reinterpret(T.broadcast(T.reinterpret(A.vload([0], "uint8x4"), dtype="int32"), 16),
                                    dtype="uint8x64")
        C[T.ramp(T.int32(0), 1, 16)] = T.call_llvm_pure_intrin(
            T.llvm_lookup_intrinsic_id("llvm.x86.avx512.vpdpbusd.512"), C.vload([0], "int32x16"), activations,
            B.vload([0, 0], "int8x64"), dtype="int32x16")


@functools.cache
def _register() -> None:
    TensorIntrin.register(VNNI_PIXELS, _pixels_desc, _pixels_vnni)
    TensorIntrin.register(VNNI_CHANNELS, _channels_desc, _channels_vnni)


def has_vnni(target: Any) -> bool:
    """Whether ``target`` is an LLVM CPU target with AVX-512 VNNI (the tensor intrinsics here then apply)."""
    return str(target.kind.name) == "llvm" and all(
        codegen.target_has_features(f, target) for f in ("avx512vnni", "avx512bw"))


def vnni_intrinsic(target: Any, over: str = "pixels") -> str | None:
    """The name of the tensor intrinsic whose 16 lanes are output ``over`` ("pixels": 16 pixels x 4 bytes
    times 4 broadcast weights; "channels": 4 broadcast activation bytes times 16 channels x 4 weights) where
    ``target`` has AVX-512 VNNI, else None (the GEMM is then vectorized over int32 lanes without it)."""
    if not has_vnni(target):
        return None
    _register()
    return {"pixels": VNNI_PIXELS, "channels": VNNI_CHANNELS}[over]

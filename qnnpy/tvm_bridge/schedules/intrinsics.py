"""The dot-product instruction the int8 GEMM schedule tensorizes with, as a TVM tensor intrinsic.

``vpdpbusd`` (AVX-512 VNNI) adds to each of 16 int32 lanes the sum of four products of an
unsigned byte of its first operand and a signed byte of its second. The intrinsic here
vectorizes over 16 output *pixels*: lane i accumulates ``sum_j A[i, j] * B[j]`` with A the
u8 activations of 16 pixels x 4 reduction steps (64 contiguous bytes) and B four int8 weights
broadcast to every lane. (TVM's own ``dot_16x4_vnni`` vectorizes over output channels and
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


@functools.cache
def _register() -> None:
    TensorIntrin.register(VNNI_PIXELS, _pixels_desc, _pixels_vnni)


def vnni_intrinsic(target: Any) -> str | None:
    """The tensor intrinsic's name where ``target`` has AVX-512 VNNI, else None (the GEMM is then
    vectorized over int32 lanes without it)."""
    if str(target.kind.name) != "llvm":
        return None
    if not all(codegen.target_has_features(f, target) for f in ("avx512vnni", "avx512bw")):
        return None
    _register()
    return VNNI_PIXELS

"""The dot-product instruction the int8 GEMM schedule tensorizes with, as a TVM tensor intrinsic.

``vpdpbusd`` (AVX-512 VNNI) adds to each of 16 int32 lanes the sum of four products of an
unsigned byte of its first operand and a signed byte of its second. One intrinsic here
vectorizes over 16 output *pixels* (the convs): lane i accumulates ``sum_j A[i, j] * B[j]`` with A
the u8 activations of 16 pixels x 4 reduction steps (64 contiguous bytes) and B four int8 weights
broadcast to every lane; the other over 16 output *channels* (the linear layers, whose rows may
be one token): ``sum_j A[j] * B[i, j]``, four activation bytes broadcast, B 16 channels x 4 weights.
With AVX-VNNI (AVX2 CPUs with the VEX form of ``vpdpbusd`` on 8 lanes, no AVX-512) the same 16-lane steps
are two ymm halves. On AVX2 without VNNI, ``vpmaddwd`` on the bytes widened to int16 adds pairs of products
exactly: the conv GEMM then keeps two pair sums per pixel, added in its epilogue (conv_gemm.py, ``pairs``).
(TVM's own ``dot_16x4_vnni`` vectorizes over output channels and passes the bytes as ``int32x16``,
which the LLVM 22 in apache-tvm 0.27 rejects: that intrinsic now takes ``<64 x i8>`` operands.)
On AArch64 with the dot-product extension (Armv8.2: Cortex-A55/A76 and newer, Neoverse, Graviton 2+), ``sdot``
adds to each of 4 int32 lanes the sum of four products of signed bytes: the same 16-lane steps are four ``sdot``
on signed activation bytes (the GEMM then packs x - 128 for uint8 activations: conv_gemm.activation_byte).
"""
from __future__ import annotations

import functools
from typing import Any

from tvm.s_tir import TensorIntrin
from tvm.script import tirx as T
from tvm.target import codegen

VNNI_PIXELS = "qnnpy_vnni_u8s8_16x4_pixels"
VNNI_CHANNELS = "qnnpy_vnni_u8s8_16x4_channels"
AVXVNNI_PIXELS = "qnnpy_avxvnni_u8s8_16x4_pixels"
AVXVNNI_CHANNELS = "qnnpy_avxvnni_u8s8_16x4_channels"
AVX2_PAIRS = "qnnpy_avx2_u8s8_4x2x2_pairs"
AVX2_CHANNEL_PAIRS = "qnnpy_avx2_u8s8_16x2x2_channel_pairs"
SDOT_PIXELS = "qnnpy_sdot_s8s8_16x4_pixels"
SDOT_CHANNELS = "qnnpy_sdot_s8s8_16x4_channels"
LANES = 16
PAIR_PIXELS = 4  # the pixels of one AVX2 pair step (4 pixels x 2 pair sums = 8 int32 lanes)


def _pixels_desc_of(activations: str) -> Any:
    """What a 16-pixel step computes, on activation bytes of dtype ``activations`` (uint8 for x86, int8 for sdot)."""

    @T.prim_func(s_tir=True)
    def desc(A: T.Buffer((16, 4), activations, offset_factor=1), B: T.Buffer((4,), "int8", offset_factor=1),
             C: T.Buffer((16,), "int32", offset_factor=1)) -> None:
        with T.sblock("root"):
            T.reads(C[0:16], A[0:16, 0:4], B[0:4])
            T.writes(C[0:16])
            for i in T.serial(0, 16):
                for k in T.serial(0, 4):
                    with T.sblock("update"):
                        vi, vk = T.axis.remap("SR", [i, k])
                        C[vi] = C[vi] + T.cast(A[vi, vk], "int32") * T.cast(B[vk], "int32")

    return desc


def _channels_desc_of(activations: str) -> Any:
    """What a 16-channel step computes, on activation bytes of dtype ``activations``."""

    @T.prim_func(s_tir=True)
    def desc(A: T.Buffer((4,), activations, offset_factor=1), B: T.Buffer((16, 4), "int8", offset_factor=1),
             C: T.Buffer((16,), "int32", offset_factor=1)) -> None:
        with T.sblock("root"):
            T.reads(C[0:16], A[0:4], B[0:16, 0:4])
            T.writes(C[0:16])
            for i in T.serial(0, 16):
                for k in T.serial(0, 4):
                    with T.sblock("update"):
                        vi, vk = T.axis.remap("SR", [i, k])
                        C[vi] = C[vi] + T.cast(A[vk], "int32") * T.cast(B[vi, vk], "int32")

    return desc


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


# AVX-VNNI: LLVM selects the VEX vpdpbusd for its 256-bit intrinsic on a target with avxvnni and no AVX-512 VL.
@T.prim_func(s_tir=True)
def _pixels_avxvnni(A: T.Buffer((16, 4), "uint8", offset_factor=1), B: T.Buffer((4,), "int8", offset_factor=1),
                    C: T.Buffer((16,), "int32", offset_factor=1)) -> None:
    with T.sblock("root"):
        T.reads(C[0:16], A[0:16, 0:4], B[0:4])
        T.writes(C[0:16])
        weights = T.reinterpret(T.broadcast(T.reinterpret(B.vload([0], "int8x4"), dtype="int32"), 8), dtype="int8x32")
        C[T.ramp(T.int32(0), 1, 8)] = T.call_llvm_pure_intrin(
            T.llvm_lookup_intrinsic_id("llvm.x86.avx512.vpdpbusd.256"), C.vload([0], "int32x8"),
            A.vload([0, 0], "uint8x32"), weights, dtype="int32x8")
        C[T.ramp(T.int32(8), 1, 8)] = T.call_llvm_pure_intrin(
            T.llvm_lookup_intrinsic_id("llvm.x86.avx512.vpdpbusd.256"), C.vload([8], "int32x8"),
            A.vload([8, 0], "uint8x32"), weights, dtype="int32x8")


@T.prim_func(s_tir=True)
def _channels_avxvnni(A: T.Buffer((4,), "uint8", offset_factor=1), B: T.Buffer((16, 4), "int8", offset_factor=1),
                      C: T.Buffer((16,), "int32", offset_factor=1)) -> None:
    with T.sblock("root"):
        T.reads(C[0:16], A[0:4], B[0:16, 0:4])
        T.writes(C[0:16])
        activations = T.reinterpret(T.broadcast(T.reinterpret(A.vload([0], "uint8x4"), dtype="int32"), 8),
                                    dtype="uint8x32")
        C[T.ramp(T.int32(0), 1, 8)] = T.call_llvm_pure_intrin(
            T.llvm_lookup_intrinsic_id("llvm.x86.avx512.vpdpbusd.256"), C.vload([0], "int32x8"), activations,
            B.vload([0, 0], "int8x32"), dtype="int32x8")
        C[T.ramp(T.int32(8), 1, 8)] = T.call_llvm_pure_intrin(
            T.llvm_lookup_intrinsic_id("llvm.x86.avx512.vpdpbusd.256"), C.vload([8], "int32x8"), activations,
            B.vload([8, 0], "int8x32"), dtype="int32x8")


# AArch64 sdot: the 16 lanes as four 4-lane quarters, the 4 broadcast bytes the same in each.
@T.prim_func(s_tir=True)
def _pixels_sdot(A: T.Buffer((16, 4), "int8", offset_factor=1), B: T.Buffer((4,), "int8", offset_factor=1),
                 C: T.Buffer((16,), "int32", offset_factor=1)) -> None:
    with T.sblock("root"):
        T.reads(C[0:16], A[0:16, 0:4], B[0:4])
        T.writes(C[0:16])
        weights = T.reinterpret(T.broadcast(T.reinterpret(B.vload([0], "int8x4"), dtype="int32"), 4), dtype="int8x16")
        for q in T.unroll(4):
            C[T.ramp(q * 4, 1, 4)] = T.call_llvm_pure_intrin(
                T.llvm_lookup_intrinsic_id("llvm.aarch64.neon.sdot.v4i32.v16i8"), C.vload([q * 4], "int32x4"),
                A.vload([q * 4, 0], "int8x16"), weights, dtype="int32x4")


@T.prim_func(s_tir=True)
def _channels_sdot(A: T.Buffer((4,), "int8", offset_factor=1), B: T.Buffer((16, 4), "int8", offset_factor=1),
                   C: T.Buffer((16,), "int32", offset_factor=1)) -> None:
    with T.sblock("root"):
        T.reads(C[0:16], A[0:4], B[0:16, 0:4])
        T.writes(C[0:16])
        activations = T.reinterpret(T.broadcast(T.reinterpret(A.vload([0], "int8x4"), dtype="int32"), 4),
                                    dtype="int8x16")
        for q in T.unroll(4):
            C[T.ramp(q * 4, 1, 4)] = T.call_llvm_pure_intrin(
                T.llvm_lookup_intrinsic_id("llvm.aarch64.neon.sdot.v4i32.v16i8"), C.vload([q * 4], "int32x4"),
                B.vload([q * 4, 0], "int8x16"), activations, dtype="int32x4")


@T.prim_func(s_tir=True)
def _pairs_desc(A: T.Buffer((4, 4), "uint8", offset_factor=1), B: T.Buffer((4,), "int8", offset_factor=1),
                C: T.Buffer((4, 2), "int32", offset_factor=1)) -> None:
    with T.sblock("root"):
        T.reads(C[0:4, 0:2], A[0:4, 0:4], B[0:4])
        T.writes(C[0:4, 0:2])
        for p, h, k in T.grid(4, 2, 2):
            with T.sblock("update"):
                vp, vh, vk = T.axis.remap("SSR", [p, h, k])
                C[vp, vh] = C[vp, vh] + T.cast(A[vp, vh * 2 + vk], "int32") * T.cast(B[vh * 2 + vk], "int32")


@T.prim_func(s_tir=True)
def _pairs_avx2(A: T.Buffer((4, 4), "uint8", offset_factor=1), B: T.Buffer((4,), "int8", offset_factor=1),
                C: T.Buffer((4, 2), "int32", offset_factor=1)) -> None:
    with T.sblock("root"):
        T.reads(C[0:4, 0:2], A[0:4, 0:4], B[0:4])
        T.writes(C[0:4, 0:2])
        activations = T.Cast("int16x16", A.vload([0, 0], "uint8x16"))
        weights = T.Cast("int16x16", T.reinterpret(
            T.broadcast(T.reinterpret(B.vload([0], "int8x4"), dtype="int32"), 4), dtype="int8x16"))
        C[0, T.ramp(T.int32(0), 1, 8)] = C.vload([0, 0], "int32x8") + T.call_llvm_pure_intrin(
            T.llvm_lookup_intrinsic_id("llvm.x86.avx2.pmadd.wd"), activations, weights, dtype="int32x8")


# The linears' AVX2 form: 16 channels x 2 pair sums (32 int32, four ymm), each quarter one vpmaddwd of 4 channels'
# 16 weight bytes widened to int16 against the 4 activation bytes, widened and repeated.
@T.prim_func(s_tir=True)
def _channel_pairs_desc(A: T.Buffer((4,), "uint8", offset_factor=1), B: T.Buffer((16, 4), "int8", offset_factor=1),
                        C: T.Buffer((16, 2), "int32", offset_factor=1)) -> None:
    with T.sblock("root"):
        T.reads(C[0:16, 0:2], A[0:4], B[0:16, 0:4])
        T.writes(C[0:16, 0:2])
        for i, h, k in T.grid(16, 2, 2):
            with T.sblock("update"):
                vi, vh, vk = T.axis.remap("SSR", [i, h, k])
                C[vi, vh] = C[vi, vh] + T.cast(A[vh * 2 + vk], "int32") * T.cast(B[vi, vh * 2 + vk], "int32")


@T.prim_func(s_tir=True)
def _channel_pairs_avx2(A: T.Buffer((4,), "uint8", offset_factor=1), B: T.Buffer((16, 4), "int8", offset_factor=1),
                        C: T.Buffer((16, 2), "int32", offset_factor=1)) -> None:
    with T.sblock("root"):
        T.reads(C[0:16, 0:2], A[0:4], B[0:16, 0:4])
        T.writes(C[0:16, 0:2])
        activations = T.Cast("int16x16", T.reinterpret(
            T.broadcast(T.reinterpret(A.vload([0], "uint8x4"), dtype="int32"), 4), dtype="uint8x16"))
        for q in T.unroll(4):
            C[q * 4, T.ramp(T.int32(0), 1, 8)] = C.vload([q * 4, 0], "int32x8") + T.call_llvm_pure_intrin(
                T.llvm_lookup_intrinsic_id("llvm.x86.avx2.pmadd.wd"), T.Cast("int16x16", B.vload([q * 4, 0], "int8x16")),
                activations, dtype="int32x8")


@functools.cache
def _register() -> None:
    TensorIntrin.register(VNNI_PIXELS, _pixels_desc_of("uint8"), _pixels_vnni)
    TensorIntrin.register(VNNI_CHANNELS, _channels_desc_of("uint8"), _channels_vnni)
    TensorIntrin.register(AVXVNNI_PIXELS, _pixels_desc_of("uint8"), _pixels_avxvnni)
    TensorIntrin.register(AVXVNNI_CHANNELS, _channels_desc_of("uint8"), _channels_avxvnni)
    TensorIntrin.register(AVX2_PAIRS, _pairs_desc, _pairs_avx2)
    TensorIntrin.register(AVX2_CHANNEL_PAIRS, _channel_pairs_desc, _channel_pairs_avx2)
    TensorIntrin.register(SDOT_PIXELS, _pixels_desc_of("int8"), _pixels_sdot)
    TensorIntrin.register(SDOT_CHANNELS, _channels_desc_of("int8"), _channels_sdot)


def dot_kind(target: Any) -> str | None:
    """``"avx512"`` where ``target`` (an LLVM CPU target) has AVX-512 VNNI, ``"avxvnni"`` where it has AVX-VNNI
    without it (AVX2 CPUs such as Intel's Alder Lake), ``"sdot"`` where it is AArch64 with the dot-product
    extension, else None."""
    if str(target.kind.name) != "llvm":
        return None
    if signed_activations(target):
        return "sdot"
    if all(codegen.target_has_features(f, target) for f in ("avx512vnni", "avx512bw")):
        return "avx512"
    if all(codegen.target_has_features(f, target) for f in ("avxvnni", "avx2")):
        return "avxvnni"
    return None


def is_aarch64(target: Any) -> bool:
    """Whether ``target`` is LLVM for AArch64 (32 registers of 128 bits: a 16-lane int32 vector takes four)."""
    return str(target.kind.name) == "llvm" and bool(target.attrs.get("feature.is_aarch64", False))


def signed_activations(target: Any) -> bool:
    """Whether the GEMM's activation bytes are signed for ``target``: AArch64 with the dot-product extension, whose
    ``sdot`` multiplies signed bytes (x86's ``vpdpbusd`` takes them unsigned)."""
    return is_aarch64(target) and bool(target.attrs.get("feature.has_dotprod", False))


def pairs_intrinsic(target: Any, over: str = "pixels") -> str | None:
    """Where ``target`` has AVX2 but no VNNI of either kind: the intrinsic of the pair-sum GEMM
    (``vpmaddwd`` on bytes widened to int16, exact, where ``vpmaddubsw`` would saturate; ``over`` "pixels": 4
    pixels x 2 sums of 2 products each, the convs; "channels": 16 channels x 2 such sums, the linears), else
    None."""
    if dot_kind(target) is not None or str(target.kind.name) != "llvm" or not codegen.target_has_features("avx2", target):
        return None
    _register()
    return {"pixels": AVX2_PAIRS, "channels": AVX2_CHANNEL_PAIRS}[over]


def dot_intrinsic(target: Any, over: str = "pixels") -> str | None:
    """The name of the tensor intrinsic whose 16 lanes are output ``over`` ("pixels": 16 pixels x 4 bytes
    times 4 broadcast weights; "channels": 4 broadcast activation bytes times 16 channels x 4 weights) where
    ``target`` has a byte dot product (one zmm ``vpdpbusd`` with AVX-512 VNNI, two ymm ones with AVX-VNNI, four
    ``sdot`` on AArch64 with dotprod), else None (the GEMM is then vectorized over int32 lanes without it)."""
    kind = dot_kind(target)
    if kind is None:
        return None
    _register()
    pixels, channels = {"avx512": (VNNI_PIXELS, VNNI_CHANNELS), "avxvnni": (AVXVNNI_PIXELS, AVXVNNI_CHANNELS),
                        "sdot": (SDOT_PIXELS, SDOT_CHANNELS)}[kind]
    return {"pixels": pixels, "channels": channels}[over]

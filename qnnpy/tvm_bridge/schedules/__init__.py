"""TVM's own code for the integer form: a Relax rewrite of the int8 conv and linear layers to packed GEMMs
and dlight-style schedule rules (``vpdpbusd`` tensorization on AVX-512 VNNI), applied when the
integer form is built (``tvm_bridge.build(module, form="integer")``)."""
from qnnpy.tvm_bridge.schedules.intrinsics import dot_intrinsic
from qnnpy.tvm_bridge.schedules.pipeline import scheduled_pipeline
from qnnpy.tvm_bridge.schedules.rewrite import Int8LayersToGemm
from qnnpy.tvm_bridge.schedules.rules import Columns, Depthwise, Int8Gemm, Int8Linear, LoopNest

__all__ = ["Columns", "Depthwise", "Int8Gemm", "Int8LayersToGemm", "Int8Linear", "LoopNest", "scheduled_pipeline",
           "dot_intrinsic"]

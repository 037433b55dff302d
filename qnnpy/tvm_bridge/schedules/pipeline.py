"""The Relax pipeline that builds the integer form with the rules: TVM's CPU pipeline with
rewrite.Int8LayersToGemm before legalization and the schedule rules after fusion."""
from __future__ import annotations

from typing import Any

import tvm
from tvm.relax.backend.cpu_generic import pipeline as cpu_generic
from tvm.s_tir import dlight

from qnnpy.tvm_bridge.schedules.rewrite import Int8LayersToGemm
from qnnpy.tvm_bridge.schedules.rules import Columns, Depthwise, Int8Gemm, Int8Linear, LoopNest


def scheduled_pipeline(target: Any) -> tvm.transform.Pass:
    """``tvm.compile(mod, target, relax_pipeline=scheduled_pipeline(target))``."""

    @tvm.transform.module_pass(opt_level=0, name="qnnpy.ScheduledPipeline")
    def _pipeline(mod: Any, _ctx: Any) -> Any:
        with target:
            passes = ([Int8LayersToGemm(target)] + cpu_generic.library_dispatch_passes(target)
                      + cpu_generic.legalize_passes(target)
                      + [dlight.ApplyDefaultSchedule(Int8Gemm(), Int8Linear(), Columns(), Depthwise(), LoopNest())]
                      + cpu_generic.dataflow_lower_passes(target) + cpu_generic.finalize_passes(target))
            return tvm.transform.Sequential(passes)(mod)

    return _pipeline

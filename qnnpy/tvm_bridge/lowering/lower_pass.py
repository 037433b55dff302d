"""``lower_integer``: canonical QDQ Relax -> integer Relax, island by island.

Each ``R.quantize`` binding and the float computation it quantizes (back to the
``R.dequantize`` of integer tensors) is one island. The rule of the island's op
(``rules.RULES``, keyed by the Relax op name) rewrites it to integer arithmetic
bound to the same variable; an island no rule can lower stays in float and is
listed in the report. Float bindings no longer used are removed afterwards.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from tvm import relax

from qnnpy.tvm_bridge.lowering.hints import ModuleHints
from qnnpy.tvm_bridge.lowering.island import Bindings, Island, NotLowerable, QParams, op_name, shape_of
from qnnpy.profiles import check_profile
from qnnpy.tvm_bridge.lowering.report import REPORT_ATTR, LoweringReport
from qnnpy.tvm_bridge.lowering.rules import Context, affine_linear, lower_island


def _island(binding: Any, bindings: Bindings) -> Island:
    call = binding.value
    try:
        scale = bindings.constant(call.args[1], "output scale").astype(np.float32)
    except NotLowerable as e:
        if op_name(bindings.resolve(call.args[1])) is None:
            raise
        raise NotLowerable("dynamic quantization: the qparams of this quantize are computed at run time "
                           "(dynamic_linear); the layer stays in float") from e
    zero_point = bindings.constant(call.args[2], "output zero point").astype(np.int64)
    out = QParams(scale, zero_point, int(call.attrs.axis))
    return Island(binding.var.name, call.args[0], out, str(call.attrs.out_dtype), shape_of(binding.var), bindings)


def _lower_block(bb: relax.BlockBuilder, block: Any, ctx: Context, report: LoweringReport) -> None:
    bindings = Bindings(block, ctx.params)
    for binding in block.bindings:
        name = op_name(binding.value)
        if name == "matmul":
            _lower_float_matmul(bb, binding, bindings, report)
            continue
        if name != "quantize":
            bb.emit_normalized(binding)
            continue
        if affine_linear.is_token_quantization(binding.value, bindings):
            bb.emit_normalized(binding)  # integers already (rules/affine_linear.py)
            report.lowered.append((binding.var.name, "token_quantization"))
            continue
        try:
            island = _island(binding, bindings)
            expr, rule = lower_island(ctx, island)
        except NotLowerable as e:
            root = bindings.resolve(binding.value.args[0])
            report.kept_float.append((binding.var.name, op_name(root) or type(root).__name__, str(e)))
            bb.emit_normalized(binding)
            continue
        if expr is None:  # the rule keeps the binding as it is (already integer)
            bb.emit_normalized(binding)
        else:
            bb.emit_normalized(relax.VarBinding(binding.var, bb.normalize(expr)))
        report.lowered.append((binding.var.name, rule))


def _lower_float_matmul(bb: relax.BlockBuilder, binding: Any, bindings: Bindings, report: LoweringReport) -> None:
    """A matmul with a float output: a torchao linear's becomes integer (rules/affine_linear.py); any other is an
    island's anchor (lowered with its quantize) or a float op of the model, and stays."""
    try:
        expr = affine_linear.lower_affine_matmul(bindings, binding.value)
    except NotLowerable as e:
        report.kept_float.append((binding.var.name, "matmul", str(e)))
        expr = None
    if expr is None:
        bb.emit_normalized(binding)
        return
    bb.emit_normalized(relax.VarBinding(binding.var, bb.normalize(expr)))
    report.lowered.append((binding.var.name, "affine_linear"))


def lower_integer(mod: Any, profile: str = "int32_bias", *, params: dict[str, np.ndarray] | None = None,
                  hints: Any = None, func_name: str = "main") -> Any:
    """Rewrite every canonical ``dequantize -> float op -> quantize`` island of
    ``mod[func_name]`` into integer Relax under ``profile`` (``"int32_bias"``, ``"fbgemm"``,
    ``"fixed_point"`` or ``"qnnpack"``, the runtime's profiles: src/runtime/profile.h).

    ``params``: values of function params the rules need as constants (scales, zero
    points), by name; bound constants are read directly. ``hints``: the QDQModule the
    module came from (or a ``ModuleHints``), which makes the result bit-exact with
    qnnpy's runtime under ``profile``; without it, foreign modules get layout-free
    rules (docs/user_guide.md, "The integer form"). Weights and biases stay int8/int32 operands of
    the integer ops. Islands that cannot be lowered stay in float: they are listed in
    the report attached to the result (``lowering_report(result)``) and in a warning.
    """
    check_profile(profile)
    if hints is not None and not isinstance(hints, ModuleHints):
        hints = ModuleHints(hints, profile)
    elif hints is not None and hints.profile != profile:
        hints = ModuleHints(hints.module, profile)
    func = mod[func_name]
    ctx = Context(profile, dict(params or {}), hints)
    report = LoweringReport(profile, float_ops=hints.float_ops() if hints is not None else [])
    bb = relax.BlockBuilder()
    attrs = {k: v for k, v in func.attrs.items()} if func.attrs is not None else None
    with bb.function(func_name, list(func.params), attrs=attrs, pure=True):
        for block in func.body.blocks:
            if isinstance(block, relax.DataflowBlock):
                with bb.dataflow():
                    _lower_block(bb, block, ctx, report)
            else:
                _lower_block(bb, block, ctx, report)
        bb.emit_func_output(func.body.body)
    lowered = bb.get()[func_name]
    lowered = relax.analysis.remove_all_unused(lowered)
    result = mod.with_attr(REPORT_ATTR, report.to_json())
    result.update_func(result.get_global_var(func_name), lowered)
    if report.kept_float:
        warnings.warn(report.summary(), stacklevel=2)
    return result

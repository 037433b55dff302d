"""Integer lowering of canonical QDQ Relax modules (see lower_pass.py)."""
from qnnpy.tvm_bridge.lowering.hints import ModuleHints
from qnnpy.tvm_bridge.lowering.lower_pass import lower_integer
from qnnpy.tvm_bridge.lowering.report import LoweringReport, lowering_report

__all__ = ["ModuleHints", "LoweringReport", "lower_integer", "lowering_report"]

"""Apache TVM integration: parse, lower to integer Relax, build and run QDQ modules."""
from qnnpy.optional_tvm import parse_script, tvm_module

tvm_module()  # a clear ImportError when TVM is not installed
from qnnpy.tvm_bridge.expose import expose_values
from qnnpy.tvm_bridge.lowering import LoweringReport, ModuleHints, lower_integer, lowering_report
from qnnpy.tvm_bridge.runner import FORMS, TVMRunner, build, default_form, relax_module, set_num_threads
from qnnpy.tvm_bridge.target import to_target
from qnnpy.tvm_bridge.deploy import write_bundle

__all__ = ["FORMS", "LoweringReport", "ModuleHints", "TVMRunner", "build", "default_form", "expose_values", "lower_integer",
           "lowering_report", "parse_script", "relax_module", "set_num_threads", "to_target",
           "write_bundle"]

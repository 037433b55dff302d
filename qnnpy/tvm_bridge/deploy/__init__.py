"""Deploy folders for another CPU architecture (AArch64): the module compiled by TVM for the board, TVM's runtime
for it, and a runner (docs/deploy.md)."""
from qnnpy.tvm_bridge.deploy.bundle import cross_target, export_model, write_bundle

__all__ = ["cross_target", "export_model", "write_bundle"]

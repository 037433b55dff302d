"""``python -m qnnpy.tvm_bridge.deploy TRIPLE``: fetches TVM's runtime for TRIPLE into qnnpy's cache (once) and prints
its folder (:func:`qnnpy.tvm_bridge.deploy.cross_runtime.runtime_dir`)."""
import sys

from qnnpy.cross_targets import CROSS_TARGETS
from qnnpy.tvm_bridge.deploy.cross_runtime import runtime_dir

if len(sys.argv) != 2 or sys.argv[1] not in CROSS_TARGETS:
    sys.exit(f"usage: python -m qnnpy.tvm_bridge.deploy TRIPLE  (one of {', '.join(CROSS_TARGETS)})")
print(runtime_dir(sys.argv[1], progress=lambda line: print(f"[qnnpy] {line}", file=sys.stderr, flush=True)))

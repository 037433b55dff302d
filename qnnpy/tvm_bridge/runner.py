"""Building and running a QDQ module with Apache TVM (optional dependency)."""
from __future__ import annotations

from typing import Any

import numpy as np

from qnnpy.tvm_bridge._tvm import tvm_module
from qnnpy.tvm_bridge.lowering import lower_integer
from qnnpy.tvm_bridge.target import to_target

# form -> how the Relax module to compile is made from a QDQModule. A "kernels" form
# (calls into qnnpy's C++ kernels) is meant to be added here.
FORMS = ("qdq", "integer")


def parse_script(text: str) -> Any:
    """Parse TVMScript text to a ``tvm.IRModule``."""
    return tvm_module().script.from_source(text)


def relax_module(module: Any, form: str = "qdq", profile: str = "int32_bias", bind_params: bool = False) -> Any:
    """The ``tvm.IRModule`` that ``build`` compiles for ``form``: the canonical QDQ module
    (``"qdq"``, executed in float) or its integer lowering under ``profile`` (``"integer"``).
    ``bind_params``: the params become constants of ``main`` (``relax.transform.BindParams``)."""
    if form == "qdq":
        mod = module.to_tvm()
    elif form == "integer":
        mod = lower_integer(module.to_tvm(), profile, params=module.params, hints=module)
    else:
        raise ValueError(f"unknown form {form!r}; choose one of {FORMS}")
    if bind_params:
        from tvm import relax

        mod = relax.transform.BindParams("main", dict(module.params))(mod)
    return mod


class TVMRunner:
    """A QDQ module compiled by TVM, called with float inputs; the params are bound once."""

    def __init__(self, module: Any, target: Any = "llvm", form: str = "qdq", profile: str = "int32_bias",
                 bind_params: bool = False):
        tvm = tvm_module()
        from tvm import relax

        self.form, self.profile = form, profile
        self.relax_module = relax_module(module, form, profile, bind_params)
        self.executable = tvm.compile(self.relax_module, target=to_target(target))
        self._device = tvm.cpu()
        self._vm = relax.VirtualMachine(self.executable, self._device)
        params = {} if bind_params else module.params
        self._params = [tvm.runtime.tensor(np.ascontiguousarray(a), self._device) for a in params.values()]

    def __call__(self, *inputs: np.ndarray) -> np.ndarray | list[np.ndarray]:
        tvm = tvm_module()
        args = [tvm.runtime.tensor(np.ascontiguousarray(x, dtype=np.float32), self._device) for x in inputs]
        out = self._vm["main"](*args, *self._params)
        if isinstance(out, tvm.runtime.Tensor):
            return out.numpy()
        return [o.numpy() for o in out]


def build(module: Any, form: str = "qdq", profile: str = "int32_bias", target: Any = "llvm",
          bind_params: bool = False) -> TVMRunner:
    """Compile a QDQModule with TVM and return a callable runner.

    ``form``: ``"qdq"`` compiles the canonical module as written (float execution);
    ``"integer"`` compiles ``lower_integer(module, profile)``, which equals qnnpy's
    runtime under ``profile`` bit for bit. ``target``: a target string, options
    allowed (``"llvm -mcpu=znver4"``), TVM's dict form or a ``tvm.target.Target``.
    ``bind_params``: compile the params in as constants (the runner then takes the inputs only).
    """
    if form not in FORMS:
        raise ValueError(f"unknown form {form!r}; choose one of {FORMS}")
    return TVMRunner(module, target, form, profile, bind_params)

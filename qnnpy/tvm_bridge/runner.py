"""Building and running a QDQ module with Apache TVM (optional dependency)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from qnnpy.graph_inputs import input_arrays
from qnnpy.tvm_bridge._tvm import tvm_module
from qnnpy.tvm_bridge.lowering import lower_integer
from qnnpy.tvm_bridge.target import to_target

# How the module TVM compiles is made from a QDQModule: "kernels" calls qnnpy's own C++
# kernels (qnnpy.tvm_kernel_form), "integer" is lower_integer's pure integer Relax, "qdq"
# the canonical module as written (float execution).
FORMS = ("kernels", "integer", "qdq")


def default_form() -> str:
    """``"kernels"`` where qnnpy was built with its TVM kernel library, else ``"integer"``."""
    from qnnpy import tvm_kernel_form

    try:
        tvm_kernel_form.kernel_library_path()
    except FileNotFoundError:
        return "integer"
    return "kernels"


def parse_script(text: str) -> Any:
    """Parse TVMScript text to a ``tvm.IRModule``."""
    return tvm_module().script.from_source(text)


def _check_batch(module: Any, form: str) -> None:
    """The integer and kernels forms are built for the module's static shapes: a dynamic batch is refused."""
    if form != "qdq" and getattr(module, "dynamic_batch", False):
        raise ValueError(f"the {form!r} form needs static shapes and this module has a dynamic batch; build "
                         "form='qdq' (any batch size), or convert without dynamic_batch for the integer and "
                         "kernels forms")


def relax_module(module: Any, form: str = "qdq", profile: str = "int32_bias", bind_params: bool = False) -> Any:
    """The ``tvm.IRModule`` that ``build`` compiles for ``form``: the canonical QDQ module
    (``"qdq"``, executed in float), its integer lowering under ``profile`` (``"integer"``) or
    its calls of qnnpy's kernels (``"kernels"``, params inside the node specs).
    ``bind_params``: the params become constants of ``main`` (``relax.transform.BindParams``)."""
    _check_batch(module, form)
    if form == "kernels":
        from qnnpy import tvm_kernel_form

        return tvm_kernel_form.to_kernel_relax(module, profile)
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
    """A QDQ module compiled by TVM, called with its inputs (float, or integer indices); the params are bound once."""

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
        self._params = [tvm.runtime.tensor(np.asarray(a, order="C"), self._device) for a in params.values()]
        self._bound = bind_params
        self._graph = module.graph

    def __call__(self, *inputs: np.ndarray) -> np.ndarray | list[np.ndarray]:
        tvm = tvm_module()
        args = [tvm.runtime.tensor(a, self._device) for a in input_arrays(self._graph, inputs)]
        out = self._vm["main"](*args, *self._params)
        if isinstance(out, tvm.runtime.Tensor):
            return out.numpy()
        return [o.numpy() for o in out]

    def export_library(self, path: str | os.PathLike) -> Path:
        """Write a shared library that ``tvm.runtime.load_module`` loads in a fresh process
        (``relax.VirtualMachine(lib, tvm.cpu())["main"](x)``). Needs ``bind_params=True``:
        the library then carries the params."""
        if not self._bound:
            raise ValueError("export_library needs the params in the library: build with bind_params=True")
        self.executable.export_library(str(path))
        return Path(path)


def build(module: Any, form: str | None = None, profile: str = "int32_bias", target: Any = "llvm",
          bind_params: bool = False) -> Any:
    """Compile a QDQModule with TVM and return a callable runner (``runner(x) -> numpy``).

    ``form``: ``"kernels"`` (every node calls qnnpy's own integer kernels; bit for bit
    ``module.run(x, profile=profile)``, at about its speed), ``"integer"`` (pure integer
    Relax from ``lower_integer``: bit for bit the same, portable to any target, untuned),
    ``"qdq"`` (the canonical module as written, executed in float32: within a few LSB).
    ``None`` takes :func:`default_form`, or ``"qdq"`` for a module with a dynamic batch (the
    only form that takes any batch size; the others refuse such a module). ``target``: a target string, options allowed
    (``"llvm -mcpu=znver4"``), TVM's dict form or a ``tvm.target.Target``.
    ``bind_params``: compile the params in as constants (the runner then takes the inputs
    only; the kernels form always carries them in its node specs).
    """
    form = form or ("qdq" if getattr(module, "dynamic_batch", False) else default_form())
    if form not in FORMS:
        raise ValueError(f"unknown form {form!r}; choose one of {FORMS}")
    _check_batch(module, form)
    if form == "kernels":
        from qnnpy import tvm_kernel_form

        return tvm_kernel_form.build(module, profile=profile, target=to_target(target))
    return TVMRunner(module, target, form, profile, bind_params)

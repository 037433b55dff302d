"""Building and running a QDQ module with Apache TVM (optional dependency)."""
from __future__ import annotations

import functools
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from qnnpy.graph_inputs import checked_input_arrays
from qnnpy.optional_tvm import tvm_module
from qnnpy.profiles import resolve_profile
from qnnpy.tvm_bridge import kernel_form
from qnnpy.tvm_bridge.lowering import lower_integer
from qnnpy.tvm_bridge.schedules import scheduled_pipeline
from qnnpy.tvm_bridge.target import to_target

if TYPE_CHECKING:
    from qnnpy.module import QDQModule

# How the module TVM compiles is made from a QDQModule: "kernels" calls qnnpy's own C++
# kernels (kernel_form), "integer" is lower_integer's pure integer Relax, "qdq"
# the canonical module as written (float execution).
FORMS = ("kernels", "integer", "qdq")


# TVM's ThreadGroup::AffinityMode kSpecifyThreadShareAllCore: the workers share the listed CPUs. (The default
# mode caps the pool at the cores TVM counts as physical, which is 1 on some two-vCPU virtual machines.)
_SHARE_ALL_CPUS = -3


def set_num_threads(threads: int) -> None:
    """Worker threads of TVM's thread pool in this process, on the CPUs this process may use: the parallel
    loops of the integer and qdq forms built with the schedule rules (the kernels form's calls take
    ``kernel_form.set_num_threads``)."""
    tvm = tvm_module()
    cpus = [str(c) for c in sorted(os.sched_getaffinity(0))]
    tvm.get_global_func("runtime.config_threadpool")(_SHARE_ALL_CPUS, int(threads), cpus)


def default_form() -> str:
    """``"kernels"`` where qnnpy was built with its TVM kernel library, else ``"integer"``."""
    try:
        kernel_form.kernel_library_path()
    except FileNotFoundError:
        return "integer"
    return "kernels"


@functools.cache
def _warn_no_kernel_library() -> None:
    """Once per process: the default form fell back to the slow integer form."""
    warnings.warn(
        "qnnpy was installed without its TVM kernel library (libqnnpy_tvm_kernels.so), so "
        "tvm_bridge.build uses the 'integer' form: code TVM generates with qnnpy's schedule rules, slower than the "
        "'kernels' form (ResNet-18 on a CPU with AVX-512 VNNI: about 3 times; on other targets much more: "
        "benchmarks/RESULTS.md). Fix: reinstall qnnpy with pip install '.[tvm]' (its build needs "
        "apache-tvm-ffi). Pass form='integer' to choose that form without this warning.", UserWarning, stacklevel=3)


def _check_batch(module: "QDQModule", form: str) -> None:
    """The integer and kernels forms are built for the module's static batch: a dynamic one is refused (a symbolic
    dim they take: their shapes are Relax's symbolic ones)."""
    if form != "qdq" and module.dynamic_batch:
        raise ValueError(f"the {form!r} form needs static shapes and this module has a dynamic batch; build "
                         "form='qdq' (any batch size), or convert without dynamic_batch for the integer and "
                         "kernels forms")


def relax_module(module: "QDQModule", form: str = "qdq", profile: str | None = None,
                 bind_params: bool = False) -> Any:
    """The ``tvm.IRModule`` that ``build`` compiles for ``form``: the canonical QDQ module
    (``"qdq"``, executed in float), its integer lowering under ``profile`` (``"integer"``) or
    its calls of qnnpy's kernels (``"kernels"``, params inside the node specs). ``profile``
    defaults to :func:`qnnpy.profiles.default_profile`.
    ``bind_params``: the params become constants of ``main`` (``relax.transform.BindParams``)."""
    _check_batch(module, form)
    profile = resolve_profile(profile)
    if form == "kernels":
        return kernel_form.to_kernel_relax(module, profile)
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


def compile_form(module: "QDQModule", form: str, profile: str, target: Any, bind_params: bool = True,
                 rules: bool = True) -> tuple[Any, Any]:
    """``(relax_module, executable)``: the module in the ``"qdq"`` or ``"integer"`` form compiled by TVM for
    ``target`` (a ``tvm.target.Target``; any, also another architecture's), with qnnpy's schedule rules or
    TVM's default pipeline."""
    tvm = tvm_module()
    mod = relax_module(module, form, profile, bind_params)
    return mod, tvm.compile(mod, target=target, relax_pipeline=scheduled_pipeline(target) if rules else "default")


class TVMRunner:
    """A QDQ module compiled by TVM, called with its inputs (float, or integer indices); the params are bound once.

    ``rules``: compile with qnnpy's schedule rules (:mod:`qnnpy.tvm_bridge.schedules`): the integer
    form's int8 convs and linears as packed GEMMs (the weights packed at build time, so the params are
    bound), tensorized with VNNI where the target has it, every other function parallel and vectorized.
    ``False``: TVM's default CPU pipeline (plain loops)."""

    def __init__(self, module: "QDQModule", target: Any = "host", form: str = "qdq", profile: str | None = None,
                 bind_params: bool = False, rules: bool = True):
        tvm = tvm_module()
        from tvm import relax

        self.form, self.profile = form, resolve_profile(profile)
        bind_params = bind_params or (rules and form == "integer")
        self.relax_module, self.executable = compile_form(module, form, self.profile, to_target(target),
                                                          bind_params, rules)
        self._device = tvm.cpu()
        self._vm = relax.VirtualMachine(self.executable, self._device)
        params = {} if bind_params else module.params
        self._params = [tvm.runtime.tensor(np.asarray(a, order="C"), self._device) for a in params.values()]
        self._bound = bind_params
        self._graph = module.graph

    def __call__(self, *inputs: np.ndarray) -> np.ndarray | list[np.ndarray]:
        """Run on inputs shaped like the module's (checked here: a wrong count, dtype or shape is a
        ``ValueError`` naming the input); returns the output, or a list for several outputs."""
        tvm = tvm_module()
        arrays = checked_input_arrays(self._graph, inputs)
        out = self._vm["main"](*(tvm.runtime.tensor(a, self._device) for a in arrays), *self._params)
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


def build(module: "QDQModule", form: str | None = None, profile: str | None = None, target: Any = "host",
          bind_params: bool = False, rules: bool = True) -> "TVMRunner | kernel_form.KernelRunner":
    """Compile a QDQModule with TVM and return a callable runner (``runner(x) -> numpy``).

    ``form``: ``"kernels"`` (every node calls qnnpy's own integer kernels; bit for bit
    ``module.run(x, profile=profile)``, at about its speed), ``"integer"`` (pure integer
    Relax from ``lower_integer``, compiled by TVM itself for any target: bit for bit the same;
    with ``rules``, its convs run as VNNI-tensorized GEMMs on targets with AVX-512 VNNI),
    ``"qdq"`` (the canonical module as written, executed in float32: within a few LSB).
    ``None`` takes :func:`default_form` (warning once when that is ``"integer"`` because the
    kernel library is missing), or ``"qdq"`` for a module with a dynamic batch (the only form that
    takes any batch size; the others refuse such a module). A symbolic dim every form takes.
    ``profile``: default :func:`qnnpy.profiles.default_profile`, the one that equals the engine
    PyTorch uses here. ``target``: ``"host"`` (LLVM for this CPU), a target string, options
    allowed (``"llvm -mcpu=znver4"``), TVM's dict form or a ``tvm.target.Target``.
    ``bind_params``: compile the params in as constants (the runner then takes the inputs
    only; the kernels form always carries them in its node specs; the integer form with
    ``rules`` always binds them). ``rules``: see :class:`TVMRunner` (the qdq and integer forms).
    """
    if form is None:
        form = "qdq" if module.dynamic_batch else default_form()
        if form == "integer":
            _warn_no_kernel_library()
    if form not in FORMS:
        raise ValueError(f"unknown form {form!r}; choose one of {FORMS}")
    _check_batch(module, form)
    if form == "kernels":
        return kernel_form.build(module, profile=profile, target=to_target(target))
    return TVMRunner(module, target, form, profile, bind_params, rules)

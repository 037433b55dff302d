"""The kernels form: a Relax module whose nodes call qnnpy's own integer kernels.

Each node of the QDQModule becomes one call
``R.call_pure_packed("qnnpy.kernels.call_node", spec, inputs..., ty_args=...)`` of the
kernel library ``libqnnpy_tvm_kernels.so`` (``src/tvm_kernels/``), which returns the node's
output as a tensor owning the runtime's output buffer; the call that reads it takes that
buffer over, so activations pass from call to call without copies. ``spec`` is a uint8
constant describing the node (op, attributes, qparams, weights, profile); the library
packs a node's weights on its first call and reuses them on every later call.
Intermediate 8-bit rank-4 tensors are NHWC, the runtime's storage order, so no layout
conversion runs between calls; the module's float inputs and outputs are NCHW, as in
the QDQ form. The results equal ``module.run(x, profile=...)`` bit for bit: the calls
run the runtime's own node code. A module with a symbolic dim keeps it: each call also
passes its value, and the library rebuilds the node for each size it meets.
"""
from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from qnnpy import _core
from qnnpy.graph_inputs import checked_input_arrays
from qnnpy.profiles import resolve_profile

if TYPE_CHECKING:
    from qnnpy.module import QDQModule

_LIBRARY_NAME = "libqnnpy_tvm_kernels.so"
_CALL_NODE = "qnnpy.kernels.call_node"


def kernel_library_path() -> str:
    """Path of the installed kernel library; FileNotFoundError when qnnpy was built without it."""
    path = Path(_core.__file__).with_name(_LIBRARY_NAME)  # installed beside the extension, also when editable
    if path.is_file():
        return str(path)
    raise FileNotFoundError(
        f"{path} not found: qnnpy was built without its TVM kernel "
        "library; reinstall it with pip install '.[tvm]' (the build needs apache-tvm-ffi; CMake option "
        "QNNPY_TVM_KERNELS=ON makes the library required)")


@functools.cache
def load_kernel_library() -> None:
    """Load the kernel library into this process (once), registering its ``qnnpy.kernels.*`` functions."""
    import tvm  # noqa: F401  (loads libtvm_ffi.so first)

    ctypes.CDLL(kernel_library_path())  # its functions register into libtvm_ffi when it loads


def _global(name: str) -> Any:
    import tvm_ffi

    load_kernel_library()
    return tvm_ffi.get_global_func(name)


def set_num_threads(threads: int) -> None:
    """Worker threads of the conv and linear kernels in this process (default 1)."""
    _global("qnnpy.kernels.set_num_threads")(int(threads))


def kernel_isa() -> str:
    """The kernels the library runs in this process: "amx", "avx512vnni", "avxvnni", "avx2" or "scalar"
    (``QNNPY_ISA``, read at its first call)."""
    return str(_global("qnnpy.kernels.isa")())


def prepared_node_count() -> int:
    """How many nodes the library has prepared (decoded, weights packed) in this process."""
    return int(_global("qnnpy.kernels.prepared_node_count")())


def cached_node_count() -> int:
    """How many prepared nodes the library holds now (those of modules still alive in this process)."""
    return int(_global("qnnpy.kernels.cached_node_count")())


def to_kernel_relax(module: "QDQModule", profile: str | None = None) -> Any:
    """The module as a ``tvm.IRModule`` in the kernels form for ``profile`` (params bound as constants;
    default: :func:`qnnpy.profiles.default_profile`). A module with a symbolic dim keeps it: the inputs' shapes
    declare it, every call passes its value after the spec, and the outputs' shapes are expressions of it."""
    from tvm import relax, tirx

    calls = _global("qnnpy.kernels.split_graph")(bytes(module.graph.serialize()), resolve_profile(profile))
    values = module.graph.values()
    value_id = {v["name"]: i for i, v in enumerate(values)}
    symbolic = module.dynamic_dim
    size = tirx.Var(symbolic["name"], "int64") if symbolic is not None else None

    def extents(shape: list[int], slopes: list[int]) -> list[Any]:
        """Each extent as it follows the size: fixed, or its value at the example plus slope * (size - example)."""
        if size is None:
            return [int(d) for d in shape]
        return [int(d) if not k else int(d) + int(k) * (size - symbolic["example"]) for d, k in zip(shape, slopes)]

    inputs = []
    for index, value in enumerate(module.graph.inputs):
        shape: list[Any] = [int(d) for d in values[value]["shape"]]
        for input_index, axis in symbolic["input_axes"] if symbolic is not None else []:
            if input_index == index:
                shape[axis] = size
        inputs.append(relax.Var(values[value]["name"], relax.TensorType(shape, values[value]["dtype"])))
    bb = relax.BlockBuilder()
    with bb.function("main", inputs):
        with bb.dataflow():
            env: dict[int, Any] = dict(zip(module.graph.inputs, inputs))
            for node, (spec, dtype, shape, slopes) in zip(module.nodes(), calls):
                args = [relax.const(np.frombuffer(bytes(spec), dtype=np.uint8))]
                if size is not None:
                    args.append(relax.prim_value(size))
                args += [env[value_id[name]] for name in node["inputs"]]
                out_ty = relax.TensorType(extents(list(shape), list(slopes)), str(dtype))
                env[value_id[node["output"]]] = bb.emit(relax.op.call_pure_packed(_CALL_NODE, *args, ty_args=out_ty),
                                                        name_hint=node["output"])
            outputs = [_to_logical(bb, env[i], values[i]) for i in module.graph.outputs]
            result = bb.emit_output(outputs[0] if len(outputs) == 1 else relax.Tuple(outputs))
        bb.emit_func_output(result)
    return bb.get()


def compile_kernels(module: "QDQModule", profile: str, target: Any) -> tuple[Any, Any]:
    """``(relax_module, executable)``: the kernels form for ``profile`` compiled by TVM for ``target`` (any, also
    another architecture's: the module itself only calls the kernel library)."""
    import tvm

    mod = to_kernel_relax(module, profile)
    return mod, tvm.compile(mod, target=target)


def _to_logical(bb: Any, var: Any, info: dict[str, Any]) -> Any:
    """A module output in NCHW order: 8-bit rank-4 values leave the kernels in NHWC."""
    from tvm import relax

    if info["dtype"] == "float32" or len(info["shape"]) != 4:
        return var
    return bb.emit(relax.op.permute_dims(var, [0, 3, 1, 2]))


class KernelRunner:
    """A QDQModule compiled by TVM in the kernels form, called with float NCHW inputs.

    ``runner(x)`` returns the output as a numpy array (a list for several outputs);
    ``export_library(path)`` writes a deployable shared library.
    """

    def __init__(self, module: "QDQModule", profile: str | None = None, target: Any = "llvm"):
        import tvm
        from tvm import relax

        profile = resolve_profile(profile)
        self.form, self.profile = "kernels", profile
        self.ir_module, self.executable = compile_kernels(module, profile, target)
        self._device = tvm.cpu()
        self._vm = relax.VirtualMachine(self.executable, self._device)
        self._graph = module.graph

    def __call__(self, *inputs: np.ndarray) -> np.ndarray | list[np.ndarray]:
        import tvm

        args = [tvm.runtime.tensor(a, self._device) for a in checked_input_arrays(self._graph, inputs)]
        out = self._vm["main"](*args)
        if isinstance(out, tvm.runtime.Tensor):
            return out.numpy()
        return [o.numpy() for o in out]

    def export_library(self, path: str | os.PathLike) -> Path:
        """Write a shared library (params bound) that ``tvm.runtime.load_module`` loads in a fresh process.

        It links the kernel library by absolute path (rpath), so that process needs TVM and
        the qnnpy kernel library only: ``relax.VirtualMachine(tvm.runtime.load_module(path), tvm.cpu())``.
        """
        library = Path(kernel_library_path())
        self.executable.export_library(
            str(path), options=["-Wl,--no-as-needed", str(library), f"-Wl,-rpath,{library.parent}"])
        return Path(path)


def build(module: "QDQModule", profile: str | None = None, target: Any = "llvm") -> KernelRunner:
    """Compile ``module`` in the kernels form for ``profile`` (default: :func:`qnnpy.profiles.default_profile`)
    and return a callable runner."""
    return KernelRunner(module, profile, target)

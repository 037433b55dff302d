"""QDQModule: the converted module, its TVMScript text, params and summary."""
from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from qnnpy import _core
from qnnpy.executor import Executor, RunResult, check_threads
from qnnpy.graph_inputs import checked_input_arrays, symbolic_size
from qnnpy.optional_tvm import parse_script
from qnnpy.profiles import resolve_profile

_SCRIPT_FILE = "module.py"
# Written beside the graph file (the params a second time) by earlier versions; still checked when present.
_LEGACY_PARAMS_FILE = "params.npz"
_GRAPH_FILE = "graph.qnnpy"
_WEIGHT_DTYPES = ("int8", "int32")
# Executors kept for sizes other than the example's (QDQModule._executor): a service that sees many batch sizes or
# lengths keeps those it used last, not one per size it ever saw.
SIZED_EXECUTORS = 8


class QDQModule:
    """A full-integer model in the canonical QDQ form.

    Weights are int8 and biases int32 function parameters of a Relax function;
    every quantized op is ``dequantize -> float op -> quantize``.
    """

    def __init__(self, graph: _core.Graph, torch_nodes: dict[str, str] | None = None):
        self._graph = graph
        # IR value name -> name of the FX node that computed it (known after from_torch, not after load).
        self.torch_nodes = dict(torch_nodes or {})
        self._executors: dict[tuple[str, str, int, int], Executor] = {}
        # dynamic batch or symbolic dim: the graph of each size run
        self._sized_graphs: dict[int, _core.Graph] = {}
        self._released: str | None = None  # why the packed params are gone (release_packed_params)

    @property
    def graph(self) -> _core.Graph:
        """The C++ graph IR."""
        return self._graph

    def script(self, func_name: str = "main") -> str:
        """The module as Relax TVMScript text (parse it with ``tvm.script.from_source``). ValueError after
        :meth:`release_packed_params`."""
        if self._released is not None:
            raise ValueError(self._released)
        return self._graph.script(func_name)

    @property
    def params(self) -> dict[str, np.ndarray]:
        """Function parameters after the inputs, by name, in signature order (read-only views). ValueError after
        :meth:`release_packed_params`."""
        if self._released is not None:
            raise ValueError(self._released)
        return dict(self._graph.exported_params())

    @property
    def dynamic_batch(self) -> bool:
        """Whether the module takes any batch size (``from_torch(..., dynamic_batch=True)``): dim 0 of
        every tensor is the batch, symbolic in the Relax module; ``input_shapes`` holds the example's."""
        return self._graph.dynamic_batch

    @property
    def dynamic_dim(self) -> dict[str, Any] | None:
        """The symbolic dim (``from_torch(..., dynamic_dim=DynamicDim(...))``) as ``name``, ``example`` (the size
        of ``input_shapes``), ``max`` and ``input_axes`` ((input index, axis) pairs), or None."""
        return self._graph.symbolic_dim

    @property
    def input_names(self) -> list[str]:
        return [self._graph.value(i)["name"] for i in self._graph.inputs]

    @property
    def input_shapes(self) -> list[tuple[int, ...]]:
        return [self._graph.value(i)["shape"] for i in self._graph.inputs]

    @property
    def input_dtypes(self) -> list[str]:
        """Each input's dtype: "float32", or "int64" / "int32" for indices (embedding lookups)."""
        return [self._graph.value(i)["dtype"] for i in self._graph.inputs]

    @property
    def output_info(self) -> list[dict[str, Any]]:
        """Name, dtype, shape and qparams of each output."""
        return [self._graph.value(i) for i in self._graph.outputs]

    def output_qparams(self) -> list[tuple[float, int]]:
        """(scale, zero_point) of each output, or of the integer tensor a float output was dequantized from."""
        producer = {n["output"]: n for n in self.nodes()}
        by_name = {v["name"]: v for v in self._graph.values()}
        result = []
        for info in self.output_info:
            node = producer.get(info["name"])
            if info["scale"] is None and node is not None and node["op"] == "dequantize":
                info = by_name[node["inputs"][0]]
            result.append((info["scale"], info["zero_point"]))
        return result

    def nodes(self) -> list[dict[str, Any]]:
        """The IR nodes: op, source (PyTorch module path), inputs, output, params, attributes."""
        return self._graph.nodes()

    def save(self, directory: str | os.PathLike) -> Path:
        """Write ``graph.qnnpy`` (the IR with its params: what :meth:`load` reads) and ``module.py`` (the
        TVMScript text). The params are stored once, in ``graph.qnnpy``; ``load(directory).params`` gives them
        by name, e.g. for ``np.savez``."""
        script = self.script()
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        (out / _SCRIPT_FILE).write_text(script)
        (out / _GRAPH_FILE).write_bytes(self._graph.serialize())
        stale = out / _LEGACY_PARAMS_FILE  # left by an earlier save into this folder: it would be checked on load
        stale.unlink(missing_ok=True)
        return out

    @classmethod
    def load(cls, directory: str | os.PathLike) -> "QDQModule":
        """Reload a module written by :meth:`save`.

        ``graph.qnnpy`` is read and every node validated (a file from another format
        version is refused). A ``params.npz`` beside it (written by earlier qnnpy versions, which
        stored the params twice) must hold the same params, names, dtypes and values (read
        without pickles). Raises ``FileNotFoundError`` for a missing graph file and
        ``ValueError`` naming the file for bad contents.
        """
        path = Path(directory) / _GRAPH_FILE
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found: not a directory written by QDQModule.save")
        try:
            graph = _core.Graph.deserialize(path.read_bytes())
        except (ValueError, IndexError, RuntimeError) as e:  # the core's invalid_argument, out_of_range, logic_error
            raise ValueError(f"{path}: {e}") from e
        module = cls(graph)
        legacy = Path(directory) / _LEGACY_PARAMS_FILE
        if legacy.is_file():
            module._check_saved_params(legacy)
        return module

    def _check_saved_params(self, path: Path) -> None:
        """Check that an old folder's ``params.npz`` holds this module's params (the graph file's are used)."""
        try:
            with np.load(path, allow_pickle=False) as saved:
                arrays = {name: saved[name] for name in saved.files}
        except (OSError, ValueError, EOFError) as e:
            raise ValueError(f"{path}: cannot read: {e}") from e
        expected = self.params
        if list(arrays) != list(expected):
            raise ValueError(f"{path}: holds params {sorted(arrays)}, the graph file {sorted(expected)}")
        for name, a in expected.items():
            b = arrays[name]
            if b.dtype != a.dtype or b.shape != a.shape or not np.array_equal(a, b):
                raise ValueError(f"{path}: param '{name}' differs from the graph file's ({b.dtype}{list(b.shape)} vs "
                                 f"{a.dtype}{list(a.shape)}): the folder was edited; save the module again")

    def run(self, *inputs: np.ndarray, profile: str | None = None, threads: int = 1, isa: str | None = None,
            capture: bool = False, feed: dict[str, np.ndarray] | None = None) -> RunResult:
        """Run the module in integer arithmetic with qnnpy's C++ kernels.

        ``profile`` (:mod:`qnnpy.profiles`): ``"fbgemm"`` (equal to PyTorch's fbgemm engine),
        ``"x86"`` / ``"x86_amx"`` and ``"onednn"`` / ``"onednn_amx"`` (its x86 and onednn engines on CPUs
        with AVX-512 VNNI / AMX), ``"qnnpack"`` (equal to its qnnpack engine), ``"int32_bias"`` (the params'
        canonical meaning) or ``"fixed_point"`` (integer-only hardware); by default the one that equals the engine PyTorch
        uses in this process (:func:`qnnpy.profiles.default_profile`). Returns the
        quantized output, its dequantized values and, with ``capture=True``, every
        intermediate integer tensor by IR value name; ``RunResult.outputs`` holds every
        output. Weights are packed once per (profile, isa, threads, batch size or length) and
        reused; after the first run the graph is frozen. A module with ``dynamic_batch`` runs any
        batch size (dim 0 of the inputs), one with a ``dynamic_dim`` any length up to its bound.
        ``feed`` (value name -> array of the value's dtype and
        shape) replaces values once computed, so later nodes read the fed values
        (:func:`qnnpy.compare` with ``reference_inputs=True`` feeds PyTorch's tensors).
        """
        return self._executor(self._size_of(inputs), profile, threads, isa).run(*inputs, capture=capture, feed=feed)

    def executor(self, profile: str | None = None, threads: int = 1, isa: str | None = None) -> Executor:
        """The runtime's executor of one run setting at the example's shapes, as :meth:`run` uses it (made, its
        weights packed, on first use): for callers that keep state in it between runs
        (:meth:`qnnpy.executor.Executor.run_carried`)."""
        return self._executor(self._example_size(), profile, threads, isa)

    def _executor(self, size: int, profile: str | None, threads: int, isa: str | None) -> Executor:
        """The executor of one run setting, made (its weights packed) on first use. Of those for sizes other than
        the example's (a dynamic batch, a symbolic length), the SIZED_EXECUTORS used last are kept (their values'
        buffers with them); an older one is dropped, unless release_packed_params has freed what would remake it."""
        profile = resolve_profile(profile)
        key = (profile, isa or _core.default_isa(), check_threads(threads), size)
        if key in self._executors:
            self._executors[key] = self._executors.pop(key)  # the most recently used last
            return self._executors[key]
        if self._released is not None:
            raise ValueError(f"no executor for profile {key[0]}, isa {key[1]}, {key[2]} threads, size {size}: "
                             + self._released)
        self._executors[key] = Executor(self._graph_at(size), self.output_qparams(), profile, isa, threads)
        sized = [k for k in self._executors if k[3] != self._example_size()]
        for old in sized[:max(0, len(sized) - SIZED_EXECUTORS)]:
            del self._executors[old]
            if not any(k[3] == old[3] for k in self._executors):
                self._sized_graphs.pop(old[3], None)
        return self._executors[key]

    def release_packed_params(self, profile: str | None = None, threads: int = 1, isa: str | None = None) -> int:
        """Prepare qnnpy's runtime for one run setting (as :meth:`run` takes them, at the example batch), then free
        the params its kernels copied into their own layout when they were prepared (the int8 / int4 weights of
        torchao's dynamic and 8da4w linears, and their scales), so that those weights are in memory once. Runs at
        the settings prepared so far keep working; :attr:`params`, the TVM forms, :meth:`save` and runs at other
        settings raise ValueError afterwards. Returns the bytes freed (a param another module shares,
        ``Graph.share_params``, is freed when both have released it)."""
        self._executor(self._example_size(), profile, threads, isa)
        settings = ", ".join(f"({p}, {i}, {t} threads)" for p, i, t, _ in self._executors)
        self._released = ("its packed params were freed by release_packed_params() once the runtime had packed them "
                          f"(prepared: {settings}); convert the model again for its params, TVM forms, save or other "
                          "run settings")
        return int(self._graph.release_packed_params(self._released))

    def value_storage_bytes(self) -> int:
        """Bytes qnnpy's runtime keeps for the values between runs, over every run setting used so far (one executor
        each): values alive at different times share buffers (:meth:`qnnpy.executor.Executor.storage_bytes`)."""
        return sum(executor.storage_bytes() for executor in self._executors.values())

    def _example_size(self) -> int:
        """The size of the symbolic dim the module was converted at, else dim 0 of its inputs (1 for a rank-0
        input): what :meth:`run` keys its executors by."""
        if self.dynamic_dim is not None:
            return self.dynamic_dim["example"]
        shape = self.input_shapes[0]
        return shape[0] if shape else 1

    def _size_of(self, inputs: tuple[np.ndarray, ...]) -> int:
        """The symbolic dim's size in a run (the input shapes checked against it and its bound), else its batch."""
        if self.dynamic_dim is None:
            return self._batch_of(inputs)
        return symbolic_size(self._graph, checked_input_arrays(self._graph, inputs)) or 1

    def _batch_of(self, inputs: tuple[np.ndarray, ...]) -> int:
        """The batch size of a run: dim 0 of the first input, whose rank is checked here (the core
        checks every shape)."""
        if not inputs:
            return self._example_size()
        first, expected = np.asarray(inputs[0]), tuple(self.input_shapes[0])
        shape = first.shape
        if first.dtype.kind in "biuf" and len(shape) != len(expected):  # other dtypes: refused by input_arrays
            name = self._graph.value(self._graph.inputs[0])["name"]
            raise ValueError(f"input '{name}' must have shape {expected}, got {shape} ({len(shape)} dimensions, "
                             f"not {len(expected)})")
        batch = int(shape[0]) if shape else self._example_size()
        if batch != self._example_size() and not self.dynamic_batch:
            raise ValueError(f"input batch {batch}: this module was built for batch {self._example_size()}; "
                             "convert with from_torch(..., dynamic_batch=True) to run any batch size")
        return batch

    def _graph_at(self, size: int) -> _core.Graph:
        """The graph at ``size`` of its symbolic dim or batch (the module's own at the example's; made once per
        other size)."""
        if size == self._example_size():
            return self._graph
        if size not in self._sized_graphs:
            graph = self._graph
            self._sized_graphs[size] = graph.at_size(size) if self.dynamic_dim is not None else graph.with_batch(size)
        return self._sized_graphs[size]

    def to_tvm(self) -> Any:
        """The module as a ``tvm.IRModule`` (needs ``pip install qnnpy[tvm]``)."""
        return parse_script(self.script())

    def param_bytes(self) -> dict[str, int]:
        """Bytes of the function params by dtype."""
        sizes: Counter[str] = Counter()
        for a in self.params.values():
            sizes[str(a.dtype)] += a.nbytes
        return dict(sizes)

    def float_weight_bytes(self) -> int:
        """Bytes the same weights and biases take as float32, as in the float model."""
        return sum(a.size * 4 for name, a in self.params.items() if str(a.dtype) in _WEIGHT_DTYPES)

    def summary(self) -> str:
        """Ops by count, float ops (what a PT2E quantizer left in float) by count, param bytes by dtype
        against the float model, bias saturations."""
        nodes = self.nodes()
        ops = Counter(n["op"] for n in nodes)
        saturated = sum(n["ints"].get("bias_saturated", [0])[0] for n in nodes)
        by_dtype = self.param_bytes()
        total = sum(by_dtype.values())
        float_bytes = self.float_weight_bytes()
        inputs = [(name, shape) if dtype == "float32" else (name, shape, dtype)  # integer inputs: indices
                  for name, shape, dtype in zip(self.input_names, self.input_shapes, self.input_dtypes)]
        lines = [f"QDQModule: {len(nodes)} ops, inputs {inputs}"]
        lines.append("  ops: " + ", ".join(f"{op} x{n}" for op, n in sorted(ops.items())))
        info = {op: _core.op_info(op) for op in ops}
        dynamic = {op: n for op, n in sorted(ops.items()) if info[op]["quantizes_input"]}
        floats = {op: n for op, n in sorted(ops.items()) if info[op]["kind"] == "float" and op not in dynamic}
        if dynamic:
            lines.append(f"  quantized layers with float input and output (int8 weights, the input quantized at run "
                         f"time or weight-only): {', '.join(f'{op} x{n}' for op, n in dynamic.items())}")
        listed = f" ({', '.join(f'{op} x{n}' for op, n in floats.items())}), run in float32" if floats else ""
        lines.append(f"  float ops: {sum(floats.values())}{listed}")
        lines.append("  params: " + ", ".join(f"{dt} {b:,} B" for dt, b in sorted(by_dtype.items())) + f" (total {total:,} B)")
        ratio = total / float_bytes if float_bytes else float("nan")
        lines.append(f"  float32 weights and biases of the float model: {float_bytes:,} B; ratio {ratio:.3f}")
        lines.append(f"  int32 bias values saturated: {saturated}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        params = "released" if self._released is not None else len(self.params)
        return f"QDQModule(inputs={self.input_names}, ops={len(self.nodes())}, params={params})"

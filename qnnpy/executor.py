"""The Python side of the C++ executor (``src/runtime``): runs a module's graph in int8/int32 arithmetic.

``isa`` selects ``"scalar"``, ``"avx2"``, ``"avxvnni"``, ``"avx512vnni"`` or ``"amx"`` (x86-64; the VNNI sets:
the AVX2 set with the u8 x s8 GEMM and depthwise kernels on ``vpdpbusd``, over ymm for ``avxvnni``,
zmm for ``avx512vnni``; ``amx``: the avx512vnni set with the GEMM on AMX tiles; ``"amx_model"``, its GEMM on
a software model of the tiles, is for tests), ``"neon"`` or ``"neon_dot"`` (AArch64) kernels; by default the
best the CPU runs (on x86-64 AMX, else AVX-512 VNNI, else AVX-VNNI, else AVX2; on AArch64 NEON, with sdot when
the CPU has the dot-product extension), unless the environment variable ``QNNPY_ISA`` names one
(``docs/kernels.md``).
Profiles are described in :mod:`qnnpy.profiles`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from qnnpy import _core
from qnnpy.graph_inputs import input_arrays
from qnnpy.profiles import resolve_profile


@dataclass
class RunOutput:
    """One output of a run: its integer values (in the integer dtype of the graph, uint8 or int8) and their
    dequantized values. An output computed in float (a dynamic quantized linear's, a PT2E float head) has no
    integer form: ``quantized`` is None and ``dequantized`` holds the output; so for an int64 / int32 / bool
    output (indices, a mask), ``dequantized`` holds its values unchanged."""

    quantized: np.ndarray | None
    dequantized: np.ndarray


@dataclass
class RunResult:
    """Output of one run: the first output's integer and dequantized values, every output, and (with capture) every tensor.

    ``quantized`` and ``dequantized`` are ``outputs[0]``'s; ``outputs`` holds every
    output of the graph in order. ``quantized`` is None when that output is computed in float
    (see :class:`RunOutput`).
    """

    quantized: np.ndarray | None
    dequantized: np.ndarray
    intermediates: dict[str, np.ndarray] = field(default_factory=dict)
    outputs: list[RunOutput] = field(default_factory=list)


def output_integer_dtypes(graph: _core.Graph) -> list[np.dtype | None]:
    """The integer dtype of each output: its own, or for a float output the dtype of the tensor it was dequantized
    from; None for an output computed in float."""
    producer = {n["output"]: n for n in graph.nodes()}
    by_name = {v["name"]: v for v in graph.values()}
    dtypes = []
    for value_id in graph.outputs:
        info = graph.value(value_id)
        node = producer.get(info["name"])
        if info["dtype"] == "float32" and node is not None and node["op"] == "dequantize":
            info = by_name[node["inputs"][0]]
        dtypes.append(None if info["dtype"] == "float32" else np.dtype(info["dtype"]))
    return dtypes


def check_threads(threads: int) -> int:
    """``threads`` as an int, or ValueError for a non-integer (a bool, a float, a string); the core
    checks the range."""
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        raise ValueError(f"threads must be an integer in [1, 256], got {threads!r}")
    return int(threads)


class Executor:
    """A graph prepared for the C++ executor: weights packed once for one profile, ISA and thread count.

    ``output_qparams`` are the (scale, zero_point) of each output, or of the integer
    tensor a float output was dequantized from (``QDQModule.output_qparams()``).
    ``profile`` defaults to :func:`qnnpy.profiles.default_profile`; ``threads`` must be in [1, 256].
    The graph is frozen: it can no longer be extended (the executor keeps references into it). One
    executor runs one call at a time; calls from several threads wait for each other.
    """

    def __init__(self, graph: _core.Graph, output_qparams: Sequence[tuple[float, int]],
                 profile: str | None = None, isa: str | None = None, threads: int = 1):
        self._output_qparams = list(output_qparams)
        self._output_dtypes = output_integer_dtypes(graph)
        if len(self._output_qparams) != len(self._output_dtypes):
            raise ValueError(f"{len(self._output_qparams)} output qparams given for {len(self._output_dtypes)} outputs")
        self._graph = graph
        self._executor = _core.Executor(graph, resolve_profile(profile), isa or "", check_threads(threads))

    @property
    def profile(self) -> str:
        return self._executor.profile

    @property
    def isa(self) -> str:
        return self._executor.isa

    def storage_bytes(self) -> int:
        """Bytes the values' storage keeps from run to run: a value's buffer goes back to a pool once no later node
        reads it, so values alive at different times share memory (0 before the first run)."""
        return int(self._executor.storage_bytes())

    def run(self, *inputs: np.ndarray, capture: bool = False, feed: dict[str, np.ndarray] | None = None) -> RunResult:
        """Run on inputs shaped like the module's inputs (checked by the core): float32, or integer arrays for
        index inputs (an int64 / int32 input of an embedding); returns every output.

        ``feed`` maps IR value names to arrays of the value's dtype and shape (logical NCHW order):
        each replaces its value once the node computing it has run (and been captured), so the
        nodes reading it compute from the fed values.
        """
        arrays = input_arrays(self._graph, inputs)
        outputs, captured = self._executor.run(arrays, capture, feed or {})
        results = [self._integer_and_real(out, scale, zero_point, dtype)
                   for out, (scale, zero_point), dtype in zip(outputs, self._output_qparams, self._output_dtypes)]
        return RunResult(results[0].quantized, results[0].dequantized, dict(captured), results)

    def carried_state(self, arrays: Sequence[np.ndarray], first_output: int = 1) -> _core.CarriedState:
        """State the runtime carries from run to run (:meth:`run_carried`): copies of ``arrays`` as the graph's first
        inputs, written back by outputs ``first_output``, ``first_output + 1``, ... (a decoder's KV cache: inputs
        ``(*state, ids, positions)``, outputs ``(logits, *state)``)."""
        return self._executor.carried_state([np.asarray(a) for a in arrays], first_output)

    def run_carried(self, state: _core.CarriedState, *inputs: np.ndarray) -> list[np.ndarray | None]:
        """Run with ``state`` as the first inputs, given only the others; the outputs that write the state back
        update it in place (no copy in or out) and come back as None, the others as arrays (float outputs as
        computed, integer ones as their dtype)."""
        outputs, _ = self._executor.run_carried(state, [np.asarray(x) for x in inputs])
        return list(outputs)

    @staticmethod
    def _integer_and_real(out: np.ndarray, scale: float | None, zero_point: int | None,
                          dtype: np.dtype | None) -> RunOutput:
        if (out.dtype == np.float32 and (scale is None or dtype is None)) or out.dtype in (np.int64, np.int32, np.bool_):
            return RunOutput(None, out)
        if out.dtype == np.float32:
            # Exact: |q - zp| <= 255, so the float round trip cannot cross a rounding boundary.
            quantized = (np.rint(out / np.float32(scale)) + zero_point).astype(dtype)
            return RunOutput(quantized, out)
        integers = out.astype(np.int32) - zero_point
        return RunOutput(out.astype(dtype), (np.float32(scale) * integers.astype(np.float32)).astype(np.float32))

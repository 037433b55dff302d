"""The Python side of the C++ executor (``src/runtime``): runs a module's graph in int8/int32 arithmetic.

``isa`` selects ``"scalar"`` or ``"avx2"`` kernels; by default AVX2 when the CPU has
it, unless the environment variable ``QNNPY_ISA=scalar`` (or ``avx2``) says otherwise.
Profiles are described in :mod:`qnnpy.profiles`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from qnnpy import _core
from qnnpy.profiles import check_profile


@dataclass
class RunResult:
    """Output of one run: the integer output, its dequantized values, and (with capture) every tensor.

    A float output computed by float ops (a PT2E float head) has no integer form: ``quantized``
    is None and ``dequantized`` holds the float values."""

    quantized: np.ndarray | None
    dequantized: np.ndarray
    intermediates: dict[str, np.ndarray] = field(default_factory=dict)


class Executor:
    """A graph prepared for the C++ executor: weights packed once for one profile, ISA and thread count.

    ``output_qparams`` are the (scale, zero_point) of each output, or of the integer
    tensor a float output was dequantized from (``QDQModule.output_qparams()``).
    """

    def __init__(self, graph: _core.Graph, output_qparams: Sequence[tuple[float, int]],
                 profile: str = "int32_bias", isa: str | None = None, threads: int = 1):
        self._executor = _core.Executor(graph, check_profile(profile), isa or "", threads)
        self._output_qparams = list(output_qparams)

    @property
    def profile(self) -> str:
        return self._executor.profile

    @property
    def isa(self) -> str:
        return self._executor.isa

    def run(self, *inputs: np.ndarray, capture: bool = False) -> RunResult:
        """Run on float inputs shaped like the module's inputs (checked by the core); returns the first output."""
        arrays = [np.ascontiguousarray(np.asarray(x, dtype=np.float32)) for x in inputs]
        outputs, captured = self._executor.run(arrays, capture)
        out = outputs[0]
        scale, zero_point = self._output_qparams[0]
        if out.dtype == np.float32 and scale is None:
            quantized, dequantized = None, out
        elif out.dtype == np.float32:
            # Exact: |q - zp| <= 255, so the float round trip cannot cross a rounding boundary.
            quantized = (np.rint(out / np.float32(scale)) + zero_point).astype(np.int32)
            dequantized = out
        else:
            quantized = out.astype(np.int32)
            dequantized = (np.float32(scale) * (quantized - zero_point).astype(np.float32)).astype(np.float32)
        return RunResult(quantized, dequantized, dict(captured))

"""The integer runtime: runs a QDQModule in int8/int32 arithmetic under a named profile.

Profiles (formulas in ``src/runtime/profile.h``):

- ``int32_bias``: the canonical meaning of the params (int32 bias added to the exact
  accumulator); equal to PyTorch's qnnpack engine.
- ``fbgemm``: the float bias added in the accumulator domain; equal to PyTorch's
  fbgemm engine when its u8 x s8 kernels do not saturate.

``isa`` selects ``"scalar"`` or ``"avx2"`` kernels; by default AVX2 when the CPU has
it, unless the environment variable ``QNNPY_ISA=scalar`` (or ``avx2``) says otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from qnnpy import _core

if TYPE_CHECKING:
    from qnnpy.module import QDQModule

PROFILES = ("int32_bias", "fbgemm", "fixed_point")


@dataclass
class RunResult:
    """Output of one run: the integer output, its dequantized values, and (with capture) every tensor."""

    quantized: np.ndarray
    dequantized: np.ndarray
    intermediates: dict[str, np.ndarray] = field(default_factory=dict)


class IntegerRuntime:
    """A module prepared for the C++ runtime: weights packed once for one profile, ISA and thread count."""

    def __init__(self, module: "QDQModule", profile: str = "int32_bias", isa: str | None = None, threads: int = 1):
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r}; choose one of {PROFILES}")
        self._executor = _core.Executor(module.graph, profile, isa or "", threads)
        self._output_qparams = module.output_qparams()

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
        if out.dtype == np.float32:
            # Exact: |q - zp| <= 255, so the float round trip cannot cross a rounding boundary.
            quantized = (np.rint(out / np.float32(scale)) + zero_point).astype(np.int32)
            dequantized = out
        else:
            quantized = out.astype(np.int32)
            dequantized = (np.float32(scale) * (quantized - zero_point).astype(np.float32)).astype(np.float32)
        return RunResult(quantized, dequantized, dict(captured))



"""Parsing, building and running a QDQ module with Apache TVM (optional dependency)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def _tvm() -> Any:
    try:
        import tvm
    except ImportError as e:
        raise ImportError("Apache TVM is not installed: pip install 'qnnpy[tvm]'") from e
    return tvm


def parse_script(text: str) -> Any:
    """Parse TVMScript text to a ``tvm.IRModule``."""
    return _tvm().script.from_source(text)


class TVMRunner:
    """A QDQ module compiled by TVM, called with float inputs; the params are bound once."""

    def __init__(self, module: Any, target: str = "llvm"):
        tvm = _tvm()
        from tvm import relax

        executable = tvm.compile(module.to_tvm(), target=target)
        self._device = tvm.cpu()
        self._vm = relax.VirtualMachine(executable, self._device)
        self._params = [tvm.runtime.tensor(np.ascontiguousarray(a), self._device) for a in module.params.values()]

    def __call__(self, *inputs: np.ndarray) -> np.ndarray | list[np.ndarray]:
        tvm = _tvm()
        args = [tvm.runtime.tensor(np.ascontiguousarray(x, dtype=np.float32), self._device) for x in inputs]
        out = self._vm["main"](*args, *self._params)
        if isinstance(out, tvm.runtime.Tensor):
            return out.numpy()
        return [o.numpy() for o in out]


def build(module: Any, target: str = "llvm") -> TVMRunner:
    """Compile a QDQModule with TVM for ``target`` and return a callable runner."""
    return TVMRunner(module, target)



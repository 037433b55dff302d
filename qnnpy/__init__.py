"""qnnpy: quantized PyTorch models to full-integer canonical QDQ modules for Apache TVM Relax.

The public names load on first use (PEP 562), so that ``import qnnpy`` and the command line's
``--help`` do not wait for PyTorch.
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

try:
    from qnnpy import _core  # noqa: F401  (the C++ extension: present only in a built package)
except ImportError as error:
    raise ImportError(
        f"qnnpy's C++ extension qnnpy._core is not importable from {Path(__file__).parent} ({error}). In a clone "
        "of the repository, install it in editable mode (pip install -e .) or run Python outside the clone after "
        "pip install ."
    ) from None

if TYPE_CHECKING:
    from qnnpy.comparison import ComparisonReport, TVMAgreement, compare, compare_tvm
    from qnnpy.convert.converter import from_torch
    from qnnpy.convert.symbolic_dim import DynamicDim
    from qnnpy.errors import ConversionError, UnsupportedOpsError
    from qnnpy.executor import RunResult
    from qnnpy.module import QDQModule

    load = QDQModule.load

# Public name -> the module that defines it.
_HOMES = {
    "from_torch": "qnnpy.convert.converter",
    "DynamicDim": "qnnpy.convert.symbolic_dim",
    "compare": "qnnpy.comparison",
    "ComparisonReport": "qnnpy.comparison",
    "compare_tvm": "qnnpy.comparison",
    "TVMAgreement": "qnnpy.comparison",
    "QDQModule": "qnnpy.module",
    "RunResult": "qnnpy.executor",
    "ConversionError": "qnnpy.errors",
    "UnsupportedOpsError": "qnnpy.errors",
}

__all__ = ["from_torch", "DynamicDim", "load", "compare", "ComparisonReport", "compare_tvm", "TVMAgreement", "QDQModule",
           "RunResult", "ConversionError", "UnsupportedOpsError"]


def __getattr__(name: str) -> Any:
    if name == "load":
        value: Any = importlib.import_module("qnnpy.module").QDQModule.load
    elif name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name]), name)
    else:
        raise AttributeError(f"module 'qnnpy' has no attribute {name!r}")
    globals()[name] = value  # once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

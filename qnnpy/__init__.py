"""qnnpy: quantized PyTorch models to full-integer canonical QDQ modules for Apache TVM Relax."""
from __future__ import annotations

from qnnpy.compare import ComparisonReport, TVMAgreement, compare, compare_tvm
from qnnpy.convert.converter import from_torch
from qnnpy.errors import ConversionError, UnsupportedOpsError
from qnnpy.executor import RunResult
from qnnpy.module import QDQModule

load = QDQModule.load

__all__ = ["from_torch", "load", "compare", "ComparisonReport", "compare_tvm", "TVMAgreement", "QDQModule",
           "RunResult", "ConversionError", "UnsupportedOpsError"]
__version__ = "0.1.0"

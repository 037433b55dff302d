"""Import of the optional Apache TVM dependency with a clear error."""
from __future__ import annotations

from typing import Any


def tvm_module() -> Any:
    """The ``tvm`` package, or an ImportError saying how to install it."""
    try:
        import tvm
    except ImportError as e:
        raise ImportError("Apache TVM is not installed: pip install 'qnnpy[tvm]'") from e
    return tvm


def parse_script(text: str) -> Any:
    """Parse TVMScript text to a ``tvm.IRModule``."""
    return tvm_module().script.from_source(text)

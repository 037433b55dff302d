"""Errors raised by qnnpy's converters and file readers."""
from __future__ import annotations


class ConversionError(ValueError):
    """A model, op or value that qnnpy cannot convert; the message names where."""


class UnsupportedOpsError(ConversionError):
    """One or more ops have no converter. ``ops`` lists ``(path, op_name)`` of each."""

    def __init__(self, ops: list[tuple[str, str]]):
        self.ops = ops
        lines = "\n".join(f"  - {path}: {name}" for path, name in ops)
        super().__init__(f"{len(ops)} unsupported op(s) in the model, none converted:\n{lines}")


class InputFileError(Exception):
    """A file that is missing, unreadable or does not hold what is needed."""

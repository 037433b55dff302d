"""Errors raised by qnnpy's converters and file readers."""
from __future__ import annotations


class ConversionError(ValueError):
    """A model, op or value that qnnpy cannot convert; the message names where."""


class UnsupportedOpsError(ConversionError):
    """Ops qnnpy cannot convert, every one of them at once. ``ops`` lists ``(path, what)`` of each: its module
    path in the model, the op and why."""

    def __init__(self, ops: list[tuple[str, str]]):
        self.ops = ops
        lines = "\n".join(f"  - {what}" if what.startswith(path) else f"  - {path}: {what}" for path, what in ops)
        super().__init__(f"{len(ops)} unsupported op(s) in the model, none converted:\n{lines}")


class InputFileError(Exception):
    """A file that is missing, unreadable or does not hold what is needed."""

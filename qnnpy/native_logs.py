"""Lines that native code writes straight to the process's stderr, dropped unless asked for.

TVM's Relax VM logs, at WARNING level and with no switch to turn it off, one line per memory scope
when an executable is saved ("Scope Saving: ...", dozens for one library) and loaded ("Scope
Loaded: ..."); PyTorch's C++ code prints its warnings ("[W... Quantizer.cpp:111] Warning: ... are
deprecated") where no Python warning filter reaches them. Neither says anything a user of the
command line can act on.
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
from typing import Iterator

NOISE = re.compile(rb"Warning: Scope (Saving|Loaded):|^\[W\d{4} [\d:.]+ [^\]]+\] Warning: ")


def _copy_lines(source: int, target: int) -> None:
    """Copy the lines read from ``source`` to ``target`` as they come, but for the noise."""
    with os.fdopen(source, "rb") as lines:
        for line in lines:
            if not NOISE.search(line):
                os.write(target, line)


@contextlib.contextmanager
def without_native_noise(keep: bool = False) -> Iterator[None]:
    """Inside the block, what is written to file descriptor 2 passes through a filter that drops TVM's
    scope lines and PyTorch's C++ warnings (``keep``: no filter)."""
    if keep:
        yield
        return
    sys.stderr.flush()
    original = os.dup(2)
    read_end, write_end = os.pipe()
    copier = threading.Thread(target=_copy_lines, args=(read_end, original), daemon=True)
    copier.start()
    os.dup2(write_end, 2)
    os.close(write_end)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(original, 2)  # closes the pipe's last write end: the copier reads to its end
        copier.join()
        os.close(original)

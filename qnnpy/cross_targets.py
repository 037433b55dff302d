"""The CPU architectures qnnpy writes deploy folders for (``qnnpy build --target TRIPLE``), and what each needs.

Kept free of TVM imports: the command line reads it before TVM is loaded.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CrossTarget:
    triple: str
    compiler: str  # the cross C++ compiler (Debian/Ubuntu package g++-<triple>)
    wheel_platforms: tuple[str, ...]  # pip's platform tags of the TVM wheels for it, newest first
    elf_machine: int  # e_machine of its shared libraries


CROSS_TARGETS = {t.triple: t for t in [
    CrossTarget("aarch64-linux-gnu", "aarch64-linux-gnu-g++", ("manylinux_2_28_aarch64", "manylinux2014_aarch64"), 183),
]}


def cross_target_named(triple: str) -> CrossTarget:
    """The cross target ``triple``; a ValueError listing the known ones otherwise."""
    if triple not in CROSS_TARGETS:
        raise ValueError(f"no deploy folders for target {triple!r}; supported: {', '.join(CROSS_TARGETS)}")
    return CROSS_TARGETS[triple]

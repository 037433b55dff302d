"""Targets for tvm.compile: strings with options, dicts and tvm.target.Target.

TVM 0.27 rejects option strings such as ``"llvm -mcpu=znver4"``: it wants the dict
form ``{"kind": "llvm", "mcpu": "znver4"}``. ``to_target`` converts. ``"host"`` is
LLVM for the CPU this process runs on (plain ``"llvm"`` is a generic x86-64 without
AVX2 or VNNI, which the integer form's schedules need to be fast).
"""
from __future__ import annotations

from typing import Any

from qnnpy.optional_tvm import tvm_module


# Options TVM types as lists of strings, even with one element ("-mattr=-fma").
_LIST_OPTIONS = ("mattr", "keys", "libs", "cl-opt")


def _option_value(key: str, text: str) -> Any:
    if "," in text or key in _LIST_OPTIONS:
        return text.split(",")
    return int(text) if text.lstrip("-").isdigit() else text


def target_dict(text: str) -> dict[str, Any]:
    """``"llvm -mcpu=znver4 -mattr=+avx2,+fma -opt-level=3"`` as TVM's dict form."""
    words = text.split()
    if not words:
        raise ValueError("empty target string")
    spec: dict[str, Any] = {"kind": words[0]}
    for word in words[1:]:
        if not word.startswith("-"):
            raise ValueError(f"target {text!r}: option {word!r} does not start with '-'")
        key, sep, value = word.lstrip("-").partition("=")
        spec[key] = _option_value(key, value) if sep else True
    return spec


def host_cpu() -> str:
    """LLVM's name of this CPU (``"znver4"``, ``"sapphirerapids"``)."""
    tvm_module()
    from tvm.target import codegen

    return str(codegen.llvm_get_system_cpu())


def to_target(target: "str | dict[str, Any] | Any") -> Any:
    """A ``tvm.target.Target`` from a target string (options allowed; ``"host"`` is
    ``llvm -mcpu=<this CPU>``), a dict or a Target."""
    tvm = tvm_module()
    if isinstance(target, tvm.target.Target):
        return target
    if target == "host":
        return tvm.target.Target({"kind": "llvm", "mcpu": host_cpu()})
    if isinstance(target, str):
        return tvm.target.Target(target_dict(target))
    if isinstance(target, dict):
        return tvm.target.Target(target)
    raise TypeError(f"target must be a string, a dict or a tvm.target.Target, not {type(target).__name__}")

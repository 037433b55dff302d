"""The integer runtime's profiles, the PyTorch quantized engine each one equals, and the default profile.

Formulas in ``src/runtime/profile.h``:

- ``fbgemm``: the float bias added in the accumulator domain; equal to PyTorch's
  fbgemm engine when its u8 x s8 kernels do not saturate, and to its x86 engine on CPUs without
  AVX-512 VNNI (where x86 runs fbgemm's kernels only).
- ``qnnpack``: PyTorch's qnnpack engine layer for layer: int32_bias, plus QNNPACK's own
  average pooling and mean (uint8 inputs; avg_pool2d without ceil_mode), which ignore
  count_include_pad / divisor_override and requantize with fl(s_in / fl(s_out * window)),
  its clamp's channels_last layout, and its max pooling (without ceil_mode), whose window taps
  outside the image read the nearest edge pixel (with dilation, not always a pixel of the window).
- ``int32_bias``: the canonical meaning of the params (int32 bias added to the exact
  accumulator); equal to PyTorch's qnnpack engine except in the ops of QNNPACK's own kernels (above).
- ``fixed_point``: int32_bias with the requantization of integer-only hardware (TFLite /
  gemmlowp: a Q31 multiplier and a shift); no PyTorch engine computes it.
- ``onednn``: PyTorch's onednn engine on a CPU with AVX-512 VNNI and without AMX: conv, transposed
  conv and linear in oneDNN's order (input scale, weight scale, float bias, reciprocal of the output
  scale, zero point, each a float32 step), every other op as fbgemm.
- ``onednn_amx``: the same engine on a CPU with AMX-INT8, whose tile kernels multiply by the product of
  the input and weight scales at once (depthwise convs as ``onednn``).
- ``x86`` / ``x86_amx``: PyTorch's x86 engine on a CPU with AVX-512 VNNI, without / with AMX: the convs
  ATen's ``should_use_onednn_quant`` sends to oneDNN (symmetric weights, groups <= 100) under
  ``onednn`` / ``onednn_amx``, the other convs and every linear under ``fbgemm``.

The default profile, wherever a profile is optional (``QDQModule.run``, ``tvm_bridge.build``, the
command line), is the one that reproduces the engine PyTorch runs quantized models with in this
process, ``torch.backends.quantized.engine``, on this CPU: :func:`default_profile`.
"""
from __future__ import annotations

import functools
import os
import sys

PROFILES = ("int32_bias", "fbgemm", "fixed_point", "qnnpack", "onednn", "onednn_amx", "x86", "x86_amx")
# The profiles that requantize conv and linear layers in oneDNN's order (the x86 ones layer by layer).
ONEDNN_PROFILES = ("onednn", "onednn_amx", "x86", "x86_amx")
# The profiles a comparison shows unless told otherwise, with the default profile (the engine's, on this CPU):
# the params' canonical meaning, PyTorch's fbgemm and qnnpack engines, integer-only hardware.
SHOWN_PROFILES = ("int32_bias", "fbgemm", "fixed_point", "qnnpack")
# The engine each profile is compared with by default.
ENGINE_FOR_PROFILE = {"fbgemm": "fbgemm", "qnnpack": "qnnpack", "int32_bias": "qnnpack", "onednn": "onednn",
                      "onednn_amx": "onednn", "x86": "x86", "x86_amx": "x86"}
# The PyTorch engines a profile reproduces (which one, on this CPU: profile_for_engine).
ENGINES = ("fbgemm", "x86", "onednn", "qnnpack")
# Where PyTorch's engine has no profile (the engine "none"): the params' canonical meaning.
FALLBACK_PROFILE = "int32_bias"


@functools.lru_cache(maxsize=None)
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags as Linux lists them (empty elsewhere: PyTorch sends no conv to oneDNN
    under x86 off Linux)."""
    if not sys.platform.startswith("linux"):
        return frozenset()
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def onednn_uses_amx() -> bool:
    """Whether oneDNN runs its AMX kernels here: the CPU has AMX-INT8 and ``ONEDNN_MAX_CPU_ISA`` (or
    ``DNNL_MAX_CPU_ISA``) does not cap it below AMX."""
    cap = (os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA") or "ALL").upper()
    return "amx_int8" in cpu_flags() and (cap in ("ALL", "DEFAULT") or "AMX" in cap)


def profile_for_engine(engine: str) -> str | None:
    """The profile that reproduces PyTorch's quantized ``engine`` on this CPU, None for an engine without one.
    x86 sends convs to oneDNN only on CPUs with AVX-512 VNNI (ATen's ``should_use_onednn_quant``)."""
    if engine in ("fbgemm", "qnnpack"):
        return engine
    amx = onednn_uses_amx()
    if engine == "x86":
        if "avx512_vnni" not in cpu_flags():
            return "fbgemm"
        return "x86_amx" if amx else "x86"
    if engine == "onednn":
        return "onednn_amx" if amx else "onednn"
    return None


def check_profile(profile: str) -> str:
    """``profile`` if it names a profile, else a ``ValueError`` listing the profiles."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {PROFILES}")
    return profile


def current_engine() -> str:
    """The quantized engine PyTorch uses in this process (``torch.backends.quantized.engine``)."""
    import torch  # here, not at import: the command line's --help must not wait for torch

    return str(torch.backends.quantized.engine)


def default_profile() -> str:
    """The profile that computes what PyTorch computes here: the one of ``torch.backends.quantized.engine``
    on this CPU (:func:`profile_for_engine`: fbgemm, qnnpack, x86 / x86_amx on CPUs with AVX-512 VNNI, where
    PyTorch's x86 engine hands convs to oneDNN, fbgemm on others), else ``int32_bias``."""
    return profile_for_engine(current_engine()) or FALLBACK_PROFILE


def shown_profiles() -> tuple[str, ...]:
    """``SHOWN_PROFILES`` and the default profile after them when it is another."""
    default = default_profile()
    return SHOWN_PROFILES if default in SHOWN_PROFILES else (*SHOWN_PROFILES, default)


def resolve_profile(profile: str | None) -> str:
    """``profile`` checked, or :func:`default_profile` when it is None."""
    return default_profile() if profile is None else check_profile(profile)

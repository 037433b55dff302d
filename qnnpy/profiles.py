"""The integer runtime's profiles, the PyTorch quantized engine each one equals, and the default profile.

Formulas in ``src/runtime/profile.h``:

- ``fbgemm``: the float bias added in the accumulator domain; equal to PyTorch's
  fbgemm engine when its u8 x s8 kernels do not saturate, and so to its x86 engine, which runs
  fbgemm's kernels (except the convs it hands to oneDNN, whose rounding differs in rare values).
- ``qnnpack``: PyTorch's qnnpack engine layer for layer: int32_bias, plus QNNPACK's own
  average pooling and mean (uint8 inputs; avg_pool2d without ceil_mode), which ignore
  count_include_pad / divisor_override and requantize with fl(s_in / fl(s_out * window)),
  its clamp's channels_last layout, and its max pooling (without ceil_mode), whose window taps
  outside the image read the nearest edge pixel (with dilation, not always a pixel of the window).
- ``int32_bias``: the canonical meaning of the params (int32 bias added to the exact
  accumulator); equal to PyTorch's qnnpack engine except in the ops of QNNPACK's own kernels (above).
- ``fixed_point``: int32_bias with the requantization of integer-only hardware (TFLite /
  gemmlowp: a Q31 multiplier and a shift); no PyTorch engine computes it.

The default profile, wherever a profile is optional (``QDQModule.run``, ``tvm_bridge.build``, the
command line), is the one that reproduces the engine PyTorch runs quantized models with in this
process, ``torch.backends.quantized.engine``: :func:`default_profile`.
"""
from __future__ import annotations

PROFILES = ("int32_bias", "fbgemm", "fixed_point", "qnnpack")
# The engine each profile is compared with by default.
ENGINE_FOR_PROFILE = {"fbgemm": "fbgemm", "qnnpack": "qnnpack", "int32_bias": "qnnpack"}
# The profile that reproduces each PyTorch engine. x86 (PyTorch's default on x86-64) runs fbgemm's
# kernels, and so does onednn for the ops qnnpy converts, but for the convs both hand to oneDNN.
PROFILE_FOR_ENGINE = {"fbgemm": "fbgemm", "x86": "fbgemm", "onednn": "fbgemm", "qnnpack": "qnnpack"}
# Where PyTorch's engine has no profile (the engine "none"): the params' canonical meaning.
FALLBACK_PROFILE = "int32_bias"


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
    """The profile that computes what PyTorch computes here: the one paired with
    ``torch.backends.quantized.engine`` (``fbgemm`` for the fbgemm, x86 and onednn engines,
    ``qnnpack`` for qnnpack), else ``int32_bias``."""
    return PROFILE_FOR_ENGINE.get(current_engine(), FALLBACK_PROFILE)


def resolve_profile(profile: str | None) -> str:
    """``profile`` checked, or :func:`default_profile` when it is None."""
    return default_profile() if profile is None else check_profile(profile)

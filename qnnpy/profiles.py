"""The integer runtime's profiles and the PyTorch quantized engine each one equals.

Formulas in ``src/runtime/profile.h``:

- ``int32_bias``: the canonical meaning of the params (int32 bias added to the exact
  accumulator); equal to PyTorch's qnnpack engine.
- ``fbgemm``: the float bias added in the accumulator domain; equal to PyTorch's
  fbgemm engine when its u8 x s8 kernels do not saturate.
- ``fixed_point``: int32_bias with the requantization of integer-only hardware (TFLite /
  gemmlowp: a Q31 multiplier and a shift); no PyTorch engine computes it.
"""
from __future__ import annotations

PROFILES = ("int32_bias", "fbgemm", "fixed_point")
ENGINE_FOR_PROFILE = {"fbgemm": "fbgemm", "int32_bias": "qnnpack"}


def check_profile(profile: str) -> str:
    """``profile`` if it names a profile, else a ``ValueError`` listing the profiles."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {PROFILES}")
    return profile

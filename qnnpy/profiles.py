"""The integer runtime's profiles and the PyTorch quantized engine each one equals.

Formulas in ``src/runtime/profile.h``:

- ``int32_bias``: the canonical meaning of the params (int32 bias added to the exact
  accumulator); equal to PyTorch's qnnpack engine except in the ops of QNNPACK's own kernels (below).
- ``fbgemm``: the float bias added in the accumulator domain; equal to PyTorch's
  fbgemm engine when its u8 x s8 kernels do not saturate.
- ``fixed_point``: int32_bias with the requantization of integer-only hardware (TFLite /
  gemmlowp: a Q31 multiplier and a shift); no PyTorch engine computes it.
- ``qnnpack``: PyTorch's qnnpack engine layer for layer: int32_bias, plus QNNPACK's own
  average pooling and mean (uint8 inputs; avg_pool2d without ceil_mode), which ignore
  count_include_pad / divisor_override and requantize with fl(s_in / fl(s_out * window)),
  its clamp's channels_last layout, and its max pooling (without ceil_mode), whose window taps
  outside the image read the nearest edge pixel (with dilation, not always a pixel of the window).
"""
from __future__ import annotations

PROFILES = ("int32_bias", "fbgemm", "fixed_point", "qnnpack")
# The engine each profile is compared with by default.
ENGINE_FOR_PROFILE = {"fbgemm": "fbgemm", "qnnpack": "qnnpack", "int32_bias": "qnnpack"}
# The profile that equals each engine, op for op.
PROFILE_FOR_ENGINE = {"fbgemm": "fbgemm", "qnnpack": "qnnpack"}


def check_profile(profile: str) -> str:
    """``profile`` if it names a profile, else a ``ValueError`` listing the profiles."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {PROFILES}")
    return profile

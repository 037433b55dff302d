"""The arithmetic profiles the lowering reproduces (the runtime's, src/runtime/profile.h)."""
from __future__ import annotations

from qnnpy.runtime import PROFILES


def check_profile(profile: str) -> None:
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {PROFILES}")

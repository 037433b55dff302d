"""The SIMD kernel sets the tests run, each a pytest parameter skipped, with the reason, where this CPU cannot run it."""
from __future__ import annotations

import platform

import pytest

from qnnpy import _core

AVX2 = pytest.param("avx2", marks=pytest.mark.skipif(not _core.cpu_has_avx2(), reason="this CPU has no AVX2"))
# Without AVX-VNNI the avxvnni set runs vpdpbusd in its AVX-512 (EVEX) encoding; a build whose assembler does
# not know AVX-VNNI has no avxvnni set. Where both allow it the set must run (a failed self-check fails the tests).
CPU_RUNS_AVXVNNI = _core.cpu_has_avx_vnni() or _core.cpu_has_avx512_vnni()
AVXVNNI = pytest.param("avxvnni", marks=[
    pytest.mark.skipif(not CPU_RUNS_AVXVNNI, reason="this CPU (or OS) has neither AVX-VNNI nor AVX-512 VNNI"),
    pytest.mark.skipif(not _core.avxvnni_kernels_built,
                       reason="this build has no avxvnni kernels (its assembler does not know AVX-VNNI)")])
AVX512VNNI = pytest.param("avx512vnni", marks=pytest.mark.skipif(not _core.cpu_has_avx512_vnni(),
                                                                 reason="this CPU (or OS) has no AVX-512 VNNI"))
# The amx set runs where the CPU has AMX-INT8 and Linux grants the tile data (the reason says which is missing);
# its GEMM driver on the software model of the tiles (amx_model) runs on any x86-64 CPU.
AMX = pytest.param("amx", marks=pytest.mark.skipif(not _core.cpu_has_amx(),
                                                   reason=f"the amx set cannot run here: {_core.amx_unavailable_reason()}"))
AMX_MODEL = pytest.param("amx_model", marks=pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64"), reason="the AMX tile model is part of the x86-64 kernels"))

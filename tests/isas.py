"""The SIMD kernel sets the tests run, each a pytest parameter skipped, with the reason, where this CPU cannot run it."""
from __future__ import annotations

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

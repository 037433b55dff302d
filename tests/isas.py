"""The SIMD kernel sets the tests run, each a pytest parameter skipped, with the reason, where this CPU cannot run it."""
from __future__ import annotations

import pytest

from qnnpy import _core

AVX2 = pytest.param("avx2", marks=pytest.mark.skipif(not _core.cpu_has_avx2(), reason="this CPU has no AVX2"))
# Without AVX-VNNI the avxvnni set runs vpdpbusd in its AVX-512 (EVEX) encoding; a build whose assembler does
# not know AVX-VNNI has no avxvnni set.
AVXVNNI = pytest.param("avxvnni", marks=pytest.mark.skipif(
    "avxvnni" not in _core.runnable_simd_isas(),
    reason="this CPU (or OS) has neither AVX-VNNI nor AVX-512 VNNI, or this build has no avxvnni kernels"))
AVX512VNNI = pytest.param("avx512vnni", marks=pytest.mark.skipif(not _core.cpu_has_avx512_vnni(),
                                                                 reason="this CPU (or OS) has no AVX-512 VNNI"))

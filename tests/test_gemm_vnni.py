"""The VNNI GEMMs (vpdpbusd on zmm: avx512vnni; on ymm: avxvnni) and the AMX one (tdpbusd on tiles: amx, and
amx_model on the software model of the tiles) against the scalar twin, bit for bit.

vpdpbusd sums u8 x s8 products straight into int32, so unlike the AVX2 u8s8 GEMM it
needs no clamp of the input bytes: every byte 0-255 against every weight -128..127,
padding with any zero point, k not a multiple of 4, and column/row counts that leave
every partial tile (1-63 columns past a 64-wide tile of avx512vnni, 1-15 past a 16-wide
one of avxvnni, 1-5 rows past a 6-row tile). The reference is the scalar kernel set on
the exact int16 path (QNNPY_GEMM=s16). Each set is skipped where the CPU (or the OS)
cannot run it; avxvnni runs with AVX-VNNI, or in its AVX-512 encoding with AVX-512 VNNI.
"""
from __future__ import annotations

import numpy as np
import pytest

from isas import AMX, AMX_MODEL, AVX512VNNI, AVXVNNI
from qnnpy import _core


@pytest.fixture(params=[AVXVNNI, AVX512VNNI, AMX, AMX_MODEL])
def vnni_isa(request) -> str:
    """The sets whose u8 x s8 GEMM is exact for any byte: vpdpbusd, and the AMX tiles (their instructions
    where the CPU runs them, their software model everywhere)."""
    return request.param


# The amx sets fuse the requantization into the GEMM (KernelSet::gemm_u8s8_runs_requantized).
FUSED = ("amx", "amx_model")


SCALE = 0.05


def _compare(graph: _core.Graph, q: np.ndarray, zp: int, isa: str, monkeypatch, threads: int = 2,
             kernel: str = "gemm_u8s8") -> None:
    """Runs the graph on the bytes q with the VNNI set `isa` and the scalar int16 kernels; both must agree at
    every node.

    ``kernel``: the GEMM the VNNI executor must report: no input sends it to the int16 path, and a conv
    that is not pointwise reads its rows in place (gemm_u8s8_runs; gemm_u8s8_columns for the 3-channel
    7x7 conv, whose kernel rows of 21 bytes it reads as one run of window columns) instead of copying
    im2col rows; the amx sets report it with "_requantized" (fused).
    """
    x = ((q - zp) * SCALE).astype(np.float32)
    vnni = _core.Executor(graph, "int32_bias", isa, threads)
    _, got = vnni.run([x], True)
    assert [k for k in vnni.node_kernels() if k] == [kernel + "_requantized" if isa in FUSED else kernel]
    monkeypatch.setenv("QNNPY_GEMM", "s16")
    _, want = _core.Executor(graph, "int32_bias", "scalar", 1).run([x], True)
    monkeypatch.delenv("QNNPY_GEMM")
    np.testing.assert_array_equal(want["q"], q)  # the bytes are the ones intended
    assert got.keys() == want.keys()
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def _extreme_weights(rng, shape) -> np.ndarray:
    """int8 weights with many -128 and 127 (the largest products) and the rest random."""
    w = rng.integers(-128, 128, shape)
    w[rng.random(shape) < 0.3] = -128
    w[rng.random(shape) < 0.2] = 127
    return w.astype(np.int8)


@pytest.mark.parametrize("cin, cout, k, stride, pad, h, w", [
    (3, 64, 7, 2, 3, 17, 19),    # conv1-like: k = 147, not a multiple of 4
    (64, 64, 3, 1, 1, 7, 9),     # a full 64-wide tile, 63 rows
    (32, 200, 3, 2, 1, 9, 8),    # 3 full blocks + 8 columns (200 = 3 x 64 + 8)
    (17, 49, 1, 1, 0, 5, 5),     # 1x1, k = 17, 49 columns (3 blocks + 1)
    (8, 24, 3, 1, 1, 4, 3),      # 24 columns (1 block + 8), 12 rows
])
@pytest.mark.parametrize("input_zp", [0, 255])
def test_conv_vnni_equals_scalar_on_any_byte(cin, cout, k, stride, pad, h, w, input_zp, vnni_isa, monkeypatch):
    rng = np.random.default_rng(cin * 1000 + cout + input_zp)
    g = _core.Graph()
    x = g.add_node("quantize", [g.add_input("x", [2, cin, h, w])], "q", "q", "uint8", SCALE, input_zp)
    config = np.array([2, stride, stride, pad, pad, 1, 1, 0, 0, 1, 0], np.int64)
    y = g.add_conv2d(x, "conv", "conv", 3, config, _extreme_weights(rng, (cout, cin, k, k)),
                     rng.uniform(1e-4, 1e-3, cout), np.zeros(cout, np.int64), 0,
                     rng.standard_normal(cout).astype(np.float32), False, "uint8", 0.5, 128)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    q = rng.integers(0, 256, (2, cin, h, w))
    q[..., 0, :] = 255  # a full row of the largest byte
    pointwise = k == 1 and stride == 1 and pad == 0
    in_place = "gemm_u8s8_columns" if cin == 3 else "gemm_u8s8_runs"
    _compare(g, q, input_zp, vnni_isa, monkeypatch, kernel="gemm_u8s8" if pointwise else in_place)


@pytest.mark.parametrize("rows, k, n", [(1, 512, 1000), (5, 4, 1), (13, 37, 63), (6, 3, 65), (7, 64, 128)])
@pytest.mark.parametrize("threads", [1, 2])
def test_linear_vnni_equals_scalar_on_any_byte(rows, k, n, threads, vnni_isa, monkeypatch):
    rng = np.random.default_rng(rows * 7919 + k * 31 + n)
    g = _core.Graph()
    x = g.add_node("quantize", [g.add_input("x", [rows, k])], "q", "q", "uint8", SCALE, 77)
    zp = rng.integers(-3, 4, n)
    w = rng.integers(-124, 125, (n, k)).astype(np.int8)  # w - zw stays within int8
    y = g.add_linear(x, "fc", "fc", w, rng.uniform(1e-4, 1e-3, n), zp, 0, rng.standard_normal(n).astype(np.float32),
                     False, "uint8", 0.3, 100)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    _compare(g, rng.integers(0, 256, (rows, k)), 77, vnni_isa, monkeypatch, threads)


@pytest.mark.parametrize("cin, k, dilation, batch, h, w", [
    (17, 3, (1, 1), 2, 9, 11),   # kernel rows of 51 bytes, read as runs of 52 against zero weights
    (5, 3, (2, 1), 3, 12, 7),    # dilation along y only: runs 2 padded rows apart
    (8, 5, (1, 1), 9, 12, 10),   # 864 output rows, 96 per image: GEMM chunks of 192 start inside images
])
@pytest.mark.parametrize("threads", [1, 2])
def test_conv_rows_in_place_equal_scalar(cin, k, dilation, batch, h, w, threads, vnni_isa, monkeypatch):
    """The implicit-GEMM conv (gemm_u8s8_runs) where its window arithmetic has edge cases."""
    rng = np.random.default_rng(cin * 100 + k * 10 + batch)
    g = _core.Graph()
    x = g.add_node("quantize", [g.add_input("x", [batch, cin, h, w])], "q", "q", "uint8", SCALE, 201)
    config = np.array([2, 1, 1, 2, 1, *dilation, 0, 0, 1, 0], np.int64)
    cout = 20
    y = g.add_conv2d(x, "conv", "conv", 3, config, _extreme_weights(rng, (cout, cin, k, k)),
                     rng.uniform(1e-4, 1e-3, cout), np.zeros(cout, np.int64), 0,
                     rng.standard_normal(cout).astype(np.float32), False, "uint8", 0.5, 128)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    _compare(g, rng.integers(0, 256, (batch, cin, h, w)), 201, vnni_isa, monkeypatch, threads,
             kernel="gemm_u8s8_runs")


def test_the_cpu_and_build_that_allow_the_avxvnni_set_run_it():
    """Where the CPU has AVX-VNNI or AVX-512 VNNI and the build has the kernels, the set is offered: a failed
    self-check (dispatch.cpp) would otherwise only skip the avxvnni tests."""
    if not (_core.cpu_has_avx_vnni() or _core.cpu_has_avx512_vnni()):
        pytest.skip("this CPU (or OS) has neither AVX-VNNI nor AVX-512 VNNI")
    if not _core.avxvnni_kernels_built:
        pytest.skip("this build has no avxvnni kernels (its assembler does not know AVX-VNNI)")
    assert "avxvnni" in _core.runnable_simd_isas()

"""The uint8 x int8 GEMM path (vpmaddubsw) against the exact int16 path, bit for bit.

Each graph runs four ways: scalar and AVX2 kernels, each with the u8s8 path allowed
and with QNNPY_GEMM=s16 (int16 path only). All four must agree at every node, and
the scalar set must report the path the input calls for (the AVX2 set the same, or
integer Winograd for 3x3 stride-1 convs): u8s8 when the bytes are
within the layer's bound or only a few exceed it (the excess is added back exactly),
int16 when many bytes exceed it, when padding would place a zero point above the
bound in the im2col rows, when w - zw does not fit in int8, and for int8 inputs.
"""
from __future__ import annotations

import numpy as np
import pytest

from qnnpy import _core

SCALE = 0.05


def _run(graph: _core.Graph, x: np.ndarray, monkeypatch, winograd: bool = False) -> tuple[dict, list[str]]:
    """Every node of the four runs against the scalar int16 one; returns the nodes and the scalar set's kernels.

    The AVX2 set takes the same path, except that with ``winograd`` (a 3x3 stride-1 conv of one group
    over an even number of channels) it runs integer Winograd instead.
    """
    results, kernels = {}, {}
    for gemm in ("auto", "s16"):
        if gemm == "s16":
            monkeypatch.setenv("QNNPY_GEMM", "s16")
        else:
            monkeypatch.delenv("QNNPY_GEMM", raising=False)
        for isa in ("scalar", "avx2"):
            ex = _core.Executor(graph, "int32_bias", isa, 2 if isa == "avx2" else 1)
            _, captured = ex.run([x], True)
            results[(gemm, isa)] = captured
            if gemm == "auto":
                kernels[isa] = [k for k in ex.node_kernels() if k]
            if gemm == "s16":
                assert all(k in ("", "gemm_s16", "winograd" if winograd else "gemm_s16") for k in ex.node_kernels())
    monkeypatch.delenv("QNNPY_GEMM", raising=False)
    reference = results[("s16", "scalar")]
    for key, captured in results.items():
        assert captured.keys() == reference.keys()
        for name in reference:
            np.testing.assert_array_equal(captured[name], reference[name], err_msg=f"{name} {key}")
    assert kernels["avx2"] == (["winograd"] if winograd else kernels["scalar"])
    return reference, kernels["scalar"]


def _bytes(rng, shape, mode: str) -> np.ndarray:
    """Quantized input bytes: all <= 127, a few above (sparse), or half above (dense)."""
    q = rng.integers(0, 128, shape)
    if mode == "sparse":
        flat = q.reshape(-1)
        idx = rng.choice(flat.size, max(1, flat.size // 600), replace=False)
        flat[idx] = rng.integers(128, 256, idx.size)
    elif mode == "dense":
        q = rng.integers(0, 256, shape)
    return q


def _input(q: np.ndarray, zp: int) -> np.ndarray:
    return ((q - zp) * SCALE).astype(np.float32)


def _conv(g, x, rng, cin, cout, k, stride, pad, dil, groups, weight_zp=0, weight_range=(-128, 128)):
    w = rng.integers(*weight_range, (cout, cin // groups, k[0], k[1]), dtype=np.int8)
    config = np.array([2, stride, stride, pad, pad, dil, dil, 0, 0, groups, 0], np.int64)
    return g.add_conv2d(x, "conv", "conv", 3, config, w, rng.uniform(1e-3, 2e-2, cout), np.full(cout, weight_zp), 0,
                        rng.standard_normal(cout).astype(np.float32), True, "uint8", 0.3, 5)


CASES = [
    # cin, cout, kernel, stride, pad, dilation, groups, h, w
    (3, 21, (7, 7), 2, 3, 1, 1, 19, 23),
    (3, 64, (7, 7), 2, 3, 1, 1, 21, 26),  # window columns: one run of 148 bytes for 7 runs of 24
    (1, 96, (5, 3), 1, 2, 1, 1, 30, 29),  # window columns of 1 channel: 15 bytes for 5 runs of 4
    (17, 33, (3, 3), 1, 1, 1, 1, 9, 11),
    (64, 40, (3, 3), 2, 1, 1, 1, 15, 14),
    (16, 16, (1, 1), 1, 0, 1, 1, 7, 5),
    (12, 9, (3, 3), 2, 2, 2, 3, 13, 10),
    (8, 40, (1, 3), 1, 0, 1, 2, 6, 17),
    (18, 24, (3, 3), 1, 1, 1, 1, 11, 13),  # integer Winograd on AVX2, odd output sizes
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"c{c[0]}-{c[1]}_k{c[2][0]}x{c[2][1]}_s{c[3]}_p{c[4]}_g{c[6]}")
@pytest.mark.parametrize("input_zp", [0, 127, 255])
@pytest.mark.parametrize("mode", ["low", "sparse", "dense"])
def test_conv_u8s8_equals_int16(case, input_zp, mode, monkeypatch):
    cin, cout, k, stride, pad, dil, groups, h, w = case
    rng = np.random.default_rng(abs(hash((case, input_zp, mode))) % 2**32)
    g = _core.Graph()
    x = g.add_node("quantize", [g.add_input("x", [2, cin, h, w])], "q", "q", "uint8", SCALE, input_zp)
    y = _conv(g, x, rng, cin, cout, k, stride, pad, dil, groups)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    q = _bytes(rng, (2, cin, h, w), mode)
    winograd = k == (3, 3) and stride == 1 and dil == 1 and groups == 1 and cin % 2 == 0
    captured, kernels = _run(g, _input(q, input_zp), monkeypatch, winograd)
    # A conv of one group, dilation 1 along x and not pointwise (1x1, stride 1, no padding) reads its
    # rows in place in the padded input (kernels.h, U8RowRuns) instead of copying im2col rows.
    in_place = groups == 1 and dil == 1 and not (k == (1, 1) and stride == 1 and pad == 0)
    # Where rounding each kernel row's kw * cin bytes up to 4 adds more than 1/8 to k and saves at least
    # 12 multiply-adds per byte copied, the rows in place are window columns (one run per pixel).
    run_len = (k[1] * cin + 3) // 4 * 4
    kq = (k[0] * k[1] * cin + 3) // 4 * 4
    columns = 8 * k[0] * run_len > 9 * kq and cout * (k[0] * run_len - kq) >= 12 * stride * k[0] * cin
    np.testing.assert_array_equal(captured["q"], q)  # the bytes are the ones intended
    # zx = 255 exceeds every bound but 255 (weights with pairs |w1| + |w2| <= 128).
    expect_u8s8 = mode != "dense" and not (pad > 0 and input_zp == 255)
    in_place_name = "gemm_u8s8_columns" if columns else "gemm_u8s8_runs"
    assert kernels == [(in_place_name if in_place else "gemm_u8s8") if expect_u8s8 else "gemm_s16"]


@pytest.mark.parametrize("rows, k, n", [(1, 512, 1000), (13, 37, 21), (7, 1, 3), (20, 64, 16)])
@pytest.mark.parametrize("mode", ["low", "sparse"])
def test_linear_u8s8_with_weight_zero_points(rows, k, n, mode, monkeypatch):
    rng = np.random.default_rng(rows * 1000 + k)
    g = _core.Graph()
    x = g.add_node("quantize", [g.add_input("x", [rows, k])], "q", "q", "uint8", SCALE, 77)
    zp = rng.integers(-3, 4, n)
    w = rng.integers(-120, 121, (n, k), dtype=np.int8)  # w - zw stays within int8
    y = g.add_linear(x, "fc", "fc", w, rng.uniform(1e-3, 1e-2, n), zp, 0, rng.standard_normal(n).astype(np.float32),
                     False, "uint8", 0.2, 100)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    _, kernels = _run(g, _input(_bytes(rng, (rows, k), mode), 77), monkeypatch)
    assert kernels == ["gemm_u8s8"]


def test_int16_path_when_weights_minus_zero_point_leave_int8(monkeypatch):
    rng = np.random.default_rng(3)
    g = _core.Graph()
    x = g.add_node("quantize", [g.add_input("x", [5, 16])], "q", "q", "uint8", SCALE, 0)
    w = np.full((4, 16), -128, np.int8)
    y = g.add_linear(x, "fc", "fc", w, np.full(4, 0.01), np.full(4, 1), 0, np.zeros(4, np.float32), False, "uint8",
                     0.2, 100)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    _, kernels = _run(g, _input(_bytes(rng, (5, 16), "low"), 0), monkeypatch)
    assert kernels == ["gemm_s16"]


def test_int16_path_for_int8_inputs(monkeypatch):
    rng = np.random.default_rng(4)
    g = _core.Graph()
    x = g.add_node("quantize", [g.add_input("x", [1, 8, 6, 6])], "q", "q", "int8", SCALE, 0)
    y = _conv(g, x, rng, 8, 8, (3, 3), 1, 1, 1, 1)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    _, kernels = _run(g, rng.standard_normal((1, 8, 6, 6)).astype(np.float32), monkeypatch, winograd=True)
    assert kernels == ["gemm_s16"]


def test_small_weights_raise_the_bound(monkeypatch):
    """Pairs |w1| + |w2| <= 64 allow bytes up to 32767 // 64 = 511 > 255: zx = 255 with padding stays u8s8."""
    rng = np.random.default_rng(5)
    g = _core.Graph()
    x = g.add_node("quantize", [g.add_input("x", [1, 8, 9, 9])], "q", "q", "uint8", SCALE, 255)
    y = _conv(g, x, rng, 8, 24, (3, 3), 1, 1, 1, 1, weight_range=(-32, 33))
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    _, kernels = _run(g, _input(_bytes(rng, (1, 8, 9, 9), "dense"), 255), monkeypatch)
    assert kernels == ["gemm_u8s8_runs"]


def test_in_place_runs_pair_weights_differently(monkeypatch):
    """A 3-channel 3x3 conv reads runs of 12 bytes for 9 (kernels.h, U8RowRuns), so vpmaddubsw pairs its
    weights (kernel row 1, taps 0 and 1) that im2col's order keeps apart: the input bound must hold for
    both pairings (found by fuzz_graph_file: AVX2 saturated where the scalar set did not)."""
    g = _core.Graph()
    x = g.add_node("quantize", [g.add_input("x", [1, 3, 5, 5])], "q", "q", "uint8", SCALE, 0)
    w = np.zeros((4, 3, 3, 3), np.int8)
    w[:, 0, 1, 0] = w[:, 1, 1, 0] = 127  # k = 9 and 10 of im2col's order: pairs (8, 9), (10, 11); runs: (12, 13)
    config = np.array([2, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0], np.int64)
    y = g.add_conv2d(x, "conv", "conv", 3, config, w, np.full(4, 1e-3), np.zeros(4, np.int64), 0,
                     np.zeros(4, np.float32), False, "uint8", 0.5, 0)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    _, kernels = _run(g, _input(np.full((1, 3, 5, 5), 255), 0), monkeypatch)
    assert kernels == ["gemm_s16"]  # every byte above the bound: the int16 path


def test_window_columns_pair_weights_differently(monkeypatch):
    """Window columns order k as (kx, ky, channel): a 3-channel 7x7 conv pairs channel 2 of kernel row 0
    with channel 0 of kernel row 1 (column 0), which im2col's order and the runs keep apart. The input
    bound must hold for that pairing too: with every byte above it the layer takes the int16 path, and
    with bytes below it the window columns, on both sets alike."""
    w = np.zeros((64, 3, 7, 7), np.int8)
    w[:, 2, 0, 0] = w[:, 0, 1, 0] = 127  # columns' k = 2 and 3; im2col's 2 and 21; the runs' 2 and 24
    config = np.array([2, 2, 2, 3, 3, 1, 1, 0, 0, 1, 0], np.int64)
    for byte, expected in ((255, "gemm_s16"), (100, "gemm_u8s8_columns")):
        g = _core.Graph()
        x = g.add_node("quantize", [g.add_input("x", [1, 3, 16, 16])], "q", "q", "uint8", SCALE, 0)
        y = g.add_conv2d(x, "conv", "conv", 3, config, w, np.full(64, 1e-3), np.zeros(64, np.int64), 0,
                         np.zeros(64, np.float32), False, "uint8", 0.5, 0)
        g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
        _, kernels = _run(g, _input(np.full((1, 3, 16, 16), byte), 0), monkeypatch)
        assert kernels == [expected]


def test_window_columns_dilated_rows_and_batches(monkeypatch):
    """Window columns where the kernel rows are 2 input rows apart, the padding differs along y and x,
    and images follow one another in a batch (tasks of rows that cross an image's end), on 1 and 2
    threads (the AVX2 set runs 2): every byte against the scalar int16 conv."""
    rng = np.random.default_rng(11)
    g = _core.Graph()
    x = g.add_node("quantize", [g.add_input("x", [3, 3, 23, 17])], "q", "q", "uint8", SCALE, 90)
    config = np.array([2, 2, 2, 3, 2, 2, 1, 0, 0, 1, 0], np.int64)  # stride 2, padding (3, 2), dilation (2, 1)
    w = rng.integers(-64, 64, (64, 3, 7, 7)).astype(np.int8)  # pairs within the bound of any byte
    y = g.add_conv2d(x, "conv", "conv", 3, config, w, rng.uniform(1e-3, 2e-2, 64), np.zeros(64, np.int64), 0,
                     rng.standard_normal(64).astype(np.float32), True, "uint8", 0.3, 5)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    _, kernels = _run(g, _input(_bytes(rng, (3, 3, 23, 17), "dense"), 90), monkeypatch)
    assert kernels == ["gemm_u8s8_columns"]


def test_clamp_in_slices_of_two_workers(monkeypatch):
    """An input of 274 KB with a few bytes above the bound: the AVX2 set (2 threads) clamps it in
    slices on two workers, each flagging its own blocks, and the excess is put back where it lies."""
    rng = np.random.default_rng(12)
    g = _core.Graph()
    x = g.add_node("quantize", [g.add_input("x", [1, 64, 64, 67])], "q", "q", "uint8", SCALE, 0)
    y = _conv(g, x, rng, 64, 32, (1, 1), 1, 0, 1, 1)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    _, kernels = _run(g, _input(_bytes(rng, (1, 64, 64, 67), "sparse"), 0), monkeypatch)
    assert kernels == ["gemm_u8s8"]

"""The depthwise row path (runtime/conv_runner.cpp, depthwise_row_range) against PyTorch's fbgemm
engine, tolerance 0. It runs every depthwise conv of the scalar set and the stride-2 ones of the
vector sets: an output row whose window rows lie in the image reads them in place, its pixels whose
window crosses the left or right border read a padded copy of their window, and a row whose window
crosses the top or bottom border reads padded copies of its rows. The geometries put windows against
every border, strided, dilated, and wider than the image."""
from __future__ import annotations

import pytest

import qnnpy
from isas import AVX2, AVX512VNNI, AVXVNNI
from small_models import ConvBlock, quantized

GEOMETRIES = {
    # name: channels, (h, w), kernel, stride (y, x), padding, dilation
    "3x3_stride2": (24, (15, 14), 3, (2, 2), 1, 1),
    "5x5_stride2_dilated": (16, (17, 16), 5, (2, 2), 4, 2),
    "3x3_stride2_1_pad2": (20, (9, 12), 3, (2, 1), 2, 1),
    "7x7_stride2_no_padding": (8, (13, 11), 7, (2, 2), 0, 1),
    "3x3_stride1_channel_tail": (35, (10, 9), 3, (1, 1), 1, 1),
    "window_wider_than_the_image": (8, (3, 2), 3, (2, 2), 1, 1),
}

ISAS = ["scalar", AVX2, AVXVNNI, AVX512VNNI]


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("name", sorted(GEOMETRIES))
def test_depthwise_row_path_matches_fbgemm(name: str, isa: str):
    c, (h, w), kernel, stride, padding, dilation = GEOMETRIES[name]
    body = ConvBlock(c, c, True, kernel_size=kernel, groups=c, stride=stride, padding=padding, dilation=dilation)
    model, x = quantized(body, (c, h, w), True, [["body.conv", "body.relu"]])
    module = qnnpy.from_torch(model, (x,))
    report = qnnpy.compare(model, module, [x], profiles=["fbgemm"], isa=isa)
    assert report.all_identical("fbgemm"), report.table()

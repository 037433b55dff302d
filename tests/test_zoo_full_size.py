"""The eight torchvision quantizable models at full size, 1x3x224x224, calibrated at that size:
every layer bit-identical to PyTorch's fbgemm engine under profile fbgemm and to its qnnpack
engine under profile qnnpack.

Marked slow (whole models at full size: 5 minutes on 2 heavily shared cores); run with
`pytest -m slow tests/test_zoo_full_size.py`; scripts/coverage_table.py runs it for the
README's coverage table.
"""
from __future__ import annotations

import pytest

import qnnpy
from qnnpy import zoo
from qnnpy.testing import engine_copy

MODELS = sorted(zoo.TORCHVISION_MODELS)
SIZE = 224
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", MODELS)
def test_full_size_runtime_bit_exact_under_both_engines(name):
    model = zoo.quantized_torchvision(name, image_size=SIZE, calibration_batches=1, batch_size=2)
    x = zoo.calibration_data(1, 1, (3, SIZE, SIZE), seed=21)[0]
    module = qnnpy.from_torch(model, (x,))
    report = qnnpy.compare(model, module, [x], profiles=["fbgemm"])
    assert report.all_identical("fbgemm"), report.table()
    with engine_copy(model, "qnnpack") as reference:
        report = qnnpy.compare(reference, module, [x], profiles=["qnnpack"])
    assert report.all_identical("qnnpack"), report.table()

"""torchvision's classification models (qnnpy.zoo's list, the float architectures, weights=None)
quantized through PT2E with X86InductorQuantizer: each converts, and each quantized layer of the
runtime, fed PyTorch's inputs, agrees with PyTorch's run of the converted GraphModule on at least
99.9% of its values and within one step under the fbgemm profile (PT2E's float bias); the float ops
within 1e-5 of their range. The README's coverage table reads these as its PT2E column
(scripts/coverage_table.py). Slow: the export, calibration and per-layer comparison of eight models."""
from __future__ import annotations

import pytest

import qnnpy
from qnnpy import _core, zoo
from pt2e_models import inputs, pt2e

MODELS = sorted(zoo.TORCHVISION_MODELS)
SIZE = {"shufflenet_v2_x1_0": 96, "inception_v3": 96}
FLOAT_TOLERANCE = 1e-5


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_pt2e_runtime_per_layer(name):
    shape = (1, 3, SIZE.get(name, 64), SIZE.get(name, 64))
    gm = pt2e(name, "x86", shape=shape)
    xs = inputs(2, shape=shape)
    module = qnnpy.from_torch(gm, (xs[0],))
    report = qnnpy.compare(gm, module, xs, profiles=["fbgemm"], reference_inputs=True)
    layers = report.layers["fbgemm"]
    quantized = [r for r in layers if _core.op_info(r.op)["kind"] != "float"]
    assert len(quantized) >= 5
    for layer in quantized:
        assert layer.fraction >= 0.999 and layer.max_lsb <= 1, layer
    for layer in layers:
        if _core.op_info(layer.op)["kind"] == "float" and not _core.op_info(layer.op)["bit_exact_float_output"]:
            assert layer.max_relative <= FLOAT_TOLERANCE, layer

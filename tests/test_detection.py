"""torchvision's detectors: qnnpy.detection's body (backbone, feature pyramid, dense heads or the RPN head; anchors
as constants) reproduces each detector's own detections through its post-processing, and converts under PT2E."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import torchvision

import qnnpy
from qnnpy import _core
from qnnpy.detection import detector_body

pytest.importorskip("torchao.quantization.pt2e")
from torchao.quantization.pt2e import MinMaxObserver  # noqa: E402
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e  # noqa: E402
from torchao.testing.pt2e._xnnpack_quantizer import XNNPACKQuantizer, get_symmetric_quantization_config  # noqa: E402

# Random weights, 256-pixel images, thresholds at 0 where the defaults would leave no detection of a random net.
MODELS = {
    "ssdlite320_mobilenet_v3_large": {},
    "retinanet_resnet50_fpn": {"min_size": 256, "max_size": 256},
    "fcos_resnet50_fpn": {"min_size": 256, "max_size": 256, "score_thresh": 0.0},
    "fasterrcnn_mobilenet_v3_large_320_fpn": {"min_size": 256, "max_size": 256, "box_score_thresh": 0.0},
    "maskrcnn_resnet50_fpn": {"min_size": 256, "max_size": 256, "box_score_thresh": 0.0},
    "keypointrcnn_resnet50_fpn": {"min_size": 256, "max_size": 256, "box_score_thresh": 0.0, "box_detections_per_img": 10},
}


def _model(name: str) -> tuple[torch.nn.Module, list[torch.Tensor]]:
    torch.manual_seed(0)
    model = getattr(torchvision.models.detection, name)(weights=None, weights_backbone=None, **MODELS[name]).eval()
    images = [torch.rand(3, 240, 256, generator=torch.Generator().manual_seed(1))]
    return model, images


def _body(model: torch.nn.Module, images: list[torch.Tensor]):
    transformed, _ = model.transform(images)
    return detector_body(model, tuple(transformed.tensors.shape[-2:]))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_bodys_detections_are_the_models(name):
    """The body's outputs through DetectorBody.detections give the model's own detections, bit for bit."""
    model, images = _model(name)
    body = _body(model, images)
    x, sizes, originals = body.preprocess(images)
    with torch.no_grad():
        expected = model(images)[0]
        got = body.detections(body(x), sizes, originals)[0]
    assert len(expected["boxes"]) > 0
    for key, value in expected.items():
        assert torch.equal(got[key], value), key


def _minmax_xnnpack() -> XNNPACKQuantizer:
    """The XNNPACK quantizer's symmetric per-channel config with min/max activation observers (its histogram
    observers take minutes to choose 200 ranges)."""
    config = get_symmetric_quantization_config(is_per_channel=True)
    activation = dataclasses.replace(config.input_activation, observer_or_fake_quant_ctr=MinMaxObserver)
    return XNNPACKQuantizer().set_global(dataclasses.replace(config, input_activation=activation,
                                                             output_activation=activation))


# The suite's time: the two-stage body by default, the single-stage one with the slow tests.
@pytest.mark.parametrize("name", [pytest.param("ssdlite320_mobilenet_v3_large", marks=pytest.mark.slow),
                                  "fasterrcnn_mobilenet_v3_large_320_fpn"])
def test_quantized_body_converts_and_agrees_layer_by_layer(name):
    """A single-stage and a two-stage body, batch-norm statistics drawn from noise, quantized by PT2E: every
    quantized layer fed PyTorch's inputs within a step, every float one within float rounding; the converted
    module's outputs go through the model's post-processing."""
    model, images = _model(name)
    body = _body(model, images)
    x, sizes, originals = body.preprocess(images)
    body.train()
    with torch.no_grad():
        for seed in range(3):
            body(torch.randn(2, *x.shape[1:], generator=torch.Generator().manual_seed(seed)))
    body.eval()
    prepared = prepare_pt2e(torch.export.export(body, (x,), strict=True).module(), _minmax_xnnpack())
    prepared(x)
    gm = convert_pt2e(prepared)
    module = qnnpy.from_torch(gm, (x,))
    report = qnnpy.compare(gm, module, [x], profiles=["fbgemm"], reference_inputs=True)
    for layer in report.layers["fbgemm"]:
        if _core.op_info(layer.op)["kind"] == "float":
            assert layer.max_relative <= 1e-5, layer.source
        else:
            assert layer.max_lsb <= 1, layer.source
    outputs = [out.dequantized for out in module.run(x.numpy()).outputs]
    found = body.detections(outputs, sizes, originals)[0]
    boxes = found["boxes"].numpy()
    limit = model.roi_heads.detections_per_img if body.two_stage else model.detections_per_img
    assert 0 < len(boxes) <= limit
    height, width = originals[0]
    assert np.all(boxes >= 0) and np.all(boxes[:, [0, 2]] <= width) and np.all(boxes[:, [1, 3]] <= height)

"""torchvision's segmentation models, whose forward returns a dict ({"out": ..., "aux": ...}), through PT2E into
qnnpy: the module's outputs carry the dict's keys as names, every quantized layer agrees with PyTorch's as in
the classification sweep (tests/model_sweep.py), each output end to end lands within twice as far from
PyTorch's as PyTorch's own paths do (model_sweep.distance_bound: its eager run without oneDNN; its deployment:
torch.compile for X86, ExecuTorch's XNNPACK delegate for XNNPACK), and TVM's kernels form (where qnnpy's TVM
kernel library is built) equals the runtime bit for bit. LR-ASPP (MobileNet-v3 backbone, bilinear upsampling, a sigmoid gate) in
the default run; FCN with its auxiliary head and DeepLab-v3 under both quantizers with ``-m slow``."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torchvision

import model_sweep
import qnnpy
from qnnpy import _core
from pt2e_models import quantizer
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

SIDE = 64
CLASSES = 5


def _inputs(count: int, seed: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(1, 3, SIDE, SIDE, generator=generator) for _ in range(count)]


def _quantized(name: str, kind: str, aux: bool) -> torch.fx.GraphModule:
    torch.manual_seed(0)
    model = getattr(torchvision.models.segmentation, name)(
        weights=None, weights_backbone=None, num_classes=CLASSES, aux_loss=aux or None)
    model.train()
    with torch.no_grad():  # real batch-norm statistics, as in tests/model_sweep.py
        for x in _inputs(3, seed=5):
            model(torch.cat([x, -x]))
    model.eval()
    exported = torch.export.export(model, (_inputs(1, seed=1)[0],), strict=True)
    prepared = prepare_pt2e(exported.module(), quantizer(kind))
    for x in _inputs(4, seed=2):
        prepared(x)
    return convert_pt2e(prepared)


def _check(name: str, kind: str, aux: bool) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gm = _quantized(name, kind, aux)
        xs = _inputs(2, seed=3)
        module = qnnpy.from_torch(gm, (xs[0],))
    keys = ["out", "aux"] if aux else ["out"]
    assert [o["name"] for o in module.output_info] == keys
    report = qnnpy.compare(gm, module, xs, profiles=["fbgemm"], reference_inputs=True)
    quantized = 0
    for layer in report.layers["fbgemm"]:
        if _core.op_info(layer.op)["kind"] == "float":
            assert layer.max_relative <= model_sweep.FLOAT_RELATIVE, layer
        else:
            quantized += 1
            assert layer.fraction >= 0.999 and layer.max_lsb <= 1, layer
    assert quantized >= 5
    with torch.no_grad():
        theirs = [model_sweep.arrays(gm(x)) for x in xs]
    ours = [[o.dequantized for o in module.run(x.numpy(), profile="fbgemm").outputs] for x in xs]
    floor = model_sweep.without_mkldnn(gm, xs)
    compiled: list[list[np.ndarray]] | None = None
    for k, key in enumerate(keys):
        assert ours[0][k].shape == theirs[0][k].shape, key
        distance = model_sweep.max_relative([o[k] for o in ours], [t[k] for t in theirs])
        floor_distance = model_sweep.max_relative([f[k] for f in floor], [t[k] for t in theirs])
        reference_distance = 0.0
        if distance > model_sweep.distance_bound(0.0, floor_distance):  # PyTorch's deployment only where needed
            compiled = model_sweep.pytorch_deployment(gm, xs, kind)[0] if compiled is None else compiled
            if compiled:
                reference_distance = model_sweep.max_relative([c[k] for c in compiled], [t[k] for t in theirs])
        bound = model_sweep.distance_bound(reference_distance, floor_distance)
        assert distance <= bound, (key, distance, floor_distance, reference_distance)
    from qnnpy import tvm_bridge

    if tvm_bridge.default_form() == "kernels":
        runner = tvm_bridge.build(module, form="kernels", profile="fbgemm")
        for x, mine in zip(xs, ours):
            out = runner(x.numpy())
            out = out if isinstance(out, (list, tuple)) else [out]
            assert len(out) == len(mine)
            for a, b in zip(out, mine):
                assert np.array_equal(np.asarray(a), b)


def test_lraspp_dict_output_converts_and_agrees():
    _check("lraspp_mobilenet_v3_large", "x86", aux=False)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["x86", "xnnpack"])
@pytest.mark.parametrize("name, aux", [("fcn_resnet50", True), ("deeplabv3_mobilenet_v3_large", False),
                                       ("deeplabv3_resnet50", True), ("lraspp_mobilenet_v3_large", False)])
def test_segmentation_models(name, aux, kind):
    _check(name, kind, aux)

"""torchvision's tasks beyond classification in the model sweep (scripts/model_sweep.py --tasks): every model of
``torchvision.models.list_models`` in segmentation, video, optical flow and detection, with random weights and the
batch-norm statistics of noise, quantized through PT2E by each quantizer, converted by qnnpy and compared end to
end with PyTorch's run of the quantized graph, against the bound of tests/model_sweep.py (twice the distance of
PyTorch's own eager run with oneDNN off, plus float rounding). A detector is converted as the body
qnnpy.detection makes of it (backbone, feature pyramid and heads; box decoding and NMS stay the user's code).
The inputs are the smallest each model takes (tests/test_video.py, tests/test_optical_flow.py and
tests/test_detection.py measure the same models one by one)."""
from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
import torchvision
from torch import nn

from model_sweep import arrays, distance_bound, max_relative

TASKS = ("segmentation", "video", "optical_flow", "detection")
QUANTIZERS = ("x86", "xnnpack")  # pt2e_models.quantizer's kinds
CALIBRATION = 3
# Video clips: 8 frames of 32 x 32 where the model takes them; S3D's 7 x 7 pool and MViT's positional tables need 16
# frames of 224 x 224, Swin3D's windows 112 x 112.
CLIPS = {"s3d": (1, 3, 16, 224, 224), "mvit_v1_b": (1, 3, 16, 224, 224), "mvit_v2_s": (1, 3, 16, 224, 224),
         "swin3d_t": (1, 3, 8, 112, 112), "swin3d_s": (1, 3, 8, 112, 112), "swin3d_b": (1, 3, 8, 112, 112)}
FLOW_UPDATES = 4
# What a row of the sweep's table does not say, found by looking at the model (qnnpy.compare, layer by layer).
NOTES = {
    "video:s3d:x86": "X86InductorQuantizer annotates no 3-D op and S3D has no linear layer: PT2E leaves it float, "
                     "with nothing quantized to convert.",
    "optical_flow:raft_large:x86": "X86InductorQuantizer fails on the upsampling masks RAFT computes and drops "
                                   "(IndexError in _get_output_nodes_of_partitions) unless qnnpy.pt2e_fixups."
                                   "dead_code_removed runs before prepare_pt2e, as here (docs/convert.md).",
    "video:mc3_18:xnnpack": "fed PyTorch's inputs, every quantized op is identical to PyTorch's and every float op "
                            "within 1.1e-6 of its range; PyTorch's paths run one float conv3d kernel, so the float "
                            "rounding of qnnpy's 3-D convs (2-D convs per depth tap) is the only spread.",
}


def models(task: str) -> list[str]:
    """The models torchvision lists for ``task`` (a module of torchvision.models)."""
    return sorted(torchvision.models.list_models(module=getattr(torchvision.models, task)))


class _LastFlow(nn.Module):
    """RAFT's last flow estimate after FLOW_UPDATES refinements."""

    def __init__(self, raft: nn.Module) -> None:
        super().__init__()
        self.raft = raft

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.raft(a, b, num_flow_updates=FLOW_UPDATES)[-1]


def _inputs(shapes: list[tuple[int, ...]], seed: int) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(seed)
    return tuple(torch.rand(shape, generator=generator) * 2 - 1 for shape in shapes)


def float_model(task: str, name: str) -> tuple[nn.Module, list[tuple[int, ...]]]:
    """The model in eval mode with the batch-norm statistics of noise, and the shapes of its inputs."""
    torch.manual_seed(0)
    build = getattr(getattr(torchvision.models, task), name)
    if task == "segmentation":
        model, shapes = build(weights=None, weights_backbone=None, num_classes=5), [(1, 3, 64, 64)]
    elif task == "video":
        model, shapes = build(weights=None), [CLIPS.get(name, (1, 3, 8, 32, 32))]
    elif task == "optical_flow":
        model, shapes = _LastFlow(build(weights=None)), [(1, 3, 128, 128)] * 2
    else:
        from qnnpy.detection import detector_body

        sizes = {} if name.startswith("ssd") else {"min_size": 256, "max_size": 256}  # SSDs have their own size
        detector = build(weights=None, weights_backbone=None, **sizes).eval()
        images = [torch.rand(3, 240, 256, generator=torch.Generator().manual_seed(1))]
        transformed, _ = detector.transform(images)
        model = detector_body(detector, tuple(transformed.tensors.shape[-2:]))
        shapes = [tuple(model.preprocess(images)[0].shape)]
    model.train()
    with torch.no_grad():
        for seed in range(2):
            model(*(torch.cat([x, -x]) for x in _inputs(shapes, seed)))
    return model.eval(), shapes


def measure(task: str, name: str, kind: str) -> dict[str, Any]:
    """Quantize ``name`` of ``task`` with quantizer ``kind``, convert it and compare it with PyTorch: from_torch's
    seconds, how many quantized ops, the end-to-end distance and PyTorch's own (eager without oneDNN), both relative
    to the output's range, and whether qnnpy's is within the bound."""
    import qnnpy
    from pt2e_models import quantizer
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    from qnnpy.pt2e_fixups import dead_code_removed

    model, shapes = float_model(task, name)
    example = _inputs(shapes, 10)
    try:
        exported = torch.export.export(model, example, strict=True).module()
        dead_code_removed(exported)  # RAFT-large's dropped masks: X86InductorQuantizer fails on them (docs/convert.md)
        prepared = prepare_pt2e(exported, quantizer(kind))
        for seed in range(CALIBRATION):
            prepared(*_inputs(shapes, 20 + seed))
        gm = convert_pt2e(prepared)
    except Exception as e:
        raise RuntimeError(f"in PyTorch's quantization, before qnnpy: {type(e).__name__}: {e}") from e
    start = time.perf_counter()
    module = qnnpy.from_torch(gm, example)
    seconds = time.perf_counter() - start
    xs = [_inputs(shapes, 30 + seed) for seed in range(2)]

    with torch.no_grad():
        theirs = [arrays(gm(*x)) for x in xs]
        with torch.backends.mkldnn.flags(enabled=False):
            floor = [arrays(gm(*x)) for x in xs]
    ours = [[o.dequantized for o in module.run(*(t.numpy() for t in x)).outputs] for x in xs]
    if any(len(o) != len(t) for o, t in zip(ours, theirs)):
        raise ValueError(f"{len(ours[0])} outputs where PyTorch gives {len(theirs[0])}")
    flat = lambda runs: [a for run in runs for a in run]  # noqa: E731
    distance = max_relative(flat(ours), flat(theirs))
    floor_distance = max_relative(flat(floor), flat(theirs))
    reference_distance, reference = 0.0, ""
    if distance > distance_bound(0.0, floor_distance):  # PyTorch's int8 deployment too, as the classification sweep
        reference_distance, reference = _deployment_distance(gm, xs, theirs, kind)
    return {"task": task, "model": name, "quantizer": kind, "seconds": seconds,
            "quantized_ops": sum(qnnpy._core.op_info(n["op"])["kind"] not in ("float", "quantize", "dequantize")
                                 for n in module.nodes()),
            "distance": distance, "floor_distance": floor_distance, "reference_distance": reference_distance,
            "reference": reference, "within_bound": bool(distance <= distance_bound(reference_distance, floor_distance))}


def _deployment_distance(gm: torch.fx.GraphModule, xs: list[tuple[torch.Tensor, ...]], theirs: list[list[np.ndarray]],
                         kind: str) -> tuple[float, str]:
    """How far PyTorch's own deployment of ``gm`` (model_sweep.pytorch_deployment: ExecuTorch's XNNPACK delegate,
    torch.compile) lands from its eager run, and which path ran; (0, why not) where none runs (models of several
    inputs or outputs: that function takes one input and one output)."""
    from model_sweep import pytorch_deployment

    if len(xs[0]) != 1 or len(theirs[0]) != 1:
        return 0.0, "not run: a model of several inputs or outputs"
    try:
        outputs, path = pytorch_deployment(gm, [x[0] for x in xs], kind)
    except Exception as e:  # noqa: BLE001  (the measurement goes on without it, and says why)
        return 0.0, f"not run: {type(e).__name__}: {str(e)[:100]}"
    if not outputs:
        return 0.0, f"not run: {path}"
    return max_relative([o[0] for o in outputs], [t[0] for t in theirs]), path

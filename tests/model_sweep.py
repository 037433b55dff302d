"""torchvision's classification models through PT2E and qnnpy, measured the same way in the tests
(tests/test_model_sweep.py) and the generated coverage table (scripts/model_sweep.py).

Each model: random weights (a fixed seed) with real batch-norm statistics (three training-mode passes before
eval(), or activations collapse to one quantized level and a comparison tests nothing), a small input (64x64,
or the model's minimum), torch.export (strict) -> torchao's prepare_pt2e with X86InductorQuantizer or the
XNNPACK quantizer -> calibration on 4 inputs -> convert_pt2e. Then:

- ``layers``: every quantized layer of qnnpy's runtime (profile fbgemm) fed PyTorch's own inputs, against
  PyTorch's run of the converted model: the smallest fraction identical and the largest difference in steps;
  float layers: the largest difference relative to the tensor's range.
- ``distance``: end to end, the largest |qnnpy - PyTorch| over the inputs, relative to PyTorch's output range;
  ``reference_distance`` the same for PyTorch's own int8 deployment of the converted model: for X86 graphs
  torch.compile (inductor) with freezing, oneDNN's int8 kernels; for XNNPACK graphs ExecuTorch's XNNPACK
  delegate, XNNPACK's int8 kernels (inductor runs XNNPACK graphs only as the float simulation, without
  freezing, where executorch is missing or a graph does not lower; or not at all: a quantized max pool has no
  CPU kernel there, and PyTorch's eager run with oneDNN turned off stands in). ``floor_distance``: the further
  of PyTorch's eager runs with oneDNN turned off and with attention on its math backend instead of the flash
  kernel (the same float ops summed in another order; on DeiT-tiny under XNNPACK the two backends end 11.8% of
  the logits' range apart). ``distance_bound`` is twice the larger of the reference distance and that eager
  floor: a deep random-weight net amplifies one-step and 1-ulp differences, so no path is exact end to end.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torchvision
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

import qnnpy
from qnnpy import _core
from pt2e_models import quantizer
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

CALIBRATION = 4
FLOAT_RELATIVE = 1e-5    # a float layer's largest difference from PyTorch's, relative to the tensor's range
END_TO_END_FACTOR = 2    # see distance_bound
# Models whose float weights exceed 1 GB: more than a 2-core CI machine should export, quantize and compile.
LEFT_OUT = {"vit_h_14": "2.5 GB of float weights", "regnet_y_128gf": "2.6 GB of float weights",
            "vit_l_16": "1.2 GB of float weights", "vit_l_32": "1.2 GB of float weights"}
# The input side where 64 does not fit: ViT and MaxViT take 224 only, Inception-v3 needs at least 75.
SIDE = {"vit_b_16": 224, "vit_b_32": 224, "maxvit_t": 224, "inception_v3": 96}
# One per family: the default test run's subset (the full sweep is marked slow), with the quantizer each takes.
FAMILIES = {"resnet18": "x86", "mobilenet_v3_small": "xnnpack", "efficientnet_b0": "x86", "regnet_y_400mf": "xnnpack",
            "convnext_tiny": "x86", "swin_t": "xnnpack", "densenet121": "x86", "squeezenet1_1": "xnnpack",
            "shufflenet_v2_x0_5": "x86", "mnasnet0_5": "xnnpack", "googlenet": "x86"}


def classification_models() -> list[str]:
    """torchvision's classification models (list_models of torchvision.models) but those left out."""
    return [m for m in torchvision.models.list_models(module=torchvision.models) if m not in LEFT_OUT]


def shape_of(name: str) -> tuple[int, int, int, int]:
    side = SIDE.get(name, 64)
    return (1, 3, side, side)


def inputs(name: str, count: int, seed: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(shape_of(name), generator=generator) for _ in range(count)]


def float_model(name: str) -> nn.Module:
    """torchvision's ``name`` with random weights and the batch-norm statistics of three batches of noise."""
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None)
    if getattr(model, "AuxLogits", None) is not None:
        # Inception-v3's auxiliary head runs in training mode only and needs about 299-pixel inputs; eval (and so
        # the exported graph) never runs it.
        model.AuxLogits = None
    _randomize_zero_weights(model)
    model.train()
    with torch.no_grad():
        for x in inputs(name, 3, seed=5):
            model(torch.cat([x, -x]))
    return model.eval()


def _randomize_zero_weights(model: nn.Module) -> None:
    """torchvision zero-initializes some layers (the ViTs' classification head): their output is then constant and a
    comparison of it tests nothing. Such weights get seeded normal values (std 0.02, the scale of the others)."""
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for layer in model.modules():
            weight = getattr(layer, "weight", None)
            if isinstance(layer, (nn.Linear, nn.Conv2d)) and not weight.any():
                weight.copy_(torch.randn(weight.shape, generator=generator) * 0.02)


@functools.lru_cache(maxsize=2)
def quantized(name: str, kind: str) -> torch.fx.GraphModule:
    """``name`` quantized through PT2E with quantizer ``kind`` ("x86" or "xnnpack")."""
    example = inputs(name, 1, seed=1)[0]
    prepared = prepare_pt2e(torch.export.export(float_model(name), (example,), strict=True).module(), quantizer(kind))
    for x in inputs(name, CALIBRATION, seed=2):
        prepared(x)
    return convert_pt2e(prepared)


@dataclass
class Outcome:
    """What the sweep measured of one model under one quantizer."""

    model: str
    quantizer: str
    seconds: float = 0.0             # from_torch
    quantized_layers: int = 0
    min_identical: float = 1.0       # quantized layers fed PyTorch's inputs
    max_lsb: int = 0
    max_float_relative: float = 0.0  # float layers fed PyTorch's inputs
    top1_equal: bool = True
    distance: float = 0.0            # end to end, relative to the output range
    output_range: float = 0.0        # of PyTorch's outputs: 0 would make every comparison vacuous
    reference_distance: float = 0.0
    reference: str = ""              # PyTorch's deployment path that ran (pytorch_deployment)
    reference_top1_equal: bool | None = None
    floor_distance: float = 0.0      # PyTorch eager with oneDNN off, or with the math attention backend: the further
    kernels_form_equal: bool | None = None
    other_forms_run: bool | None = None  # TVM's integer and qdq forms built and run

    @property
    def distance_bound(self) -> float:
        return distance_bound(self.reference_distance, self.floor_distance)

    @property
    def int8_reference(self) -> bool:
        return computes_in_int8(self.reference)


# PyTorch's paths that run int8 kernels: inductor with freezing on X86 graphs (oneDNN's quantized conv and
# linear) and ExecuTorch's XNNPACK delegate. torch.compile without freezing runs the graph's dequantize -> float
# op -> quantize in float, as eager does: no int8 deployment to measure qnnpy's distance against.
INT8_PATHS = ("inductor", "ExecuTorch XNNPACK")


def computes_in_int8(path: str) -> bool:
    return path in INT8_PATHS


def distance_bound(reference_distance: float, floor_distance: float) -> float:
    """How far from PyTorch's eager output qnnpy's may land end to end: the same order as PyTorch's own paths,
    at most ``END_TO_END_FACTOR`` times the further of them, plus float rounding. Which path lands closest to
    eager varies from input to input (a random-weight net amplifies a one-step difference chaotically):
    DeepLab-v3 ResNet-50 under X86 measured qnnpy 1.38%, torch.compile and eager without oneDNN up to 1.08%."""
    return END_TO_END_FACTOR * max(reference_distance, floor_distance) + FLOAT_RELATIVE


def max_relative(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    """The largest |a - b| over the arrays, relative to the largest |b|; infinite where any value is not finite
    (Python's max would pass over a NaN)."""
    if not all(np.isfinite(x).all() and np.isfinite(y).all() for x, y in zip(a, b)):
        return float("inf")
    scale = max(float(np.abs(y).max()) for y in b)
    return max(float(np.abs(x - y).max()) for x, y in zip(a, b)) / scale if scale else 0.0


def arrays(out: Any) -> list[np.ndarray]:
    """A model's output (a tensor, a dict of them as segmentation models return, a tuple as detector bodies do) as a
    list of arrays, in order."""
    return [t.numpy() for t in torch.utils._pytree.tree_leaves(out)]


def inductor(gm: torch.fx.GraphModule, xs: list[torch.Tensor], kind: str) -> tuple[list[list[np.ndarray]], str]:
    """torch.compile's outputs of ``gm`` for each input (freezing for X86 graphs), and which path ran; no
    outputs where inductor cannot compile the graph."""
    import torch._inductor.config as inductor_config

    for freezing in ([True, False] if kind == "x86" else [False]):
        torch._dynamo.reset()
        with inductor_config.patch(freezing=freezing), torch.no_grad():
            try:
                compiled = torch.compile(gm)
                return [arrays(compiled(x)) for x in xs], "inductor" + ("" if freezing else " (no freezing)")
            except Exception:  # noqa: BLE001  (the next path is tried, and the one that ran is recorded)
                continue
    return [], "eager without oneDNN (inductor cannot compile this graph)"


def executorch_xnnpack(gm: torch.fx.GraphModule, xs: list[torch.Tensor]) -> tuple[list[list[np.ndarray]], str]:
    """The outputs of ``gm`` lowered to ExecuTorch's XNNPACK delegate, XNNPACK's int8 kernels: PyTorch's
    deployment path for graphs of the XNNPACK quantizer; with no outputs, why not (executorch is not
    installed, the graph does not lower)."""
    try:
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        from executorch.exir import to_edge_transform_and_lower
        from executorch.runtime import Runtime
    except ImportError:
        return [], "executorch is not installed"
    try:
        lowered = to_edge_transform_and_lower(torch.export.export(gm, (xs[0],)), partitioner=[XnnpackPartitioner()])
        buffer = lowered.to_executorch().buffer
        program = Runtime.get().load_program(buffer)  # the method reads the program: both stay referenced here
        method = program.load_method("forward")
        outputs = [method.execute([x]) for x in xs]
    except Exception as e:  # noqa: BLE001  (the next path is used, and why is recorded with the one that ran)
        return [], f"{type(e).__name__}: {str(e)[:120]}"
    return [[t.numpy() for t in out] for out in outputs], ""


def pytorch_deployment(gm: torch.fx.GraphModule, xs: list[torch.Tensor], kind: str) -> tuple[list[list[np.ndarray]], str]:
    """PyTorch's own deployment of ``gm`` for each input, and which path ran: ExecuTorch's XNNPACK delegate for
    XNNPACK graphs (where it lowers; else torch.compile, the path named with why ExecuTorch did not run),
    torch.compile (inductor) for X86 graphs. computes_in_int8 says whether the path ran int8 kernels."""
    if kind == "xnnpack":
        outputs, why_not = executorch_xnnpack(gm, xs)
        if outputs:
            return outputs, "ExecuTorch XNNPACK"
        compiled, path = inductor(gm, xs, kind)
        return compiled, f"{path}; ExecuTorch: {why_not}"
    return inductor(gm, xs, kind)


def without_mkldnn(gm: torch.fx.GraphModule, xs: list[torch.Tensor]) -> list[list[np.ndarray]]:
    """PyTorch's eager outputs of ``gm`` for each input with oneDNN turned off."""
    with torch.backends.mkldnn.flags(enabled=False), torch.no_grad():
        return [arrays(gm(x)) for x in xs]


def math_attention(gm: torch.fx.GraphModule, xs: list[torch.Tensor]) -> list[list[np.ndarray]]:
    """PyTorch's eager outputs of ``gm`` for each input with scaled_dot_product_attention on its math backend (the
    default CPU one is the blocked flash kernel: another summation order of the same float ops)."""
    with sdpa_kernel([SDPBackend.MATH]), torch.no_grad():
        return [arrays(gm(x)) for x in xs]


def measure(name: str, kind: str, reference: bool = True, kernels_form: bool = True, other_forms: bool = False) -> Outcome:
    """Convert ``name`` under ``kind`` and measure it (``reference``: the inductor / eager distances;
    ``kernels_form``: TVM's kernels form against the runtime, where qnnpy has its TVM kernel library;
    ``other_forms``: TVM's integer and qdq forms built and run, their outputs finite)."""
    gm = quantized(name, kind)
    xs = inputs(name, 2, seed=3)
    outcome = Outcome(name, kind)
    start = time.perf_counter()
    module = qnnpy.from_torch(gm, (xs[0],))
    outcome.seconds = time.perf_counter() - start
    report = qnnpy.compare(gm, module, xs, profiles=["fbgemm"], reference_inputs=True)
    for layer in report.layers["fbgemm"]:
        if _core.op_info(layer.op)["kind"] == "float":
            outcome.max_float_relative = max(outcome.max_float_relative, layer.max_relative)
        else:
            outcome.quantized_layers += 1
            outcome.min_identical = min(outcome.min_identical, layer.fraction)
            outcome.max_lsb = max(outcome.max_lsb, layer.max_lsb)
    with torch.no_grad():
        theirs = [gm(x).numpy() for x in xs]
    ours = [module.run(x.numpy(), profile="fbgemm").outputs[0].dequantized for x in xs]
    outcome.top1_equal = all(np.array_equal(o.argmax(-1), t.argmax(-1)) for o, t in zip(ours, theirs))
    outcome.distance = max_relative(ours, theirs)
    outcome.output_range = float(min(np.ptp(t) for t in theirs))
    if reference:
        outcome.floor_distance = max(max_relative([o[0] for o in eager(gm, xs)], theirs)
                                     for eager in (without_mkldnn, math_attention))
        compiled, outcome.reference = pytorch_deployment(gm, xs, kind)
        outcome.reference_distance = (max_relative([o[0] for o in compiled], theirs) if compiled
                                      else outcome.floor_distance)
        if compiled:
            outcome.reference_top1_equal = all(np.array_equal(c[0].argmax(-1), t.argmax(-1))
                                               for c, t in zip(compiled, theirs))
    if kernels_form:
        from qnnpy import tvm_bridge

        if tvm_bridge.default_form() == "kernels":
            runner = tvm_bridge.build(module, form="kernels", profile="fbgemm")
            outcome.kernels_form_equal = all(
                np.array_equal(np.asarray(runner(x.numpy())), o) for x, o in zip(xs, ours))
    if other_forms:
        from qnnpy import tvm_bridge

        outcome.other_forms_run = all(
            np.isfinite(np.asarray(tvm_bridge.build(module, form=form, profile="fbgemm")(xs[0].numpy()))).all()
            for form in ("integer", "qdq"))
    return outcome

"""PT2E's quantized mean: an adaptive_avg_pool2d to 1x1 inside a quantized island is PT2E's dequantize ->
aten's float mean -> quantize. The exact mean of an even count of integers is often a tie (x.5 steps),
which that float arithmetic breaks either way by rounding noise; the runtime (nodes with ``float_mean``,
src/runtime/ops/pool_ops.cpp) and the TVM integer lowering (tvm_bridge/lowering/aten_sum.py) reproduce it,
ATen's summation order included, so each agrees with PyTorch bit for bit. The same for adaptive pools to
other sizes (ATen's float adaptive-pool kernel), which TVM's integer form leaves in float."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

import qnnpy
from pt2e_models import ConvPool, quantizer

# Planes of 4, 9, 64, 100, 196 and 576 values: shorter than ATen's 8 lanes, past them, and past the
# cascade's first level (16 groups of 4 vectors).
SIDES = [2, 3, 8, 10, 14, 24]
BATCH, CHANNELS = 8, 128


def _pt2e_pool(side: int, output_size: tuple[int, int] = (1, 1)) -> tuple[torch.fx.GraphModule, torch.Tensor]:
    """The model quantized with the XNNPACK-style config (int8 activations), and a batch of inputs."""
    torch.manual_seed(side)
    x = torch.randn(BATCH, 3, side, side)
    model = ConvPool(CHANNELS, output_size).eval()
    prepared = prepare_pt2e(torch.export.export(model, (x,)).module(), quantizer("xnnpack"))
    prepared(x)
    return convert_pt2e(prepared), x


def _ties(module: qnnpy.QDQModule, x: torch.Tensor) -> int:
    """How many pooled outputs have an exact mean halfway between two steps."""
    pool = next(n for n in module.nodes() if n["op"] == "adaptive_avg_pool2d")
    source = {v["name"]: v for v in module.graph.values()}[pool["inputs"][0]]
    q = module.run(x.numpy(), capture=True).intermediates[pool["inputs"][0]].astype(np.int64)
    doubled = 2 * (q - source["zero_point"]).sum(axis=(2, 3))
    count = q.shape[2] * q.shape[3]
    return int(np.count_nonzero(doubled % (2 * count) == count))


@pytest.mark.parametrize("side", SIDES)
def test_runtime_mean_equals_pt2e_bit_for_bit(side):
    gm, x = _pt2e_pool(side)
    module = qnnpy.from_torch(gm, (x,))
    pool = next(n for n in module.nodes() if n["op"] == "adaptive_avg_pool2d")
    assert pool["ints"]["float_mean"] == [1]
    profiles = ("int32_bias", "fbgemm", "fixed_point", "qnnpack")
    # Fed PyTorch's conv output, the pool agrees under every profile (the conv itself only under fbgemm,
    # PT2E's float bias: the other profiles round the bias to int32 first).
    report = qnnpy.compare(gm, module, [x], profiles=profiles, reference_inputs=True)
    for profile in profiles:
        (layer,) = [r for r in report.layers[profile] if r.op == "adaptive_avg_pool2d"]
        assert layer.fraction == 1.0 and layer.max_lsb == 0, (profile, layer)
    np.testing.assert_array_equal(module.run(x.numpy(), profile="fbgemm").dequantized, gm(x).detach().numpy())
    if side % 2 == 0:
        assert _ties(module, x) > 0  # the ties, where only PyTorch's float arithmetic gives the answer


@pytest.mark.parametrize("side", [3, 14])
def test_tvm_integer_lowering_equals_the_runtime(side):
    from qnnpy import tvm_bridge

    gm, x = _pt2e_pool(side)
    module = qnnpy.from_torch(gm, (x,))
    runner = tvm_bridge.build(module, form="integer", profile="fbgemm")
    np.testing.assert_array_equal(np.asarray(runner(x.numpy())), module.run(x.numpy(), profile="fbgemm").dequantized)


# Windows of 1 and 2 rows (2 -> 7: VGG's pool at small inputs), of 4 overlapping (10 -> 3), of 3 x 3
# overlapping, which ATen divides by 3 twice (9 -> 4).
@pytest.mark.parametrize("side, size", [(2, (7, 7)), (10, (3, 3)), (9, (4, 4))])
def test_adaptive_pools_to_other_sizes_equal_pt2e_bit_for_bit(side, size):
    from qnnpy import tvm_bridge

    gm, x = _pt2e_pool(side, size)
    module = qnnpy.from_torch(gm, (x,))
    pool = next(n for n in module.nodes() if n["op"] == "adaptive_avg_pool2d")
    assert pool["ints"]["float_mean"] == [1]
    report = qnnpy.compare(gm, module, [x], profiles=["fbgemm", "qnnpack"], reference_inputs=True)
    for profile in ("fbgemm", "qnnpack"):
        (layer,) = [r for r in report.layers[profile] if r.op == "adaptive_avg_pool2d"]
        assert layer.fraction == 1.0 and layer.max_lsb == 0, (profile, layer)
    ours = module.run(x.numpy(), profile="fbgemm").dequantized
    with torch.no_grad():
        np.testing.assert_array_equal(ours, gm(x).numpy())
    # TVM's integer form leaves the island in float: TVM's own float pool, within a step of PyTorch's.
    step = {v["name"]: v for v in module.graph.values()}[pool["output"]]["scale"]
    tvm_out = np.asarray(tvm_bridge.build(module, form="integer", profile="fbgemm")(x.numpy()))
    assert np.abs(tvm_out - ours).max() <= step * 1.0001

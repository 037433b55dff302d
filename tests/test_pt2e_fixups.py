"""qnnpy.pt2e_fixups on the graphs PyTorch's quantizers fail on (GPT-2's integer position ids under XNNPACK and BERT's
dropped pooler under X86 also in tests/test_hf_transformers.py). Each test asserts PyTorch's failure without the fix-up, so that it notices when
torchao mends it, and the model converted with it."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

from transformers import LlamaConfig, LlamaModel, RobertaConfig, RobertaModel

import qnnpy
from qnnpy import _core
from qnnpy.pt2e_fixups import additions_of_zero_removed, dead_code_removed, integer_scalars_as_tensors
from pt2e_models import quantizer


class SumFromZero(nn.Module):
    """A sum started at the number 0, as timm's MobileOne blocks (FastViT) start theirs: ``0 + bn(conv(x))``."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.bn, self.head = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.Conv2d(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        total = 0
        total = total + self.bn(self.conv(x))
        return self.head(torch.relu(total)) - 0


def _exported(x: torch.Tensor) -> torch.fx.GraphModule:
    torch.manual_seed(0)
    model = SumFromZero().eval()
    return torch.export.export(model, (x,), strict=True).module()


def test_x86_quantizer_takes_a_sum_from_zero_once_the_zero_is_removed():
    x = torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    with pytest.raises(AssertionError):
        prepare_pt2e(_exported(x), quantizer("x86"))  # _get_input_idx_for_binary_node: the 0 is no graph node
    gm = _exported(x)
    with torch.no_grad():
        before = gm(x)
    assert additions_of_zero_removed(gm) == 2  # the add of 0 and the subtraction of 0
    assert not [n for n in gm.graph.nodes if n.target in (torch.ops.aten.add.Tensor, torch.ops.aten.sub.Tensor)]
    with torch.no_grad():
        assert torch.equal(gm(x), before)
    quantized, module = _x86_quantized_and_converted(gm, x)
    with torch.no_grad():
        want = quantized(x).numpy()
    got = module.run(x.numpy(), profile="fbgemm").outputs[0].dequantized
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def _x86_quantized_and_converted(gm: torch.fx.GraphModule, x: torch.Tensor, layers: int = 2
                                 ) -> tuple[torch.fx.GraphModule, qnnpy.QDQModule]:
    """``gm`` quantized by X86InductorQuantizer (calibrated on noise shaped like ``x``) and converted; at least
    ``layers`` quantized layers, each identical to PyTorch's fed its inputs."""
    prepared = prepare_pt2e(gm, quantizer("x86"))
    for seed in range(4):
        prepared(torch.randn(x.shape, generator=torch.Generator().manual_seed(10 + seed)))
    quantized = convert_pt2e(prepared)
    module = qnnpy.from_torch(quantized, (x,))
    report = qnnpy.compare(quantized, module, [x], profiles=["fbgemm"], reference_inputs=True)
    compared = [r for r in report.layers["fbgemm"] if _core.op_info(r.op)["kind"] != "float"]
    assert len(compared) >= layers and all(r.identical == r.total for r in compared)
    return quantized, module


def test_only_a_number_zero_is_removed():
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    kept = [graph.call_function(torch.ops.aten.add.Tensor, (x, 1)), graph.call_function(torch.ops.aten.sub.Tensor, (0, x)),
            graph.call_function(torch.ops.aten.add.Tensor, (x, x))]
    graph.output(tuple(kept))
    gm = torch.fx.GraphModule({}, graph)
    for node in gm.graph.nodes:
        node.meta["val"] = torch.zeros(2)
    assert additions_of_zero_removed(gm) == 0


class DroppedMasks(nn.Module):
    """RAFT's pattern: a mask computed at every step by a conv -> in-place ReLU -> conv block, only the last one used."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.head = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 4, 1)
        self.mask = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(inplace=True), nn.Conv2d(8, 4, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv(x))
        masks = [self.mask(y) for _ in range(3)]
        return self.head(y) * masks[-1]


def test_x86_quantizer_takes_dropped_in_place_ops_once_the_dead_code_is_removed():
    torch.manual_seed(0)
    model = DroppedMasks().eval()
    x = torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    with pytest.raises(IndexError):  # _get_output_nodes_of_partitions: a conv -> relu_ whose relu_ nothing reads
        prepare_pt2e(torch.export.export(model, (x,), strict=True).module(), quantizer("x86"))
    gm = torch.export.export(model, (x,), strict=True).module()
    with torch.no_grad():
        before = gm(x)
    assert dead_code_removed(gm) == 6  # the two dropped masks: conv, relu_, conv each
    assert sum(n.target == torch.ops.aten.relu_.default for n in gm.graph.nodes) == 1
    with torch.no_grad():
        assert torch.equal(gm(x), before)
    _x86_quantized_and_converted(gm, x, layers=3)


def test_an_in_place_op_on_a_value_read_later_or_an_input_stays():
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    on_input = graph.call_function(torch.ops.aten.relu_.default, (x,))
    y = graph.call_function(torch.ops.aten.neg.default, (x,))
    read_later = graph.call_function(torch.ops.aten.relu_.default, (y,))
    z = graph.call_function(torch.ops.aten.mul.Tensor, (y, 2))
    unread = graph.call_function(torch.ops.aten.relu_.default, (z,))
    graph.output((y,))
    gm = torch.fx.GraphModule({}, graph)
    for node in gm.graph.nodes:
        node.meta["val"] = torch.zeros(2)
    assert dead_code_removed(gm) == 2  # the relu_ of z, then z itself
    kept = [n for n in gm.graph.nodes if n.op == "call_function"]
    assert kept == [on_input, y, read_later] and unread not in kept


_SMALL = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
# Decoders and encoders whose position ids add a number to integers; the error PyTorch stops with under XNNPACK.
POSITION_ID_MODELS = {
    "llama": (lambda: LlamaModel(LlamaConfig(**_SMALL, num_key_value_heads=1, use_cache=False)),
              "tensors used as indices must be long, int, byte or bool tensors"),
    "roberta": (lambda: RobertaModel(RobertaConfig(**_SMALL, max_position_embeddings=64)), "Tensor dtype mismatch"),
}


def _token_ids(seed: int) -> torch.Tensor:
    return torch.randint(3, 100, (1, 12), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("name", sorted(POSITION_ID_MODELS))
def test_xnnpack_quantizer_takes_integer_position_ids_once_their_numbers_are_tensors(name):
    build, failure = POSITION_ID_MODELS[name]
    torch.manual_seed(0)
    model = build().eval()
    x = _token_ids(1)

    def calibrated(fix: bool) -> torch.fx.GraphModule:
        gm = torch.export.export(model, (x,), strict=False).module()
        if fix:
            assert integer_scalars_as_tensors(gm) >= 1
        prepared = prepare_pt2e(gm, quantizer("xnnpack"))
        for seed in range(4):
            prepared(_token_ids(10 + seed))
        return convert_pt2e(prepared)

    with pytest.raises((IndexError, RuntimeError), match=failure):
        calibrated(fix=False)
    quantized = calibrated(fix=True)
    module = qnnpy.from_torch(quantized, (x,))
    report = qnnpy.compare(quantized, module, [x], profiles=["fbgemm"], reference_inputs=True)
    layers = [r for r in report.layers["fbgemm"] if _core.op_info(r.op)["kind"] != "float"]
    assert len(layers) >= 20 and all(r.identical == r.total for r in layers)

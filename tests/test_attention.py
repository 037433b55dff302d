"""float_attention: scaled dot-product attention as one op (convert/attention.py, ops/float_attention.cpp).
Against PyTorch's SDPA with every mask form (none, bool with a row left out entirely, float, causal) and with
grouped-query heads; equal on 1 and 2 threads; the Relax form (TVM's qdq build) equal to the runtime to float
rounding; a Hugging Face decoder's repeated key / value heads read in place (no copy left in the graph)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from qnnpy import _core
from qnnpy.module import QDQModule

N, HEADS, KV_HEADS, ROWS, POSITIONS, E, EV = 2, 8, 2, 5, 37, 24, 16


def _tensors(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((N, HEADS, ROWS, E), np.float32), rng.standard_normal((N, KV_HEADS, POSITIONS, E), np.float32),
            rng.standard_normal((N, KV_HEADS, POSITIONS, EV), np.float32))


def _masks() -> dict[str, np.ndarray | None]:
    rng = np.random.default_rng(7)
    keep = rng.random((1, 1, ROWS, POSITIONS)) < 0.6
    keep[..., 2, :] = False  # a row left out entirely: zeros, as PyTorch's
    additive = np.where(rng.random((N, 1, 1, POSITIONS)) < 0.3, -np.inf, rng.standard_normal((N, 1, 1, POSITIONS)))
    return {"none": None, "bool": keep, "float": additive.astype(np.float32), "causal": None}


def _module(mask: np.ndarray | None, causal: bool, scale: float) -> QDQModule:
    g = _core.Graph()
    ids = [g.add_input(name, list(shape)) for name, shape in
           (("q", (N, HEADS, ROWS, E)), ("k", (N, KV_HEADS, POSITIONS, E)), ("v", (N, KV_HEADS, POSITIONS, EV)))]
    if mask is not None:
        ids.append(g.add_input("mask", list(mask.shape), "bool" if mask.dtype == bool else "float32"))
    g.mark_output(g.add_node("float_attention", ids, "attention", "y", "float32", ints={"causal": [int(causal)]},
                             floats={"scale": scale}))
    return QDQModule(g)


@pytest.mark.parametrize("form", ["none", "bool", "float", "causal"])
def test_equals_pytorchs_sdpa(form):
    q, k, v = _tensors(1)
    mask = _masks()[form]
    scale = 0.3
    module = _module(mask, form == "causal", scale)
    inputs = (q, k, v) if mask is None else (q, k, v, mask)
    ours = module.run(*inputs).dequantized
    expected = F.scaled_dot_product_attention(
        torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v),
        attn_mask=None if mask is None else torch.from_numpy(mask), is_causal=form == "causal", scale=scale,
        enable_gqa=True).numpy()
    assert np.isfinite(ours).all()
    np.testing.assert_allclose(ours, expected, rtol=0, atol=2e-6 * np.abs(expected).max())
    if form == "bool":
        assert not ours[:, :, 2].any()
    assert np.array_equal(module.run(*inputs, threads=2).dequantized, ours)


@pytest.mark.parametrize("form", ["bool", "float", "causal"])
def test_relax_form_equals_the_runtime(form):
    pytest.importorskip("tvm")
    from qnnpy import tvm_bridge

    q, k, v = _tensors(2)
    mask = _masks()[form]
    module = _module(mask, form == "causal", 1 / np.sqrt(E))
    inputs = (q, k, v) if mask is None else (q, k, v, mask)
    ours = module.run(*inputs).dequantized
    theirs = tvm_bridge.build(module, form="qdq")(*inputs)
    np.testing.assert_allclose(theirs, ours, rtol=0, atol=2e-6 * np.abs(ours).max())


def test_rule_refuses_what_does_not_fit():
    g = _core.Graph()
    q, k = g.add_input("q", [1, 6, 2, 8]), g.add_input("k", [1, 4, 3, 8])
    with pytest.raises(ValueError, match=r"float_attention \(bad\).*6 query heads are not a multiple of 4"):
        g.add_node("float_attention", [q, k, k], "bad", "y", "float32", ints={"causal": [0]}, floats={"scale": 1.0})
    k2 = g.add_input("k2", [1, 2, 3, 8])
    mask = g.add_input("mask", [1, 1, 3, 2], "bool")
    with pytest.raises(ValueError, match=r"float_attention \(bad\).*\(1, 1, 3, 2\) and \(1, 6, 2, 3\) do not broadcast"):
        g.add_node("float_attention", [q, k2, k2, mask], "bad", "y", "float32", ints={"causal": [0]},
                   floats={"scale": 1.0})


def test_decoder_reads_grouped_heads_in_place():
    """A tiny Llama (4 query heads, 2 key / value heads) converts with one float_attention per layer and none of
    repeat_kv's copies, and its logits stay PyTorch's (the decode tests check the rest)."""
    pytest.importorskip("torchao.quantization")
    pytest.importorskip("transformers")
    from torchao.quantization import Int8WeightOnlyConfig, quantize_

    from qnnpy import llm
    from torchao_models import tiny_lm

    model = tiny_lm("llama")
    quantize_(model, Int8WeightOnlyConfig())
    with pytest.warns(UserWarning):
        decoder = llm.convert_decoder(model, max_cache_len=16)
    ops = [n["op"] for n in decoder.module.nodes()]
    assert ops.count("float_attention") == 2 and "float_expand" not in ops
    outputs = decoder.run_step(*decoder.initial_state, np.array([[5]], np.int64), np.array([0], np.int64))
    with torch.no_grad():
        expected = llm.static_cache_module(model, 16)(input_ids=torch.tensor([[5]]), cache_position=torch.tensor([0]))
    expected = expected.reshape(-1).numpy()
    assert np.abs(outputs[0].reshape(-1) - expected).max() <= 1e-4 * np.abs(expected).max()

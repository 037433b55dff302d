"""A decode loop: Hugging Face decoder LMs (tiny Llama and Qwen2 from configs) quantized with torchao's quantize_,
one decode step converted with the static KV cache as explicit state (qnnpy.llm), and 32 greedy tokens decoded in
qnnpy's runtime and in TVM's kernels form against PyTorch's own decode through transformers' static-cache module."""
from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("torchao.quantization")
pytest.importorskip("transformers")
from torchao.quantization import Int8DynamicActivationInt8WeightConfig, Int8WeightOnlyConfig, quantize_  # noqa: E402

from qnnpy import llm  # noqa: E402
from test_torchao import _tiny_lm  # noqa: E402
from torchao_models import quantize_like_executorch  # noqa: E402

PROMPT = [3, 17, 42, 9]
NEW_TOKENS = 32
CACHE = 40


def _quantized_lm(kind: str, config: str) -> torch.nn.Module:
    model = _tiny_lm(kind)
    if config == "executorch_8da4w":
        return quantize_like_executorch(model)
    quantize_(model, {"w8a8_dynamic": Int8DynamicActivationInt8WeightConfig, "int8_weight_only": Int8WeightOnlyConfig}[config]())
    return model


def _pytorch_steps(model: torch.nn.Module, tokens: list[int]) -> list[np.ndarray]:
    """PyTorch's logits after each of ``tokens`` (fed one step each through the static-cache module)."""
    step = llm.static_cache_module(model, CACHE)
    with torch.no_grad():
        return [step(input_ids=torch.tensor([[t]]), cache_position=torch.tensor([p])).reshape(-1).numpy()
                for p, t in enumerate(tokens)]


def _pytorch_generate(model: torch.nn.Module) -> list[int]:
    step = llm.static_cache_module(model, CACHE)
    tokens, token = [], PROMPT[0]
    with torch.no_grad():
        for position in range(len(PROMPT) + NEW_TOKENS - 1):
            logits = step(input_ids=torch.tensor([[token]]), cache_position=torch.tensor([position]))
            token = PROMPT[position + 1] if position + 1 < len(PROMPT) else int(logits.reshape(-1).argmax())
            if position + 1 >= len(PROMPT):
                tokens.append(token)
    return tokens


def _ours_steps(decoder: llm.Decoder, tokens: list[int]) -> list[np.ndarray]:
    state, logits = decoder.initial_state, []
    for position, token in enumerate(tokens):
        outputs = decoder.run_step(*state, np.array([[token]], np.int64), np.array([position], np.int64))
        logits.append(outputs[0].reshape(-1))
        state = outputs[1:]
    return logits


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
@pytest.mark.parametrize("config", ["w8a8_dynamic", "executorch_8da4w", "int8_weight_only"])
def test_greedy_decode_gives_pytorchs_tokens(kind, config):
    """The 32 tokens equal PyTorch's, or differ first where PyTorch's own two best logits lie closer together than
    qnnpy's logits lie from PyTorch's at that step (a near tie: float glue summed in another order moves a
    per-token quantization by a step now and then, and the cache keeps it). Teacher-forced on PyTorch's tokens,
    every step's logits stay within 2% of their range of PyTorch's."""
    model = _quantized_lm(kind, config)
    with pytest.warns(UserWarning, match="torch.export"):
        decoder = llm.convert_decoder(model, max_cache_len=CACHE)
    assert decoder.state_names[:2] == ["cumulative_length_0", "cumulative_length_1"]
    expected = _pytorch_generate(model)
    got = decoder.generate(PROMPT, NEW_TOKENS)
    sequence = PROMPT + expected
    ours, theirs = _ours_steps(decoder, sequence[:-1]), _pytorch_steps(model, sequence[:-1])
    for a, b in zip(ours, theirs):
        assert np.abs(a - b).max() <= 0.02 * np.abs(b).max()
    if got != expected:
        first = next(i for i, (a, b) in enumerate(zip(got, expected)) if a != b)
        step = len(PROMPT) - 1 + first
        best_two = np.sort(theirs[step])[-2:]
        assert best_two[1] - best_two[0] < np.abs(ours[step] - theirs[step]).max(), (
            f"token {first} differs ({got[first]} vs {expected[first]}) where PyTorch's logits are no near tie")
    if config == "int8_weight_only":  # no activation quantization to move by a step: every token equal
        assert got == expected


def test_kernels_form_decodes_as_the_runtime():
    pytest.importorskip("tvm")
    from qnnpy import tvm_bridge

    model = _quantized_lm("llama", "w8a8_dynamic")
    with pytest.warns(UserWarning):
        decoder = llm.convert_decoder(model, max_cache_len=CACHE)
    runner = tvm_bridge.build(decoder.module, form="kernels")
    assert decoder.generate(PROMPT, NEW_TOKENS, runner=runner) == decoder.generate(PROMPT, NEW_TOKENS)


def test_refusals():
    model = _tiny_lm("llama")
    with pytest.raises(llm.ConversionError, match="no torchao quantized weights"):
        llm.convert_decoder(model, max_cache_len=8)
    quantize_(model, Int8WeightOnlyConfig())
    with pytest.warns(UserWarning):
        decoder = llm.convert_decoder(model, max_cache_len=8)
    with pytest.raises(ValueError, match="exceed the cache of 8 positions"):
        decoder.generate(PROMPT, 5)

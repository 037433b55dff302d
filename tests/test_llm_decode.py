"""A decode loop: Hugging Face decoder LMs (tiny Llama and Qwen2 from configs) quantized with torchao's quantize_,
one decode step converted with the static KV cache as explicit state (qnnpy.llm), and 32 greedy tokens decoded in
qnnpy's runtime and in TVM's kernels form against PyTorch's own decode through transformers' static-cache module."""
from __future__ import annotations

import gc

import numpy as np
import pytest
import torch

pytest.importorskip("torchao.quantization")
pytest.importorskip("transformers")
from torchao.quantization import Int8DynamicActivationInt8WeightConfig, Int8WeightOnlyConfig, quantize_  # noqa: E402

import qnnpy  # noqa: E402
from qnnpy import _core, llm  # noqa: E402
from torchao_models import quantize_like_executorch, tiny_lm  # noqa: E402

PROMPT = [3, 17, 42, 9]
NEW_TOKENS = 32
CACHE = 40


def _quantized_lm(kind: str, config: str) -> torch.nn.Module:
    model = tiny_lm(kind)
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


def test_state_after_steps_is_pytorchs():
    """The state the step returns is what PyTorch's static-cache module holds after the same steps: the position
    counters exactly (transformers sets each from cache_position, then adds the tokens written through another
    name of the same tensor), the keys and values to float rounding."""
    model = _quantized_lm("llama", "w8a8_dynamic")
    with pytest.warns(UserWarning):
        decoder = llm.convert_decoder(model, max_cache_len=CACHE)
    step = llm.static_cache_module(model, CACHE)
    buffers = dict(step.named_buffers())
    state = decoder.initial_state
    for position, token in enumerate(PROMPT):
        state = decoder.run_step(*state, np.array([[token]], np.int64), np.array([position], np.int64))[1:]
        with torch.no_grad():
            step(input_ids=torch.tensor([[token]]), cache_position=torch.tensor([position]))
    for name, ours in zip(decoder.state_names, state):
        theirs = buffers[name].numpy()
        if name.startswith("cumulative_length"):
            assert np.array_equal(ours, theirs) and int(ours) == len(PROMPT), name
        else:
            assert np.abs(ours - theirs).max() <= 1e-4 * np.abs(theirs).max(), name


@pytest.mark.parametrize("kind,config", [("llama", "w8a8_dynamic"), ("qwen2", "executorch_8da4w")])
def test_prefill_in_chunks_computes_the_steps(kind, config):
    """A prompt of 11 tokens through a prefill module of 8 (one chunk, then 3 tokens padded to 8): its logits at
    every prompt position equal the step-by-step ones bit for bit (every op but attention works row by row, and
    attention masks the positions after each token), and greedy decoding gives the same tokens."""
    model = _quantized_lm(kind, config)
    with pytest.warns(UserWarning):
        decoder = llm.convert_decoder(model, max_cache_len=CACHE, prefill_chunk=8)
    prompt = [3, 17, 42, 9, 1, 60, 7, 7, 100, 5, 12]
    state, chunks = decoder.initial_state, []
    for start in (0, 8):
        ids = np.zeros((1, 8), np.int64)
        ids[0, :len(prompt[start:start + 8])] = prompt[start:start + 8]
        outputs = decoder.run_prefill(*state, ids, np.arange(start, start + 8, dtype=np.int64))
        chunks.append(outputs[0].reshape(8, -1))
        state = outputs[1:]
    stepwise = np.stack(_ours_steps(decoder, prompt))
    assert np.array_equal(np.concatenate(chunks)[:len(prompt)], stepwise)
    steps_only = llm.Decoder(decoder.module, decoder.state_names, decoder.initial_state, decoder.max_cache_len)
    assert decoder.generate(prompt, 16) == steps_only.generate(prompt, 16)


def test_kernels_form_decodes_as_the_runtime():
    pytest.importorskip("tvm")
    from qnnpy import tvm_bridge

    model = _quantized_lm("llama", "w8a8_dynamic")
    with pytest.warns(UserWarning):
        decoder = llm.convert_decoder(model, max_cache_len=CACHE)
    runner = tvm_bridge.build(decoder.module, form="kernels")
    assert decoder.generate(PROMPT, NEW_TOKENS, runner=runner) == decoder.generate(PROMPT, NEW_TOKENS)


def test_refusals():
    model = tiny_lm("llama")
    with pytest.raises(llm.ConversionError, match="no torchao quantized weights"):
        llm.convert_decoder(model, max_cache_len=8)
    quantize_(model, Int8WeightOnlyConfig())
    with pytest.warns(UserWarning):
        decoder = llm.convert_decoder(model, max_cache_len=8)
    with pytest.raises(ValueError, match="exceed the cache of 8 positions"):
        decoder.generate(PROMPT, 5)
    with pytest.raises(ValueError, match="no prefill module"):
        decoder.run_prefill(*decoder.initial_state, np.zeros((1, 2), np.int64), np.arange(2))
    with pytest.raises(ValueError, match="prefill_runner given, but this decoder has no prefill module"):
        decoder.generate(PROMPT, 2, prefill_runner=decoder.run_step)
    with pytest.raises(ValueError, match="prefill_chunk=9: it takes 1 .* to max_cache_len"):
        llm.convert_decoder(model, max_cache_len=8, prefill_chunk=9)


@pytest.mark.parametrize("kind,config", [("llama", "w8a8_dynamic"), ("qwen2", "executorch_8da4w")])
def test_weights_in_memory_once(kind, config):
    """The step and prefill modules hold one copy of each param, the runtime packs each weight once for both, and
    release_packed_params frees the params the kernels copied: generation gives the same tokens after it, and
    what needs the freed params says so."""
    model = _quantized_lm(kind, config)
    with pytest.warns(UserWarning):
        decoder = llm.convert_decoder(model, max_cache_len=CACHE, prefill_chunk=8)
    step_graph, prefill_graph = decoder.module.graph, decoder.prefill.graph
    # The prefill module adds only its own constants (masks and positions of its chunk's length), not the weights.
    added = _core.held_weight_bytes([step_graph, prefill_graph])["params"] - _core.held_weight_bytes([step_graph])["params"]
    assert 0 < added < _core.held_weight_bytes([prefill_graph])["params"] / 10
    gc.collect()  # earlier tests' garbage holding packed weights goes now, not while this one measures
    linears = sum(a.nbytes for name, a in decoder.module.params.items() if a.dtype == np.int8 and a.ndim == 2
                  and "embed" not in name)
    packed_before = _core.held_weight_bytes([])["packed"]
    decoder.run_step(*decoder.initial_state, np.array([[3]], np.int64), np.array([0], np.int64))
    packed_by_step = _core.held_weight_bytes([])["packed"] - packed_before
    assert packed_by_step > 0
    tokens = decoder.generate(PROMPT, 8)  # runs the prefill module too
    assert _core.held_weight_bytes([])["packed"] - packed_before == packed_by_step

    params_before = decoder.weight_bytes()["params"]
    freed = decoder.release_packed_params()
    assert freed >= linears
    assert decoder.weight_bytes()["params"] == params_before - freed
    assert decoder.generate(PROMPT, 8) == tokens
    # The packed weights stay counted (and cached) while the runners hold them, whatever is packed afterwards.
    packed = decoder.weight_bytes()["packed"]
    other = torch.nn.Sequential(torch.nn.Linear(32, 16)).eval()
    quantize_(other, Int8DynamicActivationInt8WeightConfig())
    other_module = qnnpy.from_torch(other, (torch.randn(2, 32),))
    other_module.run(np.ones((2, 32), np.float32))
    assert decoder.weight_bytes()["packed"] > packed
    with pytest.raises(ValueError, match="freed by release_packed_params"):
        decoder.module.params
    with pytest.raises(ValueError, match="freed by release_packed_params"):
        decoder.prefill.script()
    with pytest.raises(ValueError, match="no executor for profile .* 2 threads.*freed by release_packed_params"):
        decoder.module.run(*decoder.initial_state, np.array([[3]], np.int64), np.array([0], np.int64), threads=2)


def _saved_lm_with_tokenizer(folder) -> None:
    """The tiny Llama saved by save_pretrained, float, with a word-level tokenizer: "w<i>" is token i."""
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers

    tiny_lm("llama").save_pretrained(folder)
    vocab = {f"w{i}": i for i in range(255)} | {"[UNK]": 255}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]").save_pretrained(folder)


def _printed(stdout: str, key: str) -> str:
    return next(line.split(": ", 1)[1] for line in stdout.splitlines() if line.startswith(key + ": "))


@pytest.mark.parametrize("recipe,options", [("w8a8", ["--prompt", "w3 w17 w42 w9", "--prefill-chunk", "4"]),
                                            ("int4-weight-only", ["--prompt-ids", "3,17,42,9", "--runner", "kernels"])])
def test_generate_command_decodes_pytorchs_tokens(tmp_path, capsys, recipe, options):
    """qnnpy generate on a saved float LM folder: quantized by the named recipe, the prompt given as text (the
    folder's tokenizer) or as ids, decoded in the runtime with a prefill module or in TVM's kernels form. The
    printed tokens are PyTorch's greedy decode of the same quantized model, and --check says so (exit 0); or they
    leave PyTorch's at a near tie (PyTorch's two best logits closer than 2% of the logits' range, the bound the
    steps keep to), and --check names that token and PyTorch's gap there (exit 3)."""
    from qnnpy import cli

    if "kernels" in options:
        pytest.importorskip("tvm")
    _saved_lm_with_tokenizer(tmp_path / "lm")
    code = cli.main(["generate", str(tmp_path / "lm"), "--quantize", recipe, "--max-new-tokens", str(NEW_TOKENS),
                     "--max-cache-len", str(CACHE), "--check", *options])
    out = capsys.readouterr().out
    model = tiny_lm("llama")
    if recipe == "w8a8":
        quantize_(model, Int8DynamicActivationInt8WeightConfig())
    else:
        from torchao.prototype.quantization.int4 import PrototypeInt4WeightOnlyConfig

        quantize_(model, PrototypeInt4WeightOnlyConfig(group_size=32))
    expected = _pytorch_generate(model)
    got = [int(t) for t in _printed(out, "tokens").split(",")]
    assert _printed(out, "text") == " ".join("[UNK]" if t == 255 else f"w{t}" for t in got)
    if got == expected:
        assert code == 0 and _printed(out, "check") == f"{NEW_TOKENS}/{NEW_TOKENS} tokens equal PyTorch's"
        return
    first = next(i for i, (a, b) in enumerate(zip(got, expected)) if a != b)
    logits = _pytorch_steps(model, PROMPT + expected)[len(PROMPT) - 1 + first]
    best_two = np.sort(logits)[-2:]
    gap = best_two[1] - best_two[0]
    assert code == 3 and gap < 0.02 * np.abs(logits).max(), out
    assert _printed(out, "check").startswith(f"tokens differ from PyTorch's from token {first} on")
    assert f"lie {gap:.4g} apart" in out


def test_generate_command_refusals(tmp_path, capsys):
    from qnnpy import cli

    _saved_lm_with_tokenizer(tmp_path / "lm")
    folder = str(tmp_path / "lm")
    assert cli.main(["generate", folder, "--prompt-ids", "3,17"]) == 1
    assert "holds a float model: give --quantize with one of w8a8, 8da4w" in capsys.readouterr().err
    assert cli.main(["generate", folder, "--prompt-ids", "3,256", "--quantize", "w8a8"]) == 4
    assert "prompt token id 256 is outside the model's vocabulary of 256" in capsys.readouterr().err
    assert cli.main(["generate", str(tmp_path), "--prompt-ids", "3"]) == 4
    assert "no config.json" in capsys.readouterr().err
    assert cli.main(["generate", folder, "--prompt-ids", "3,-1"]) == 2
    with pytest.raises(ValueError, match="quantized already"):
        llm.quantize(_quantized_lm("llama", "w8a8_dynamic"), "8da4w")


def test_forward_on_the_cache_the_runtime_holds_equals_steps_with_the_state_as_arrays():
    """Decoder.start / forward keep the cache inside the runtime (no copy in or out a step): the logits of a prompt
    chunk and the steps after it equal those of run_prefill / run_step passing the state as arrays, bit for bit,
    and misuse is refused."""
    model = _quantized_lm("llama", "w8a8_dynamic")
    with pytest.warns(UserWarning):
        decoder = llm.convert_decoder(model, max_cache_len=CACHE, prefill_chunk=4)
    with pytest.raises(ValueError, match=r"call start\(\) first"):
        decoder.forward([3], 0)
    tokens = [3, 17, 42, 9, 1, 60, 7]
    decoder.start()
    in_place = [decoder.forward(tokens[:3], 0)] + [decoder.forward([t], p) for p, t in enumerate(tokens[3:], 3)]
    padded = np.array([tokens[:3] + [0]], np.int64)
    outputs = decoder.run_prefill(*decoder.initial_state, padded, np.arange(4, dtype=np.int64))
    arrays, state = [outputs[0].reshape(4, -1)[2]], outputs[1:]
    for position, token in enumerate(tokens[3:], 3):
        outputs = decoder.run_step(*state, np.array([[token]], np.int64), np.array([position], np.int64))
        arrays.append(outputs[0].reshape(-1))
        state = outputs[1:]
    for ours, theirs in zip(in_place, arrays):
        np.testing.assert_array_equal(ours, theirs)
    with pytest.raises(ValueError, match="up to prefill_chunk=4"):
        decoder.forward(tokens[:5], 0)
    with pytest.raises(ValueError, match="outside the cache of 40"):
        decoder.forward([3], 40)
    executor = decoder.module.executor()
    with pytest.raises(ValueError, match="carried value '.*' must have shape"):
        executor.carried_state([np.zeros(3, np.int64)])


def test_a_batch_of_prompts_decodes_each_as_alone():
    """convert_decoder(..., batch_size=2): two prompts of one length decoded together (their own cache rows) give
    each prompt's tokens and logits of a batch-1 decoder bit for bit (every op works per sequence), in the runtime
    and with the state passed as arrays."""
    model = _quantized_lm("qwen2", "w8a8_dynamic")
    with pytest.warns(UserWarning):
        pair = llm.convert_decoder(model, max_cache_len=CACHE, prefill_chunk=4, batch_size=2)
        alone = llm.convert_decoder(model, max_cache_len=CACHE, prefill_chunk=4)
    prompts = [[3, 17, 42, 9, 5], [100, 7, 7, 60, 1]]
    tokens = pair.generate(prompts, 12)
    assert tokens == [alone.generate(p, 12) for p in prompts]
    assert pair.generate(prompts, 12, runner=pair.run_step, prefill_runner=pair.run_prefill) == tokens
    pair.start()
    alone.start()
    both = pair.forward([p[:3] for p in prompts], 0)
    assert both.shape == (2, 256)
    np.testing.assert_array_equal(both[0], alone.forward(prompts[0][:3], 0))
    with pytest.raises(ValueError, match=r"takes 2 sequence\(s\) of one length"):
        pair.forward([3, 17], 3)

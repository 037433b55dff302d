"""llama.cpp as a contender of bench_llm_decode.py: the same Llama written to GGUF with the ``gguf`` package (its
linears Q4_0 or Q8_0, the embedding Q8_0, the norms float32) and run by ``llama-cpp-python``.

GGUF's llama layout differs from Hugging Face's in one place: llama.cpp rotates adjacent pairs of each head's query
and key features where Hugging Face rotates the two halves, so the q and k projections' rows are permuted per head
(as llama.cpp's convert_hf_to_gguf.py does). :func:`agreement` checks that the file is the same model: the
correlation of llama.cpp's logits with PyTorch's float ones on a prompt. A llama.cpp built for an AMX CPU with its
AMX kernels dies with SIGILL in them on the Xeon measured: benchmarks/RESULTS.md gives the build used instead.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Callable

import numpy as np
import torch


def available() -> str | None:
    """None where llama-cpp-python and gguf are installed, else why not."""
    missing = [name for name in ("llama_cpp", "gguf") if importlib.util.find_spec(name) is None]
    return f"not installed ({', '.join(missing)}; pip install llama-cpp-python gguf)" if missing else None


def _permuted(w: np.ndarray, heads: int) -> np.ndarray:
    """Rows of a q or k projection from Hugging Face's half-split rotary layout to llama.cpp's pairwise one."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_gguf(model: torch.nn.Module, path: Path, linear: str, context: int) -> None:
    """Write the float Hugging Face Llama ``model`` as a GGUF file: its linears (lm_head too) quantized to ``linear``
    ("Q4_0" or "Q8_0") by gguf's reference quantizer, the embedding Q8_0, the norms float32; no tokenizer (token ids
    go in as they are)."""
    import gguf

    config = model.config
    kind = gguf.GGMLQuantizationType[linear]
    writer = gguf.GGUFWriter(str(path), "llama")
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    writer.add_context_length(context)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(config.hidden_size // heads)
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_rope_freq_base(float(getattr(config, "rope_theta", None) or config.rope_parameters["rope_theta"]))
    writer.add_vocab_size(config.vocab_size)
    writer.add_tokenizer_model("none")
    weights = {name: t.detach().float().numpy() for name, t in model.state_dict().items()}

    def add(name: str, value: np.ndarray, quantized: gguf.GGMLQuantizationType | None) -> None:
        if quantized is None:
            writer.add_tensor(name, value.astype(np.float32))
        else:
            writer.add_tensor(name, gguf.quants.quantize(value.astype(np.float32), quantized), raw_dtype=quantized)

    add("token_embd.weight", weights["model.embed_tokens.weight"], gguf.GGMLQuantizationType.Q8_0)
    add("output_norm.weight", weights["model.norm.weight"], None)
    add("output.weight", weights["lm_head.weight"], kind)
    for i in range(config.num_hidden_layers):
        layer = f"model.layers.{i}."
        add(f"blk.{i}.attn_norm.weight", weights[layer + "input_layernorm.weight"], None)
        add(f"blk.{i}.ffn_norm.weight", weights[layer + "post_attention_layernorm.weight"], None)
        add(f"blk.{i}.attn_q.weight", _permuted(weights[layer + "self_attn.q_proj.weight"], heads), kind)
        add(f"blk.{i}.attn_k.weight", _permuted(weights[layer + "self_attn.k_proj.weight"], kv_heads), kind)
        add(f"blk.{i}.attn_v.weight", weights[layer + "self_attn.v_proj.weight"], kind)
        add(f"blk.{i}.attn_output.weight", weights[layer + "self_attn.o_proj.weight"], kind)
        for ours, theirs in (("ffn_gate", "gate_proj"), ("ffn_up", "up_proj"), ("ffn_down", "down_proj")):
            add(f"blk.{i}.{ours}.weight", weights[layer + f"mlp.{theirs}.weight"], kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


class LlamaCpp:
    """A GGUF file loaded by llama-cpp-python for ``threads`` threads: a decode step at a fixed position and a
    prefill, each a callable for the benchmark's timing loop."""

    def __init__(self, path: Path, context: int, threads: int, batch: int):
        from llama_cpp import Llama

        self.llm = Llama(model_path=str(path), n_ctx=context, n_threads=threads, n_threads_batch=threads, n_batch=batch,
                         logits_all=True, verbose=False)

    def decode_at(self, position: int, token: int = 7) -> Callable[[], object]:
        """One token at ``position`` (the cache after it dropped first, as llama-cpp-python's eval does)."""
        def step() -> object:
            self.llm.n_tokens = position
            return self.llm.eval([token])
        return step

    def prefill(self, tokens: list[int]) -> Callable[[], object]:
        def run() -> object:
            self.llm.reset()
            return self.llm.eval(tokens)
        return run

    def last_logits(self, tokens: list[int]) -> np.ndarray:
        self.prefill(tokens)()
        return np.array(self.llm.scores[len(tokens) - 1])


def agreement(peer: LlamaCpp, model: torch.nn.Module, tokens: list[int]) -> float:
    """The correlation of llama.cpp's last logits on ``tokens`` with those of the float PyTorch ``model``."""
    with torch.no_grad():
        reference = model(torch.tensor([tokens])).logits[0, -1].numpy()
    return float(np.corrcoef(peer.last_logits(tokens), reference)[0, 1])


def system_info() -> str:
    import llama_cpp

    return llama_cpp.llama_print_system_info().decode().strip()

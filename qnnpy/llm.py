"""Decoder LMs with their KV cache as explicit state: conversion and greedy generation.

:func:`convert_decoder` wraps a Hugging Face decoder LM (``LlamaForCausalLM``, ``Qwen2ForCausalLM``, ...;
quantized with torchao's ``quantize_``) in transformers' static-cache export module
(``transformers.integrations.executorch.TorchExportableModuleWithStaticCache``), captures one decode step
(one token at a given position) and converts it. The cache buffers the step writes become explicit state: the
module takes them first and returns them after the logits, so a caller carries them from step to step
(:class:`Decoder`). A second module, on ``prefill_chunk`` tokens a call, runs the prompt.
:meth:`Decoder.generate` decodes greedily with qnnpy's runtime or any runner with the module's signature (TVM's
forms: ``tvm_bridge.build(decoder.module, form="kernels")``). :data:`RECIPES` names the torchao configs a float
LM is quantized with (:func:`quantize`), and :func:`pytorch_generate` is PyTorch's own greedy decode, the
reference. ``qnnpy generate`` (:mod:`qnnpy.cli_generate`) runs all of it on a Hugging Face model folder.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch

from qnnpy import _core
from qnnpy.capture.torchao_capture import capture_torchao_with_state, torchao_layers
from qnnpy.convert.converter import convert_captured, decomposed
from qnnpy.convert.torchao_ops import check_torchao_layers
from qnnpy.errors import ConversionError
from qnnpy.executor import Executor
from qnnpy.llm_recipes import RECIPES
from qnnpy.module import QDQModule

# A runner of the decode step: (state..., input_ids (1, 1) int64, cache_position (1,) int64) -> [logits, state...].
StepRunner = Callable[..., Sequence[np.ndarray]]


@dataclass
class Decoder:
    """One decode step of an LM as a QDQModule with explicit state, and optionally a prefill module.

    ``module`` takes ``(*state, input_ids, cache_position)`` -- the cache buffers (``state_names``: each layer's
    keys, values and position counter), the token of each of the ``batch_size`` B sequences ``(B, 1)`` int64 and
    their position ``(1,)`` int64 -- and returns ``(logits, *state)``: the logits ``(B, 1, vocab)`` and the state
    after the step. ``initial_state`` is the empty cache; ``max_cache_len`` bounds the positions. ``prefill``
    (``convert_decoder(..., prefill_chunk=C)``) is the same computation on ``C`` tokens at consecutive positions:
    ``input_ids (B, C)``, ``cache_position (C,)``, logits ``(B, C, vocab)``. The two modules share their params (one copy in memory). :meth:`run_step` and
    :meth:`run_prefill` run them on ``threads`` workers with the kernels of ``isa`` (default: the best the CPU
    runs). :meth:`start` and :meth:`forward` run them on a cache that qnnpy's runtime holds from call to call
    (no copy of it in or out), which :meth:`generate` uses by default."""

    module: QDQModule
    state_names: list[str]
    initial_state: list[np.ndarray]
    max_cache_len: int
    prefill: QDQModule | None = None
    prefill_chunk: int = 1
    threads: int = 1
    isa: str | None = None
    batch_size: int = 1
    _cache: Any = field(default=None, init=False, repr=False)
    # (tokens, seconds) of each forward call since start(): what qnnpy generate reports as prompt and decode times.
    forward_calls: list[tuple[int, float]] = field(default_factory=list, init=False, repr=False)

    def start(self) -> None:
        """Begin a sequence in qnnpy's runtime: a cache of its own, the empty ``initial_state``, that
        :meth:`forward` reads and writes in place."""
        self._cache = self._executor(self.module).carried_state(self.initial_state)
        self.forward_calls = []

    def forward(self, ids: Sequence[int] | Sequence[Sequence[int]], position: int) -> np.ndarray:
        """Run the tokens ``ids`` at positions ``position, position + 1, ...`` on the cache :meth:`start` made: one
        token through the step module, up to ``prefill_chunk`` through the prefill module (padded to the chunk: the
        extra positions are written but masked, and overwritten by the tokens that follow). With ``batch_size`` B
        above 1, ``ids`` holds B rows of as many tokens, one per sequence. Returns the logits of the last of ``ids``:
        ``(vocab,)``, or ``(B, vocab)`` for a batch."""
        if self._cache is None:
            raise ValueError("forward runs on the cache start() makes: call start() first")
        rows = self._rows(ids)
        count = rows.shape[1]
        width = 1 if count == 1 else self.prefill_chunk
        if not 1 <= count <= width or (width > 1 and self.prefill is None):
            raise ValueError(f"forward takes one token, or up to prefill_chunk={self.prefill_chunk} with a prefill "
                             f"module; got {count}")
        if position < 0 or position + width > self.max_cache_len:
            raise ValueError(f"positions {position}..{position + width - 1} are outside the cache of "
                             f"{self.max_cache_len} positions")
        padded = np.zeros((self.batch_size, width), np.int64)
        padded[:, :count] = rows
        module = self.module if width == 1 else self.prefill
        start = time.perf_counter()
        logits = self._executor(module).run_carried(self._cache, padded,
                                                    np.arange(position, position + width, dtype=np.int64))[0]
        self.forward_calls.append((count, time.perf_counter() - start))
        last = np.asarray(logits).reshape(self.batch_size, width, -1)[:, count - 1]
        return last if self.batch_size > 1 else last[0]

    def _rows(self, ids: Sequence[int] | Sequence[Sequence[int]]) -> np.ndarray:
        """``ids`` as a (batch_size, tokens) int64 array: one sequence's tokens, or batch_size rows of as many."""
        rows = np.asarray(ids, dtype=np.int64)
        if self.batch_size == 1 and rows.ndim == 1:
            rows = rows[None]
        if rows.ndim != 2 or rows.shape[0] != self.batch_size or rows.shape[1] == 0:
            raise ValueError(f"this decoder takes {self.batch_size} sequence(s) of one length (convert_decoder's "
                             f"batch_size); got ids of shape {rows.shape}")
        return rows

    def _executor(self, module: QDQModule) -> Executor:
        return module.executor(threads=self.threads, isa=self.isa)

    def run_step(self, *inputs: np.ndarray) -> list[np.ndarray]:
        """One step in qnnpy's runtime: the module's outputs as arrays (a :data:`StepRunner`)."""
        return [out.dequantized for out in self.module.run(*inputs, threads=self.threads, isa=self.isa).outputs]

    def run_prefill(self, *inputs: np.ndarray) -> list[np.ndarray]:
        """``prefill_chunk`` tokens in one call of qnnpy's runtime: the prefill module's outputs as arrays."""
        if self.prefill is None:
            raise ValueError("this decoder has no prefill module: convert it with convert_decoder(..., prefill_chunk=C)")
        return [out.dequantized for out in self.prefill.run(*inputs, threads=self.threads, isa=self.isa).outputs]

    def weight_bytes(self) -> dict[str, int]:
        """What the weights take in memory: ``params``, the bytes of the params the two modules hold (each shared
        buffer once), and ``packed``, those of the runtime's packed weights alive in this process."""
        graphs = [self.module.graph] + ([self.prefill.graph] if self.prefill is not None else [])
        return dict(_core.held_weight_bytes(graphs))

    def release_packed_params(self) -> int:
        """Prepare the runtime for :meth:`run_step` and :meth:`run_prefill` (at ``threads`` and ``isa``), then free
        the params its kernels packed (:meth:`QDQModule.release_packed_params`): the linears' weights stay in
        memory once, in the kernels' layout, shared by the two modules. Afterwards the modules run in qnnpy's
        runtime at the settings prepared so far only (no params, TVM forms or save). Returns the bytes freed."""
        freed = self.module.release_packed_params(threads=self.threads, isa=self.isa)
        if self.prefill is not None:
            freed += self.prefill.release_packed_params(threads=self.threads, isa=self.isa)
        return freed

    def generate(self, prompt: Sequence[int] | Sequence[Sequence[int]], max_new_tokens: int,
                 runner: StepRunner | None = None, prefill_runner: StepRunner | None = None) -> list[int] | list[list[int]]:
        """Greedy decoding: the prompt, then ``max_new_tokens`` steps each feeding back the argmax of the last
        logits; returns the new tokens (with ``batch_size`` above 1: ``prompt`` holds that many prompts of one
        length, and the result one list of new tokens per prompt). With neither runner given, qnnpy's runtime runs
        it on the cache it holds (:meth:`forward`), the prompt ``prefill_chunk`` tokens a call where the decoder has
        a prefill module (the last chunk padded: its extra positions are written but masked, and overwritten by the
        steps that follow). Otherwise ``runner`` (default :meth:`run_step`) runs one step and ``prefill_runner``,
        when given, the prompt's chunks, the state passed in and out as arrays."""
        if len(prompt) == 0 or (self.batch_size > 1 and any(len(p) == 0 for p in prompt)):
            raise ValueError("generate needs a prompt of at least one token")
        rows = self._rows(prompt)
        if rows.shape[1] + max_new_tokens > self.max_cache_len:
            raise ValueError(f"{rows.shape[1]} prompt tokens and {max_new_tokens} new ones exceed the cache of "
                             f"{self.max_cache_len} positions (convert_decoder's max_cache_len)")
        if prefill_runner is not None and self.prefill is None:
            raise ValueError("prefill_runner given, but this decoder has no prefill module to say its chunk: convert "
                             "it with convert_decoder(..., prefill_chunk=C)")
        if runner is None and prefill_runner is None:
            self.start()
            tokens = self._greedy(rows, max_new_tokens, self.forward)
        else:
            run = runner or self.run_step
            state = [s.copy() for s in self.initial_state]

            def call(ids: np.ndarray, position: int) -> np.ndarray:
                nonlocal state
                width = 1 if ids.shape[1] == 1 else self.prefill_chunk
                padded = np.zeros((self.batch_size, width), np.int64)
                padded[:, :ids.shape[1]] = ids
                outputs = (run if width == 1 else prefill_runner)(*state, padded,
                                                                  np.arange(position, position + width, dtype=np.int64))
                state = [np.asarray(s) for s in outputs[1:]]
                return np.asarray(outputs[0]).reshape(self.batch_size, width, -1)[:, ids.shape[1] - 1]

            tokens = self._greedy(rows, max_new_tokens, call, chunked=prefill_runner is not None)
        return tokens[0] if self.batch_size == 1 else tokens

    def _greedy(self, rows: np.ndarray, max_new_tokens: int, call: Callable[[np.ndarray, int], np.ndarray],
                chunked: bool = True) -> list[list[int]]:
        """The greedy loop of :meth:`generate` over ``call(ids (B, n), position) -> logits (B, vocab)``: the prompt
        in chunks of the prefill module (``chunked``, where there is one) while more than one token is left, then one
        token a step. Returns the new tokens of each row."""
        position, logits = 0, np.zeros(0)
        chunk = self.prefill_chunk if chunked and self.prefill is not None else 1
        length = rows.shape[1]
        while chunk > 1 and length - position > 1 and position + chunk <= self.max_cache_len:
            part = rows[:, position:position + chunk]
            logits = np.asarray(call(part, position)).reshape(self.batch_size, -1)
            position += part.shape[1]
        while position < length:
            logits = np.asarray(call(rows[:, position:position + 1], position)).reshape(self.batch_size, -1)
            position += 1
        tokens = [logits.argmax(-1)]
        while len(tokens) < max_new_tokens:
            logits = np.asarray(call(tokens[-1][:, None], position)).reshape(self.batch_size, -1)
            position += 1
            tokens.append(logits.argmax(-1))
        if max_new_tokens < 1:
            return [[] for _ in range(self.batch_size)]
        return [[int(t) for t in column] for column in np.stack(tokens[:max_new_tokens], axis=1)]


def quantize(model: torch.nn.Module, recipe: str) -> torch.nn.Module:
    """Quantize a float LM in place with the torchao recipe named in :data:`RECIPES`; returns it."""
    if recipe not in RECIPES:
        raise ValueError(f"unknown recipe {recipe!r}; one of {', '.join(RECIPES)}")
    if torchao_layers(model):
        raise ValueError(f"{type(model).__name__} is quantized already (torchao weights); convert it as it is")
    RECIPES[recipe](model)
    return model


def pytorch_generate(model: torch.nn.Module, prompt: Sequence[int], max_new_tokens: int,
                     max_cache_len: int) -> tuple[list[int], list[float]]:
    """PyTorch's own greedy decode of ``model`` through the static-cache module that :func:`convert_decoder`
    converts, one token a step: the new tokens and, at each, the gap between PyTorch's two best logits (how near a
    tie the choice was)."""
    if not prompt or len(prompt) + max_new_tokens > max_cache_len:
        raise ValueError(f"{len(prompt)} prompt tokens and {max_new_tokens} new ones for a cache of {max_cache_len}")
    step = static_cache_module(model, max_cache_len)
    tokens: list[int] = []
    gaps: list[float] = []
    token = prompt[0]
    with torch.no_grad():
        for position in range(len(prompt) + max_new_tokens - 1):
            logits = step(input_ids=torch.tensor([[token]]), cache_position=torch.tensor([position])).reshape(-1)
            if position + 1 < len(prompt):
                token = prompt[position + 1]
                continue
            top = torch.topk(logits, 2).values
            token = int(logits.argmax())
            tokens.append(token)
            gaps.append(float(top[0] - top[1]))
    return tokens, gaps


@contextlib.contextmanager
def _static_cache(model: torch.nn.Module) -> Iterator[None]:
    """The model's generation config asks for a static cache (what the export module requires) while the block lasts."""
    config = model.generation_config
    saved = (config.cache_implementation, config.use_cache)
    config.cache_implementation, config.use_cache = "static", True
    try:
        yield
    finally:
        config.cache_implementation, config.use_cache = saved


def static_cache_module(model: torch.nn.Module, max_cache_len: int, batch_size: int = 1) -> torch.nn.Module:
    """transformers' static-cache export module of ``model`` (``batch_size`` sequences): ``forward(input_ids=, cache_position=)``
    returns the logits and writes the cache buffers in place. PyTorch's own decode step, for reference."""
    try:
        from transformers.integrations.executorch import TorchExportableModuleWithStaticCache
    except ImportError as e:
        raise ConversionError("convert_decoder needs transformers (pip install transformers)") from e
    if getattr(model, "generation_config", None) is None:
        raise ConversionError(f"{type(model).__name__} has no generation_config: convert_decoder takes a Hugging Face "
                              "decoder LM (LlamaForCausalLM, Qwen2ForCausalLM, ...)")
    with _static_cache(model):
        return TorchExportableModuleWithStaticCache(model, batch_size=batch_size, max_cache_len=max_cache_len)


def _converted_step(model: torch.nn.Module, max_cache_len: int, tokens: int,
                    batch_size: int) -> tuple[QDQModule, list[str], list[np.ndarray]]:
    """The static-cache step of ``model`` on ``tokens`` tokens at consecutive positions, converted: the module,
    its state's names and the empty state."""
    wrapper = static_cache_module(model, max_cache_len, batch_size)
    example: dict[str, Any] = {"input_ids": torch.zeros(batch_size, tokens, dtype=torch.int64),
                               "cache_position": torch.arange(tokens, dtype=torch.int64)}
    captured, state = capture_torchao_with_state(wrapper, example)
    captured.output_names = ["logits", *state.names]
    return convert_captured(decomposed(captured)), state.names, [v.numpy() for v in state.values]


def convert_decoder(model: torch.nn.Module, max_cache_len: int = 128, prefill_chunk: int = 1,
                    batch_size: int = 1) -> Decoder:
    """Convert one decode step of a Hugging Face decoder LM quantized with torchao's ``quantize_``, its static
    KV cache of ``max_cache_len`` positions as explicit state (see :class:`Decoder`). With ``prefill_chunk`` above
    1 a second module takes that many tokens a call, for the prompt: its GEMMs read each weight once for all of
    them where the step reads it once a token (the two modules share their params' memory, and the runtime packs
    each weight once for both). ``batch_size`` sequences, decoded together at the same positions (prompts of one
    length), each with its own cache rows."""
    if getattr(model, "training", False):
        raise ConversionError(f"{type(model).__name__} is in training mode; call model.eval() before converting")
    if not 1 <= prefill_chunk <= max_cache_len:
        raise ValueError(f"prefill_chunk={prefill_chunk}: it takes 1 (no prefill module) to max_cache_len "
                         f"({max_cache_len}) tokens")
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size}: it takes 1 or more sequences")
    layers = torchao_layers(model)
    if not layers:
        raise ConversionError(f"{type(model).__name__} holds no torchao quantized weights: quantize it with "
                              "torchao.quantization.quantize_ first")
    check_torchao_layers(layers)
    module, names, initial = _converted_step(model, max_cache_len, 1, batch_size)
    decoder = Decoder(module, names, initial, max_cache_len, batch_size=batch_size)
    if prefill_chunk > 1:
        decoder.prefill, prefill_names, _ = _converted_step(model, max_cache_len, prefill_chunk, batch_size)
        decoder.prefill_chunk = prefill_chunk
        if prefill_names != names:
            raise ConversionError(f"the prefill module's state {prefill_names} is not the step's {names}")
        decoder.prefill.graph.share_params(module.graph)
    return decoder

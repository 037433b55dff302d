"""Decoder LMs with their KV cache as explicit state: conversion and greedy generation.

:func:`convert_decoder` wraps a Hugging Face decoder LM (``LlamaForCausalLM``, ``Qwen2ForCausalLM``, ...;
quantized with torchao's ``quantize_``) in transformers' static-cache export module
(``transformers.integrations.executorch.TorchExportableModuleWithStaticCache``), captures one decode step
(one token at a given position) and converts it. The cache buffers the step writes become explicit state: the
module takes them first and returns them after the logits, so a caller carries them from step to step
(:class:`Decoder`). :meth:`Decoder.generate` decodes greedily with qnnpy's runtime or any runner with the
module's signature (TVM's forms: ``tvm_bridge.build(decoder.module, form="kernels")``).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch

from qnnpy.capture.torchao_capture import capture_torchao_with_state, torchao_layers
from qnnpy.convert.converter import convert_captured, decomposed
from qnnpy.convert.torchao_ops import check_torchao_layers
from qnnpy.errors import ConversionError
from qnnpy.module import QDQModule

# A runner of the decode step: (state..., input_ids (1, 1) int64, cache_position (1,) int64) -> [logits, state...].
StepRunner = Callable[..., Sequence[np.ndarray]]


@dataclass
class Decoder:
    """One decode step of an LM as a QDQModule with explicit state.

    ``module`` takes ``(*state, input_ids, cache_position)`` -- the cache buffers (``state_names``: each layer's
    keys, values and position counter), the token ``(1, 1)`` int64 and its position ``(1,)`` int64 -- and returns
    ``(logits, *state)``: the logits ``(1, 1, vocab)`` and the state after the step. ``initial_state`` is the empty
    cache; ``max_cache_len`` bounds the positions."""

    module: QDQModule
    state_names: list[str]
    initial_state: list[np.ndarray]
    max_cache_len: int

    def run_step(self, *inputs: np.ndarray) -> list[np.ndarray]:
        """One step in qnnpy's runtime: the module's outputs as arrays (a :data:`StepRunner`)."""
        return [out.dequantized for out in self.module.run(*inputs).outputs]

    def generate(self, prompt: Sequence[int], max_new_tokens: int, runner: StepRunner | None = None) -> list[int]:
        """Greedy decoding: the prompt's tokens one step each, then ``max_new_tokens`` steps each feeding back the
        argmax of the last logits; returns the new tokens. ``runner`` (default :meth:`run_step`) runs one step."""
        if not prompt:
            raise ValueError("generate needs a prompt of at least one token")
        if len(prompt) + max_new_tokens > self.max_cache_len:
            raise ValueError(f"{len(prompt)} prompt tokens and {max_new_tokens} new ones exceed the cache of "
                             f"{self.max_cache_len} positions (convert_decoder's max_cache_len)")
        run = runner or self.run_step
        state = [s.copy() for s in self.initial_state]
        tokens: list[int] = []
        token, position = int(prompt[0]), 0
        while len(tokens) < max_new_tokens:
            outputs = run(*state, np.array([[token]], np.int64), np.array([position], np.int64))
            logits, state = outputs[0], [np.asarray(s) for s in outputs[1:]]
            position += 1
            if position < len(prompt):
                token = int(prompt[position])
                continue
            token = int(np.argmax(logits.reshape(-1)))
            tokens.append(token)
        return tokens


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


def static_cache_module(model: torch.nn.Module, max_cache_len: int) -> torch.nn.Module:
    """transformers' static-cache export module of ``model`` (batch 1): ``forward(input_ids=, cache_position=)``
    returns the logits and writes the cache buffers in place. PyTorch's own decode step, for reference."""
    try:
        from transformers.integrations.executorch import TorchExportableModuleWithStaticCache
    except ImportError as e:
        raise ConversionError("convert_decoder needs transformers (pip install transformers)") from e
    if getattr(model, "generation_config", None) is None:
        raise ConversionError(f"{type(model).__name__} has no generation_config: convert_decoder takes a Hugging Face "
                              "decoder LM (LlamaForCausalLM, Qwen2ForCausalLM, ...)")
    with _static_cache(model):
        return TorchExportableModuleWithStaticCache(model, batch_size=1, max_cache_len=max_cache_len)


def convert_decoder(model: torch.nn.Module, max_cache_len: int = 128) -> Decoder:
    """Convert one decode step of a Hugging Face decoder LM quantized with torchao's ``quantize_``, its static
    KV cache of ``max_cache_len`` positions as explicit state (see :class:`Decoder`)."""
    if getattr(model, "training", False):
        raise ConversionError(f"{type(model).__name__} is in training mode; call model.eval() before converting")
    wrapper = static_cache_module(model, max_cache_len)
    layers = torchao_layers(wrapper)
    if not layers:
        raise ConversionError(f"{type(model).__name__} holds no torchao quantized weights: quantize it with "
                              "torchao.quantization.quantize_ first")
    check_torchao_layers(layers)
    example: dict[str, Any] = {"input_ids": torch.zeros(1, 1, dtype=torch.int64),
                               "cache_position": torch.zeros(1, dtype=torch.int64)}
    captured, state = capture_torchao_with_state(wrapper, example)
    captured.output_names = ["logits", *state.names]
    module = convert_captured(decomposed(captured))
    return Decoder(module, state.names, [v.numpy() for v in state.values], max_cache_len)

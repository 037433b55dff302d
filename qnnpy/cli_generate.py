"""``qnnpy generate``: greedy decoding of a Hugging Face decoder LM folder in qnnpy's runtime (or TVM's kernels form),
quantized with torchao as saved or by a named recipe (:data:`qnnpy.llm.RECIPES`), optionally checked against
PyTorch's own decode."""
from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from qnnpy.errors import ConversionError, InputFileError

if TYPE_CHECKING:
    import torch

    from qnnpy.llm import Decoder, StepRunner


def token_ids(text: str) -> list[int]:
    """``--prompt-ids``: comma-separated non-negative integers."""
    try:
        ids = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected token ids separated by commas, e.g. 1,15043,29892") from None
    if not ids or min(ids) < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: token ids are non-negative integers")
    return ids


def _load_lm(folder: Path) -> "torch.nn.Module":
    """The causal LM saved in ``folder`` (``save_pretrained``), in float32 and eval mode."""
    import torch
    import transformers

    if not (folder / "config.json").is_file():
        raise InputFileError(f"{folder}: no config.json; give a folder written by a Hugging Face model's "
                             "save_pretrained")
    try:
        model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    except (OSError, ValueError) as e:
        raise InputFileError(f"{folder}: cannot load a causal LM: {' '.join(str(e).split())}") from e
    return model.eval()


def _prompt(args: argparse.Namespace, vocab: int) -> tuple[list[int], Callable[[list[int]], str] | None]:
    """The prompt's token ids and, where the folder has a tokenizer, the decoder of ids to text."""
    tokenizer = None
    if args.prompt is not None or (args.model_dir / "tokenizer_config.json").is_file():
        import transformers

        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(args.model_dir)
        except (OSError, ValueError) as e:
            if args.prompt is not None:
                raise InputFileError(f"{args.model_dir}: --prompt needs the model's tokenizer: {e}") from e
    ids = args.prompt_ids if args.prompt is None else tokenizer(args.prompt)["input_ids"]
    if not ids:
        raise InputFileError("the prompt has no tokens")
    if max(ids) >= vocab:
        raise InputFileError(f"prompt token id {max(ids)} is outside the model's vocabulary of {vocab}")
    return ids, None if tokenizer is None else tokenizer.decode


class _Timed:
    """A step runner that records the seconds of each call."""

    def __init__(self, run: "StepRunner") -> None:
        self.run, self.seconds = run, []

    def __call__(self, *inputs: np.ndarray) -> Sequence[np.ndarray]:
        start = time.perf_counter()
        outputs = self.run(*inputs)
        self.seconds.append(time.perf_counter() - start)
        return outputs


def _generate(decoder: "Decoder", prompt: list[int], max_new_tokens: int, form: str,
              progress: Callable[[str], None]) -> tuple[list[int], float, list[float]]:
    """Greedy decoding in ``form``: qnnpy's runtime (its packed weights prepared, the params they copy freed; the
    cache held by the runtime) or TVM's kernels form. Returns the tokens, the seconds the prompt took and those of
    each step that decoded a new token."""
    if form == "runtime":
        freed = decoder.release_packed_params()
        progress(f"runtime prepared ({freed / 2**20:.0f} MiB of params freed, the weights held once)")
        progress(f"decoding {max_new_tokens} tokens after a prompt of {len(prompt)}")
        tokens = decoder.generate(prompt, max_new_tokens)
        seconds = [s for _, s in decoder.forward_calls]
    else:
        step, prefill = _kernels_form(decoder, progress)
        timed_step = _Timed(step)
        timed_prefill = _Timed(prefill) if prefill is not None else None
        progress(f"decoding {max_new_tokens} tokens after a prompt of {len(prompt)}")
        tokens = decoder.generate(prompt, max_new_tokens, runner=timed_step, prefill_runner=timed_prefill)
        seconds = (timed_prefill.seconds if timed_prefill else []) + timed_step.seconds
    # The calls after the prompt's last token each decode one new token; the calls before them ran the prompt.
    decode = seconds[len(seconds) - (len(tokens) - 1):] if len(tokens) > 1 else []
    return tokens, sum(seconds) - sum(decode), decode


def _kernels_form(decoder: "Decoder", progress: Callable[[str], None]) -> tuple["StepRunner", "StepRunner | None"]:
    """The step and prefill runners of TVM's kernels form."""
    from qnnpy import tvm_bridge

    progress("compiling the kernels form with TVM")
    step = tvm_bridge.build(decoder.module, form="kernels")
    return step, tvm_bridge.build(decoder.prefill, form="kernels") if decoder.prefill is not None else None


def run_generate(args: argparse.Namespace, progress: Callable[[str], None]) -> tuple[int, list[str]]:
    """Load, quantize, convert, decode and (``--check``) compare; returns (the number of tokens that differ from
    PyTorch's, -1 without --check) and the lines to print."""
    import transformers

    from qnnpy import llm
    from qnnpy.capture.torchao_capture import torchao_layers

    if not args.debug:
        # torchao's import registers its enums with torch.compile, which logs a deprecation line for each; and
        # transformers draws a progress bar while it loads the weights.
        logging.getLogger("torch.utils._pytree").setLevel(logging.ERROR)
        transformers.utils.logging.disable_progress_bar()
    progress(f"loading {args.model_dir}")
    model = _load_lm(args.model_dir)
    prompt, detokenize = _prompt(args, model.config.vocab_size)
    if args.quantize == "saved":
        if not torchao_layers(model):
            raise ConversionError(f"{args.model_dir} holds a float model: give --quantize with one of "
                                  f"{', '.join(llm.RECIPES)}")
    else:
        progress(f"quantizing with torchao ({args.quantize})")
        llm.quantize(model, args.quantize)
    cache = args.max_cache_len or len(prompt) + args.max_new_tokens
    chunk = min(args.prefill_chunk, cache)
    progress(f"converting one decode step (cache of {cache} positions" + (f", prefill {chunk} tokens a call)" if chunk > 1 else ")"))
    start = time.perf_counter()
    decoder = llm.convert_decoder(model, max_cache_len=cache, prefill_chunk=chunk)
    decoder.threads = args.threads
    progress(f"  converted in {time.perf_counter() - start:.1f} s")
    tokens, prompt_seconds, decode = _generate(decoder, prompt, args.max_new_tokens, args.runner, progress)
    lines = ["tokens: " + ",".join(map(str, tokens))]
    if detokenize is not None:
        lines.append("text: " + detokenize(tokens))
    speed = f"decode {1e3 * float(np.median(decode)):.1f} ms/token (median)" if decode else "no decode steps"
    lines.append(f"time: prompt {prompt_seconds:.3f} s, {speed} ({args.runner}, {args.threads} "
                 f"thread{'s' if args.threads > 1 else ''})")
    if not args.check:
        return -1, lines
    progress("decoding with PyTorch (the static-cache module) for --check")
    expected, gaps = llm.pytorch_generate(model, prompt, args.max_new_tokens, cache)
    differ = [i for i, (a, b) in enumerate(zip(tokens, expected)) if a != b]
    if not differ:
        lines.append(f"check: {len(tokens)}/{len(tokens)} tokens equal PyTorch's")
    else:
        first = differ[0]
        lines.append(f"check: tokens differ from PyTorch's from token {first} on (PyTorch's: "
                     f"{','.join(map(str, expected))}); PyTorch's two best logits there lie {gaps[first]:.4g} apart "
                     "(a near tie lets float rounding pick the other)")
    return len(differ), lines

"""Decode and prefill of a Llama-shaped LM quantized with torchao's quantize_: qnnpy's runtime (qnnpy.llm, one
decode step with the KV cache as explicit state) against PyTorch running the same quantized model through
transformers' static-cache module, eager, (with --compile) torch.compile and (with --executorch) lowered to
ExecuTorch's XNNPACK delegate.

    .venv/bin/python -P benchmarks/bench_llm_decode.py [--layers 4] [--runs 15] [--threads 1 2] [--compile]
        [--executorch] [--save]

Random weights (hidden 2048, intermediate 5632, 32 heads, 4 KV heads, vocab 32000: Llama-3.2-1B's widths), batch
1, a static cache of 160 positions. Decode: one token at position 16, median of interleaved rounds. Prefill: 128
tokens, PyTorch in one call, qnnpy in calls of its prefill module of 32 tokens. Configs: W8A8
(Int8DynamicActivationInt8WeightConfig) and ExecuTorch's 8da4w recipe (int8 embeddings, int4 linears in groups
of 32). --save writes this CPU's section of benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import copy
import datetime
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Callable

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from bench_latency import cpu_model, load_average  # noqa: E402
from latency_results import RESULTS_MD, cpu_key  # noqa: E402
from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_  # noqa: E402
from torchao_models import quantize_like_executorch  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

from qnnpy import llm  # noqa: E402

CACHE, POSITION, PREFILL, PREFILL_CHUNK = 160, 16, 128, 32


def llama(layers: int) -> torch.nn.Module:
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=layers,
                         num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=CACHE)
    return LlamaForCausalLM(config).eval()


def quantized(model: torch.nn.Module, config: str) -> torch.nn.Module:
    model = copy.deepcopy(model)
    if config == "8da4w":
        return quantize_like_executorch(model)
    quantize_(model, Int8DynamicActivationInt8WeightConfig())
    return model


def medians(calls: dict[str, Callable[[], object]], runs: int) -> dict[str, float]:
    """Median ms of each call, in interleaved rounds (each timed call after an untimed one)."""
    for call in calls.values():
        call()
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(runs):
        for name, call in calls.items():
            call()
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) * 1e3 for name, t in times.items()}


def payload_bytes(model: torch.nn.Module, bits: int) -> int:
    """The bytes of the quantized linears' values at ``bits`` bits each, and of a quantized (int8) embedding table."""
    total = 0
    for module in model.modules():
        quantized = type(getattr(module, "weight", None)).__module__.startswith("torchao")
        if quantized and isinstance(module, torch.nn.Linear):
            total += module.weight.numel() * bits // 8
        elif quantized and isinstance(module, torch.nn.Embedding):
            total += module.weight.numel()
    return total


def executorch_step(step: torch.nn.Module, notes: list[str], config: str) -> Callable[[], object] | None:
    """PyTorch's step lowered to ExecuTorch's XNNPACK delegate (to_edge_transform_and_lower, XnnpackPartitioner):
    a call of one token at POSITION; None, with a note saying why, where it does not lower."""
    try:
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        from executorch.exir import to_edge_transform_and_lower
        from executorch.runtime import Runtime
    except ImportError:
        notes.append(f"{config}: ExecuTorch: not installed")
        return None
    inputs = {"input_ids": torch.tensor([[7]]), "cache_position": torch.tensor([POSITION])}
    try:
        start = time.perf_counter()
        program = torch.export.export(step, (), inputs, strict=True)
        buffer = to_edge_transform_and_lower(program, partitioner=[XnnpackPartitioner()]).to_executorch().buffer
        loaded = Runtime.get().load_program(buffer)
        method = loaded.load_method("forward")
        notes.append(f"{config}: ExecuTorch (XNNPACK delegate) lowered in {time.perf_counter() - start:.0f} s")
    except Exception as e:  # noqa: BLE001  (the table goes on without it, and says why)
        notes.append(f"{config}: ExecuTorch: did not lower ({type(e).__name__}: {str(e).splitlines()[0][:120]})")
        return None
    args = [inputs["input_ids"], inputs["cache_position"]]
    return lambda: (loaded, method.execute(args))  # the program stays referenced while its method runs


def bench(config: str, base: torch.nn.Module, threads: list[int], runs: int, compile_: bool, executorch: bool,
          notes: list[str]) -> list[str]:
    model = quantized(base, config)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        decoder = llm.convert_decoder(model, max_cache_len=CACHE, prefill_chunk=PREFILL_CHUNK)
    notes.append(f"{config}: converted in {time.perf_counter() - start:.1f} s (the step and the prefill module)")
    params = decoder.module.params
    int8_bytes = sum(a.nbytes for a in params.values() if a.dtype == np.int8)
    payload = payload_bytes(model, 4 if config == "8da4w" else 8)
    notes.append(f"{config}: int8 params {int8_bytes / 2**20:.1f} MiB against a payload of {payload / 2**20:.1f} MiB "
                 f"({int8_bytes / payload:.2f}x; int4 values take a byte each) in each of the two modules, plus the runtime's "
                 "packed copy")
    state = decoder.initial_state
    token, position = np.array([[7]], np.int64), np.array([POSITION], np.int64)
    step = llm.static_cache_module(model, CACHE)
    prompt = torch.randint(0, 32000, (1, PREFILL), generator=torch.Generator().manual_seed(0))
    compiled = None
    if compile_:
        compiled = torch.compile(step, fullgraph=False)
        start = time.perf_counter()
        with torch.no_grad():
            compiled(input_ids=torch.tensor([[7]]), cache_position=torch.tensor([POSITION]))
        notes.append(f"{config}: torch.compile of the step compiled in {time.perf_counter() - start:.0f} s")
    lowered = executorch_step(llm.static_cache_module(model, CACHE), notes, config) if executorch else None
    rows = []
    for t in threads:
        torch.set_num_threads(t)

        def qnnpy_step(t: int = t) -> object:
            return decoder.module.run(*state, token, position, threads=t)

        def qnnpy_prefill(t: int = t) -> None:
            current = state
            for p in range(0, PREFILL, PREFILL_CHUNK):
                outputs = decoder.prefill.run(*current, prompt[:, p:p + PREFILL_CHUNK].numpy(),
                                              np.arange(p, p + PREFILL_CHUNK, dtype=np.int64), threads=t).outputs
                current = [o.dequantized for o in outputs[1:]]

        def pytorch_step(module: torch.nn.Module = step) -> object:
            with torch.no_grad():
                return module(input_ids=torch.tensor([[7]]), cache_position=torch.tensor([POSITION]))

        def pytorch_prefill(module: torch.nn.Module = step) -> object:
            with torch.no_grad():
                return module(input_ids=prompt, cache_position=torch.arange(PREFILL))

        decode = {"qnnpy runtime": qnnpy_step, "torchao eager": pytorch_step}
        prefill = {"qnnpy runtime": qnnpy_prefill, "torchao eager": pytorch_prefill}
        if compiled is not None:
            decode["torchao + torch.compile"] = lambda c=compiled: pytorch_step(c)
            prefill["torchao + torch.compile"] = lambda c=compiled: pytorch_prefill(c)
        if lowered is not None:
            decode["ExecuTorch XNNPACK"] = lowered
        d = medians(decode, runs)
        p = medians(prefill, max(3, runs // 5))
        for name in decode:
            rows.append(f"| {config} | {t} | {name} | {d[name]:.2f} | {f'{p[name]:.0f}' if name in p else '-'} |")
        print(f"[bench] {config}, {t} thread(s): decode {d}, prefill {p}", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--compile", action="store_true", help="also time torch.compile of PyTorch's step")
    parser.add_argument("--executorch", action="store_true",
                        help="also time the step lowered to ExecuTorch's XNNPACK delegate (decode only; its thread "
                             "count is XNNPACK's own)")
    parser.add_argument("--save", action="store_true", help="write this CPU's section of benchmarks/RESULTS.md")
    args = parser.parse_args()
    cpu = cpu_model()
    before = load_average()
    base = llama(args.layers)
    notes: list[str] = []
    rows = []
    for config in ("w8a8", "8da4w"):
        rows += bench(config, base, args.threads, args.runs, args.compile, args.executorch, notes)
    lines = [f"## LLM decode: {cpu}", "",
             f"Generated by `bench_llm_decode.py` on {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC: "
             f"torch {torch.__version__}; a Llama of {args.layers} layers (hidden 2048, intermediate 5632, vocab 32000, "
             f"random weights), batch 1, static cache of {CACHE}; decode: one token at position {POSITION}, median of "
             f"{args.runs} interleaved rounds; prefill: {PREFILL} tokens (PyTorch in one call, qnnpy in calls of "
             f"{PREFILL_CHUNK}); load average before {before}, after {load_average()}.", "",
             "| config | threads | contender | decode (ms per token) | prefill of 128 (ms) |", "|---|---|---|---|---|",
             *rows, "", "Notes:", "", *[f"- {n}" for n in notes], ""]
    print("\n".join(lines))
    if args.save:
        key = f"<!-- bench_llm_decode:{cpu_key(cpu)}"
        begin, end = f"{key}:begin -->", f"{key}:end -->"
        text = RESULTS_MD.read_text()
        section = "\n".join([begin, *lines, end])
        if begin in text and end in text:
            text = text[:text.index(begin)] + section + text[text.index(end) + len(end):]
        else:
            text = text.rstrip("\n") + "\n\n" + section + "\n"
        RESULTS_MD.write_text(text)
        print(f"[bench] wrote {RESULTS_MD}")


if __name__ == "__main__":
    main()

"""Decode and prefill of a Llama-shaped LM quantized with torchao's quantize_: qnnpy's runtime (qnnpy.llm, one
decode step with the KV cache as explicit state, held by the runtime between calls as generate() runs it) against PyTorch running the same quantized model through
transformers' static-cache module, eager, (with --compile) torch.compile and (with --executorch) lowered to
ExecuTorch's XNNPACK delegate, and (with --llama-cpp) llama.cpp running the same float model written to GGUF (Q4_0
linears against 8da4w, Q8_0 against W8A8; llama_cpp_peer.py).

    .venv/bin/python -P benchmarks/bench_llm_decode.py [--layers 4] [--runs 15] [--threads 1 2] [--compile]
        [--executorch] [--llama-cpp] [--save]

Random weights (hidden 2048, intermediate 5632, 32 heads, 4 KV heads, vocab 32000: Llama-3.2-1B's widths), batch
1, a static cache of 160 positions. Decode: one token at position 16, median of interleaved rounds. Prefill: 128
tokens in one call (qnnpy's prefill module converted for 128 tokens, as PyTorch and llama.cpp take them). Configs: W8A8
(Int8DynamicActivationInt8WeightConfig) and ExecuTorch's 8da4w recipe (int8 embeddings, int4 linears in groups
of 32). --save writes this CPU's results (benchmarks/results/llm/<cpu>.json), its section of
benchmarks/RESULTS.md and the plot of every CPU's results (benchmarks/llm_decode.png, plot_llm_decode.py).
"""
from __future__ import annotations

import argparse
import copy
import ctypes
import datetime
import gc
import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Callable

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import llama_cpp_peer  # noqa: E402
from bench_latency import cpu_model, load_average  # noqa: E402
import plot_llm_decode  # noqa: E402
from latency_results import RESULTS_DIR, RESULTS_MD, cpu_key  # noqa: E402
from torchao.quantization import (  # noqa: E402
    Int8DynamicActivationInt8WeightConfig, Int8DynamicActivationIntxWeightConfig, quantize_)
from torchao.quantization.granularity import PerAxis, PerGroup  # noqa: E402
from torchao_models import quantize_like_executorch  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

from qnnpy import llm  # noqa: E402

CACHE, POSITION, PREFILL, PREFILL_CHUNK = 160, 16, 128, 128
LLM_RESULTS = RESULTS_DIR / "llm"
PLOT = RESULTS_MD.parent / "llm_decode.png"


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


def payload_bytes(model: torch.nn.Module, bits: int) -> tuple[int, int]:
    """The weights' bytes: (the quantized linears' values at ``bits`` bits each and a quantized embedding's at 8,
    everything the model's parameters hold: those values at their bits, their scales and zero points as torchao
    stores them, and the tensors left in float)."""
    values = stored = 0
    for name, p in model.named_parameters():
        if not type(p).__module__.startswith("torchao"):
            stored += p.numel() * p.element_size()
            continue
        module = model.get_submodule(name.rpartition(".")[0])
        size = p.qdata.numel() * (bits if isinstance(module, torch.nn.Linear) else 8) // 8
        values += size
        stored += size + sum(getattr(p, n).numel() * getattr(p, n).element_size()
                             for n in p.tensor_data_names if n != "qdata")
    return values, stored


def executorch_model(base: torch.nn.Module, config: str) -> torch.nn.Module:
    """The model as ExecuTorch's XNNPACK delegate takes it: the linears quantized with the config its LLM export
    uses (8da4w: int4 in groups of 32; for W8A8, whose torchao form runs torch._int_mm, which XNNPACK does not take:
    int8 per output channel with the same int8 dynamic tokens), the embedding float (a torchao int8 embedding lowers
    to a dequantize_affine that ExecuTorch has no kernel for outside the delegate)."""
    model = copy.deepcopy(base)
    weight = (dict(weight_dtype=torch.int4, weight_granularity=PerGroup(32)) if config == "8da4w"
              else dict(weight_dtype=torch.int8, weight_granularity=PerAxis(0)))
    quantize_(model, Int8DynamicActivationIntxWeightConfig(**weight))
    return model


def executorch_step(base: torch.nn.Module, notes: list[str], config: str) -> Callable[[], object] | None:
    """The step of :func:`executorch_model` lowered to ExecuTorch's XNNPACK delegate (to_edge_transform_and_lower,
    XnnpackPartitioner): a call of one token at POSITION; None, with a note saying why, where it does not lower."""
    try:
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        from executorch.exir import to_edge_transform_and_lower
        from executorch.runtime import Runtime
    except ImportError:
        notes.append(f"{config}: ExecuTorch: not installed")
        return None
    step = llm.static_cache_module(executorch_model(base, config), CACHE)
    inputs = {"input_ids": torch.tensor([[7]]), "cache_position": torch.tensor([POSITION])}
    try:
        start = time.perf_counter()
        program = torch.export.export(step, (), inputs, strict=True)
        buffer = to_edge_transform_and_lower(program, partitioner=[XnnpackPartitioner()]).to_executorch().buffer
        loaded = Runtime.get().load_program(buffer)
        method = loaded.load_method("forward")
        form = "8da4w" if config == "8da4w" else "int8 per channel, int8 dynamic tokens"
        seconds = time.perf_counter() - start
        got = method.execute([inputs["input_ids"], inputs["cache_position"]])[0].flatten().numpy()
        with torch.no_grad():
            expected = step(**inputs).flatten().numpy()
        notes.append(f"{config}: ExecuTorch (XNNPACK delegate; linears {form}, embedding float) lowered in "
                     f"{seconds:.0f} s; its logits correlate with PyTorch's eager run of the same model at "
                     f"{float(np.corrcoef(got, expected)[0, 1]):.4f}")
    except Exception as e:  # noqa: BLE001  (the table goes on without it, and says why)
        notes.append(f"{config}: ExecuTorch: did not lower ({type(e).__name__}: {str(e).splitlines()[0][:120]})")
        return None
    args = [inputs["input_ids"], inputs["cache_position"]]
    return lambda: (loaded, method.execute(args))  # the program stays referenced while its method runs


def executorch_threads() -> int:
    """The threads of XNNPACK's pool in ExecuTorch's Python runtime (its own choice: resetting it with
    _unsafe_reset_threadpool aborts the process here, executorch 1.5.1)."""
    from executorch.extension.pybindings.portable_lib import _threadpool_get_thread_count

    return int(_threadpool_get_thread_count())


def llama_cpp_file(base: torch.nn.Module, config: str, notes: list[str], directory: Path) -> Path | None:
    """The float model written to GGUF for llama.cpp (Q4_0 linears against 8da4w, Q8_0 against W8A8), its logits
    checked against PyTorch's; None, with a note saying why, where llama-cpp-python is missing."""
    why = llama_cpp_peer.available()
    if why is not None:
        notes.append(f"{config}: llama.cpp: {why}")
        return None
    kind = "Q4_0" if config == "8da4w" else "Q8_0"
    path = directory / f"llama-{kind}.gguf"
    llama_cpp_peer.write_gguf(base, path, kind, CACHE)
    peer = llama_cpp_peer.LlamaCpp(path, CACHE, 1, PREFILL)
    corr = llama_cpp_peer.agreement(peer, base, list(range(5, 5 + POSITION)))
    notes.append(f"{config}: llama.cpp runs the float model written as GGUF {kind} (embedding Q8_0); its logits after "
                 f"{POSITION} tokens correlate with PyTorch's float ones at {corr:.4f}")
    return path


def bench(config: str, base: torch.nn.Module, threads: list[int], runs: int, compile_: bool, executorch: bool,
          gguf: Path | None, notes: list[str]) -> list[dict]:
    """The rows of one config: {config, threads, contender, decode_ms, prefill_ms (None: not timed)}."""
    model = quantized(base, config)
    rss_before = resident_mib()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        decoder = llm.convert_decoder(model, max_cache_len=CACHE, prefill_chunk=PREFILL_CHUNK)
    notes.append(f"{config}: converted in {time.perf_counter() - start:.1f} s (the step and the prefill module)")
    state = decoder.initial_state
    token, position = np.array([[7]], np.int64), np.array([POSITION], np.int64)
    for t in threads:  # the executors of every thread count, made before the params they packed are freed
        decoder.module.run(*state, token, position, threads=t)
        decoder.prefill.run(*state, np.zeros((1, PREFILL_CHUNK), np.int64), np.arange(PREFILL_CHUNK, dtype=np.int64),
                            threads=t)
    storage = decoder.module.value_storage_bytes() + decoder.prefill.value_storage_bytes()
    freed = decoder.release_packed_params()
    held = decoder.weight_bytes()
    values, stored = payload_bytes(model, 4 if config == "8da4w" else 8)
    weights = held["params"] + held["packed"]
    notes.append(f"{config}: memory: the weights hold {values / 2**20:.0f} MiB of quantized values at their bits, "
                 f"{stored / 2**20:.0f} MiB with their scales and zero points and the tensors left in float; qnnpy's "
                 f"runtime holds {weights / 2**20:.0f} MiB of weights ({held['packed'] / 2**20:.0f} MiB packed for its "
                 f"kernels, {held['params'] / 2**20:.0f} MiB of params it reads in place), {weights / stored:.2f}x the "
                 f"torchao model's, after release_packed_params freed {freed / 2**20:.0f} MiB (the step and prefill "
                 "modules share every param and packed weight); the process grew by "
                 f"{resident_mib() - rss_before:.0f} MiB over converting, preparing both modules at "
                 f"{'/'.join(map(str, threads))} thread(s) and running them once, of which {storage / 2**20:.0f} MiB "
                 "hold the values between runs (each executor's buffers, shared by values alive at different times; "
                 "the rest is what converting leaves)")
    step = llm.static_cache_module(model, CACHE)
    prompt = torch.randint(0, 32000, (1, PREFILL), generator=torch.Generator().manual_seed(0))
    compiled = None
    if compile_:
        compiled = torch.compile(step, fullgraph=False)
        start = time.perf_counter()
        with torch.no_grad():
            got = compiled(input_ids=torch.tensor([[7]]), cache_position=torch.tensor([POSITION])).flatten()
            expected = step(input_ids=torch.tensor([[7]]), cache_position=torch.tensor([POSITION])).flatten()
        notes.append(f"{config}: torch.compile of the step compiled in {time.perf_counter() - start:.0f} s")
        agreement = float(np.corrcoef(got.numpy(), expected.numpy())[0, 1])
        if not agreement > 0.99:
            notes.append(f"{config}: torch.compile left out: its logits are not eager's (correlation {agreement:.3f}, "
                         f"max |difference| {float((got - expected).abs().max()):.3g} against a largest |logit| of "
                         f"{float(expected.abs().max()):.3g})")
            compiled = None
    lowered = executorch_step(base, notes, config) if executorch else None
    if lowered is not None:
        notes.append(f"{config}: ExecuTorch's XNNPACK runs {executorch_threads()} thread(s) (its own choice), so it "
                     "has a row for that thread count only")
    rows = []
    for t in threads:
        torch.set_num_threads(t)

        decoder.threads = t
        decoder.start()  # the cache the runtime holds, as generate() runs

        def qnnpy_step() -> object:
            return decoder.forward([7], POSITION)

        def qnnpy_prefill() -> None:
            for p in range(0, PREFILL, PREFILL_CHUNK):
                decoder.forward(prompt[0, p:p + PREFILL_CHUNK].tolist(), p)

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
        if lowered is not None and executorch_threads() == t:
            decode["ExecuTorch XNNPACK"] = lowered
        if gguf is not None:
            peer = llama_cpp_peer.LlamaCpp(gguf, CACHE, t, PREFILL)
            kind = gguf.stem.split("-")[-1]
            decode[f"llama.cpp {kind}"] = peer.decode_at(POSITION)
            prefill[f"llama.cpp {kind}"] = peer.prefill(prompt[0].tolist())
        d = medians(decode, runs)
        p = medians(prefill, max(3, runs // 5))
        for name in decode:
            rows.append({"config": config, "threads": t, "contender": name, "decode_ms": d[name],
                         "prefill_ms": p.get(name)})
        print(f"[bench] {config}, {t} thread(s): decode {d}, prefill {p}", flush=True)
    return rows


def resident_mib() -> float:
    """The process's resident memory (Linux /proc/self/statm), MiB, after a garbage collection and glibc's
    malloc_trim (so that memory freed since is not counted)."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def markdown(result: dict) -> list[str]:
    """The CPU's section of RESULTS.md."""
    lines = [f"## LLM decode: {result['cpu']}", "",
             f"Generated by `bench_llm_decode.py` on {result['date']}: torch {result['torch']}; a Llama of "
             f"{result['layers']} layers (hidden 2048, intermediate 5632, vocab 32000, random weights), batch 1, static "
             f"cache of {CACHE}; decode: one token at position {POSITION}, median of {result['runs']} interleaved rounds; "
             f"prefill: {PREFILL} tokens (PyTorch and llama.cpp in one call, qnnpy in {PREFILL // PREFILL_CHUNK} call(s) of its prefill module of {PREFILL_CHUNK} tokens); load "
             f"average before {result['load_average'][0]}, after {result['load_average'][1]}. Plot: "
             "[llm_decode.png](llm_decode.png).", "",
             "| config | threads | contender | decode (ms per token) | prefill of 128 (ms) |", "|---|---|---|---|---|"]
    for r in result["rows"]:
        prefill = f"{r['prefill_ms']:.0f}" if r["prefill_ms"] is not None else "-"
        lines.append(f"| {r['config']} | {r['threads']} | {r['contender']} | {r['decode_ms']:.2f} | {prefill} |")
    return lines + ["", "Notes:", "", *[f"- {n}" for n in result["notes"]], ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--compile", action="store_true", help="also time torch.compile of PyTorch's step")
    parser.add_argument("--executorch", action="store_true",
                        help="also time the step lowered to ExecuTorch's XNNPACK delegate (decode only)")
    parser.add_argument("--llama-cpp", action="store_true",
                        help="also time llama.cpp (llama-cpp-python) on the same float model written to GGUF")
    parser.add_argument("--save", action="store_true",
                        help="write this CPU's results (benchmarks/results/llm/), its section of benchmarks/RESULTS.md "
                             "and the plot")
    args = parser.parse_args()
    cpu = cpu_model()
    before = load_average()
    base = llama(args.layers)
    notes: list[str] = []
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as directory:
        for config in ("w8a8", "8da4w"):
            gguf = llama_cpp_file(base, config, notes, Path(directory)) if args.llama_cpp else None
            rows += bench(config, base, args.threads, args.runs, args.compile, args.executorch, gguf, notes)
    if args.llama_cpp and llama_cpp_peer.available() is None:
        notes.append(f"llama.cpp build: {llama_cpp_peer.system_info()}")
    result = {"cpu": cpu, "cpu_key": cpu_key(cpu), "torch": torch.__version__, "layers": args.layers,
              "runs": args.runs, "date": f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
              "load_average": [before, load_average()], "rows": rows, "notes": notes}
    lines = markdown(result)
    print("\n".join(lines))
    if args.save:
        LLM_RESULTS.mkdir(parents=True, exist_ok=True)
        (LLM_RESULTS / f"{result['cpu_key']}.json").write_text(json.dumps(result, indent=1) + "\n")
        key = f"<!-- bench_llm_decode:{result['cpu_key']}"
        begin, end = f"{key}:begin -->", f"{key}:end -->"
        text = RESULTS_MD.read_text()
        section = "\n".join([begin, *lines, end])
        if begin in text and end in text:
            text = text[:text.index(begin)] + section + text[text.index(end) + len(end):]
        else:
            text = text.rstrip("\n") + "\n\n" + section + "\n"
        RESULTS_MD.write_text(text)
        plot_llm_decode.plot(LLM_RESULTS, PLOT)
        print(f"[bench] wrote {RESULTS_MD}, {LLM_RESULTS} and {PLOT}")


if __name__ == "__main__":
    main()

"""Single-image latency: qnnpy against every PyTorch path this machine has, the fastest of them the peer.

Run: .venv/bin/python -P benchmarks/bench_latency.py [--runs 15] [--threads 1 2] [--save | --save-to DIR]
     [--also-isa avx512vnni] [--no-pt2e] [--no-tvm] [--models resnet18 mobilenet_v2] [--avx2 | --avxvnni]

Contenders, per model (torchvision ResNet-18 and MobileNetV2, weights=None, 1x3x224x224) and thread count:
qnnpy's runtime (fbgemm profile, its default kernels: amx, avx512vnni, ...; --also-isa adds another set), the
TVM kernels form of the same module where TVM and the kernel library are installed, its TVM integer form (code
TVM generates with qnnpy's schedule rules, for this CPU), PyTorch eager under each
quantized engine the build has among fbgemm, onednn and x86 (each on a model quantized for it), and PT2E
(X86InductorQuantizer) + torch.compile with freezing (benchmarks/pytorch_paths.py). All of one thread count run
in one process, interleaved round by round; medians. The headline is qnnpy's runtime over the fastest PyTorch
path, per model and thread count. Also: the load average, the register-only ceilings of the u8 x s8
instructions, and for 1 thread qnnpy's time per kernel kind and its slowest layers against the ceiling of the
kernel each used.

--save writes benchmarks/results/<cpu>.json and this CPU's section of benchmarks/RESULTS.md (speed_table.py
makes the README's table from the JSON files); --save-to DIR writes both into DIR instead (the device script).
--avx2 runs every contender on its AVX2 code: qnnpy's avx2 kernel set (QNNPY_ISA), FBGEMM's AVX2 kernels
(FBGEMM_ENABLE_INSTRUCTIONS) and ATen's (ATEN_CPU_CAPABILITY), the way an AVX2-only CPU would, on a CPU that has
more; it is not a measurement of an AVX2-only CPU. --avxvnni does the same with qnnpy on its avxvnni set.
"""
from __future__ import annotations

import argparse
import collections
import datetime
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Callable

import numpy as np
import torch

import qnnpy
from qnnpy import _core

sys.path.insert(0, str(Path(__file__).resolve().parent))
import latency_results  # noqa: E402
from pytorch_paths import PyTorchPaths  # noqa: E402


# The variables that put each contender on its AVX2 code (--avx2; --avxvnni sets QNNPY_ISA=avxvnni).
AVX2_ENV = (("QNNPY_ISA", "avx2"), ("FBGEMM_ENABLE_INSTRUCTIONS", "AVX2"), ("ATEN_CPU_CAPABILITY", "avx2"))


def cpu_model() -> str:
    """The CPU's model name with its family / model numbers and the SIMD flags the kernels use (the model
    name alone, e.g. "AMD EPYC", does not tell a Zen 3 from a Zen 5)."""
    fields: dict[str, str] = {}
    try:
        for line in open("/proc/cpuinfo"):
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        return platform.processor() or "unknown"
    flags = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_tile", "amx_int8", "asimddp")
             if f in fields.get("flags", "").split()]
    name = fields.get("model name", platform.processor() or "unknown")
    return f"{name} (family {fields.get('cpu family', '?')} model {fields.get('model', '?')}; {' '.join(flags) or 'no SIMD flags'})"


def interleaved_medians(contenders: dict[str, tuple[Callable[[], None], Callable[[], object]]], runs: int,
                        warmup: int = 3) -> dict[str, float]:
    """Median ms of each contender's call, measured in interleaved rounds so that a change
    in the machine's load affects all of them alike. Each contender is (setup, call);
    setup (e.g. selecting PyTorch's engine) is not timed. In each round a contender's
    timed call follows an untimed one, so every figure is a steady-state (warm caches,
    awake worker threads) latency, as if the contender ran alone in a loop."""
    for setup, call in contenders.values():
        setup()
        for _ in range(warmup):
            call()
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(runs):
        for name, (setup, call) in contenders.items():
            setup()
            # PyTorch's qnnpack worker threads keep spinning for ~10 ms after a run and
            # would take the second core from the next contender.
            time.sleep(0.05)
            call()
            t = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) * 1e3 for name, ts in times.items()}


def conv_macs(module: qnnpy.QDQModule) -> dict[int, float]:
    """MACs of each conv/linear node, by node index."""
    values = {v["name"]: v for v in module.graph.values()}
    params = module.params
    macs = {}
    for i, n in enumerate(module.nodes()):
        if n["op"] in ("conv2d", "linear"):
            w = params[n["params"]["weight"]]
            out = values[n["output"]]["shape"]
            pixels = int(np.prod(out)) // w.shape[0]
            macs[i] = pixels * w.size
    return macs


def load_average() -> str:
    return "/".join(f"{v:.2f}" for v in os.getloadavg())


MODELS = {"resnet18": "ResNet-18", "mobilenet_v2": "MobileNetV2"}


def ceilings() -> dict[str, float]:
    """GMAC/s of the register-only loops of one core (0 where the CPU or build has none)."""
    return {"AVX2 u8 x s8 (vpmaddubsw)": _core.peak_u8s8_gmacs(0.5), "int16 (vpmaddwd)": _core.peak_madd_gmacs(0.5),
            "vpdpbusd ymm": _core.peak_avxvnni_gmacs(0.5), "vpdpbusd zmm": _core.peak_vnni_gmacs(0.5),
            "AMX tdpbusd": _core.peak_amx_gmacs(0.5)}


def u8s8_ceiling(isa: str, peaks: dict[str, float]) -> float:
    """The ceiling of the u8 x s8 kernels (GEMM, depthwise quads) of a kernel set."""
    return {"amx": peaks["AMX tdpbusd"], "avx512vnni": peaks["vpdpbusd zmm"],
            "avxvnni": peaks["vpdpbusd ymm"]}.get(isa, peaks["AVX2 u8 x s8 (vpmaddubsw)"])


def kernels_form(module: qnnpy.QDQModule, xn: np.ndarray, notes: list[str]) -> Callable[[np.ndarray], object] | None:
    """The TVM kernels form of the module (fbgemm profile), checked bit-identical to the runtime, or None."""
    try:
        from qnnpy.tvm_bridge import kernel_form
        runner = kernel_form.build(module, profile="fbgemm")
    except (ImportError, FileNotFoundError) as e:
        notes.append(f"qnnpy kernels form: not run ({type(e).__name__}: {str(e).splitlines()[0]})")
        return None
    if not np.array_equal(runner(xn), module.run(xn, profile="fbgemm").dequantized):
        raise AssertionError("the kernels form and the runtime differ")
    return runner


def integer_form(module: qnnpy.QDQModule, xn: np.ndarray) -> Callable[[np.ndarray], object]:
    """The TVM integer form compiled by TVM itself with qnnpy's schedule rules for this CPU (fbgemm profile),
    checked bit-identical to the runtime."""
    from qnnpy import tvm_bridge
    runner = tvm_bridge.build(module, form="integer", profile="fbgemm", target="host")
    if not np.array_equal(runner(xn), module.run(xn, profile="fbgemm").dequantized):
        raise AssertionError("the integer form and the runtime differ")
    return runner


def qnnpy_contenders(module: qnnpy.QDQModule, xn: np.ndarray, threads: int, isas: list[str],
                     kernels: Callable | None, integer: Callable | None,
                     ) -> dict[str, tuple[Callable[[], None], Callable[[], object]]]:
    def run(isa: str) -> Callable[[], object]:
        return lambda: module.run(xn, profile="fbgemm", threads=threads, isa=isa)

    calls = {latency_results.QNNPY_RUNTIME: (lambda: None, run(isas[0]))}
    calls.update({f"qnnpy runtime ({isa})": (lambda: None, run(isa)) for isa in isas[1:]})
    if kernels is not None:
        from qnnpy.tvm_bridge import kernel_form
        calls["qnnpy kernels form"] = (lambda: kernel_form.set_num_threads(threads), lambda: kernels(xn))
    if integer is not None:
        from qnnpy import tvm_bridge
        calls[latency_results.TVM_INTEGER_FORM] = (lambda: tvm_bridge.set_num_threads(threads), lambda: integer(xn))
    return calls


def layer_breakdown(name: str, module: qnnpy.QDQModule, xn: np.ndarray, runs: int, peaks: dict[str, float]) -> list[str]:
    """qnnpy's single-thread time per kernel kind, and its ten slowest layers against their kernel's ceiling."""
    executor = _core.Executor(module.graph, "fbgemm", "", 1)
    per_node = []
    for _ in range(max(5, runs // 2)):
        executor.run([xn], False)
        per_node.append(executor.node_seconds())
    kernels = executor.node_kernels()
    seconds = np.median(np.array(per_node), axis=0)
    nodes = module.nodes()
    by_kind = collections.defaultdict(lambda: [0.0, 0])
    for i, n in enumerate(nodes):
        kind = kernels[i] or n["op"]
        by_kind[kind][0] += seconds[i]
        by_kind[kind][1] += 1
    total = seconds.sum()
    lines = [f"{name}, qnnpy, 1 thread, per node (median of {len(per_node)} runs, `{_core.default_isa()}`): "
             f"total {total * 1e3:.2f} ms.", "", "| kernel / op | nodes | ms | share |", "|---|---|---|---|"]
    for kind, (t, count) in sorted(by_kind.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"| {kind} | {count} | {t * 1e3:.2f} | {t / total:.0%} |")
    lines += ["", "| layer | kernel | GMAC | ms | GMAC/s | % of the kernel's ceiling |", "|---|---|---|---|---|---|"]
    macs = conv_macs(module)
    u8s8_peak = u8s8_ceiling(_core.default_isa(), peaks)
    for i in sorted(macs, key=lambda i: -seconds[i])[:10]:
        rate = macs[i] / seconds[i] / 1e9
        u8s8 = kernels[i].startswith("gemm_u8s8") or kernels[i] == "depthwise_quads"
        peak = u8s8_peak if u8s8 else peaks["int16 (vpmaddwd)"]
        lines.append(f"| {nodes[i]['source']} | {kernels[i]} | {macs[i] / 1e9:.3f} | {seconds[i] * 1e3:.2f} | "
                     f"{rate:.1f} | {rate / peak:.0%} |")
    return lines + [""]


def bench_model(model: str, runs: int, thread_counts: list[int], isas: list[str], pt2e: bool, tvm: bool,
                peaks: dict[str, float], notes: list[str]) -> tuple[dict[str, dict[str, float]], list[str], float]:
    """{threads: {contender: median ms}}, the per-layer lines, and how long the kernels form took to build."""
    x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    xn = x.numpy()
    paths = PyTorchPaths(model, x, pt2e)
    # qnnpy converts the fbgemm-quantized eager model (its fbgemm profile equals that engine, bit for bit).
    fbgemm = paths.eager.get("fbgemm") or next(iter(paths.eager.values()))
    module = qnnpy.from_torch(fbgemm, (x,))
    start = time.perf_counter()
    kernels = kernels_form(module, xn, notes) if tvm else None
    build_s = time.perf_counter() - start
    integer = None
    if tvm:
        start = time.perf_counter()
        integer = integer_form(module, xn)
        notes.append(f"{MODELS[model]}: qnnpy TVM integer form (TVM's own code, qnnpy's schedule rules, target host) "
                     f"built in {time.perf_counter() - start:.1f} s")
    else:
        notes.append("qnnpy kernels and integer forms: not run (--no-tvm)")
    result = {}
    for threads in thread_counts:
        contenders = qnnpy_contenders(module, xn, threads, isas, kernels, integer)
        for p in paths.contenders(threads):
            contenders[p.name] = (lambda p=p: p.setup(threads), p.call)
        print(f"[bench] {MODELS[model]}, {threads} thread(s): {', '.join(contenders)}", flush=True)
        with torch.no_grad():
            result[str(threads)] = interleaved_medians(contenders, runs)
        print(f"[bench] {result[str(threads)]}", flush=True)
    notes += [f"{MODELS[model]}: {note}" for note in paths.notes]
    return result, layer_breakdown(MODELS[model], module, xn, runs, peaks), build_s


def write_report(lines: list[str], out: str | None) -> None:
    """Prints the markdown report and, with ``out``, writes it there too."""
    report = "\n".join(lines)
    print(report)
    if out:
        with open(out, "w") as f:
            f.write(report + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--also-isa", action="append", default=[],
                        help="time qnnpy's runtime on this kernel set too (e.g. avx512vnni next to amx)")
    parser.add_argument("--no-pt2e", action="store_true", help="leave out PT2E + torch.compile")
    parser.add_argument("--no-tvm", action="store_true", help="leave out the TVM kernels and integer forms")
    save = parser.add_mutually_exclusive_group()
    save.add_argument("--save", action="store_true",
                      help="write benchmarks/results/<cpu>.json and this CPU's section of benchmarks/RESULTS.md")
    save.add_argument("--save-to", type=Path, help="write <cpu>.json and RESULTS.md into this folder instead")
    isa = parser.add_mutually_exclusive_group()
    isa.add_argument("--avx2", action="store_true", help="run qnnpy, FBGEMM and ATen on their AVX2 code")
    isa.add_argument("--avxvnni", action="store_true",
                     help="run FBGEMM and ATen on their AVX2 code and qnnpy on its avxvnni kernels")
    args = parser.parse_args()
    if args.avx2 or args.avxvnni:
        env = dict(AVX2_ENV, QNNPY_ISA="avxvnni" if args.avxvnni else "avx2")
        if any(os.environ.get(k) != v for k, v in env.items()):
            # FBGEMM and ATen read their variables once, at their first call: start again with them set.
            os.execve(sys.executable, [sys.executable, "-P", *sys.argv], dict(os.environ, **env))
    warnings.filterwarnings("ignore")
    peaks = ceilings()
    try:
        import tvm
        tvm_version = tvm.__version__
    except ImportError:
        tvm_version = None
    forced = ", ".join(f"{k}={os.environ[k]}" for k, _ in AVX2_ENV if k in os.environ)
    notes = [f"kernels forced: {forced}"] if forced else []
    result = {"cpu": cpu_model(), "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "torch": torch.__version__, "tvm": tvm_version, "qnnpy_isa": _core.default_isa(), "runs": args.runs,
              "input": "1x3x224x224", "ceilings_gmacs": peaks, "notes": notes, "models": {}, "layers": []}
    result["cpu_key"] = latency_results.cpu_key(result["cpu"])
    load_before = load_average()
    isas = [_core.default_isa(), *[i for i in args.also_isa if i != _core.default_isa()]]
    for model in args.models:
        print(f"[bench] {MODELS[model]}: building the models", flush=True)
        times, layers, build_s = bench_model(model, args.runs, args.threads, isas, not args.no_pt2e, not args.no_tvm,
                                             peaks, notes)
        result["models"][MODELS[model]] = times
        result["layers"] += layers
        if not args.no_tvm:
            notes.append(f"{MODELS[model]}: qnnpy kernels form built in {build_s:.1f} s")
    result["load_average"] = {"before": load_before, "after": load_average()}
    print("\n".join(latency_results.markdown(result)))
    if args.save or args.save_to:
        folder = args.save_to or latency_results.RESULTS_DIR
        print(f"[bench] wrote {latency_results.save(result, folder)}")
        latency_results.update_results_md(result, folder / "RESULTS.md" if args.save_to else latency_results.RESULTS_MD)


if __name__ == "__main__":
    main()

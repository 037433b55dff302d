"""Convert torchvision's models of every task, Hugging Face's BERT, GPT-2 and ViT, and torchao's quantize_ configs
on an MLP and tiny Llama, Qwen2 and BERT models with qnnpy and write what converts: docs/model_coverage.md (every model and quantizer, with the measurements of tests/model_sweep.py),
docs/model_coverage.json (the same, for regenerating the tables) and the README's short table between its
coverage markers. Results are saved after every model, so an interrupted sweep resumes where it stopped.

    python scripts/model_sweep.py                 # everything (hours on 2 cores)
    python scripts/model_sweep.py --models resnet18,swin_t --quantizers x86
    python scripts/model_sweep.py --tables-only   # rewrite the tables from docs/model_coverage.json
    python scripts/model_sweep.py --torchao-only  # measure the torchao table only (minutes), then rewrite the tables
    python scripts/model_sweep.py --tasks video,optical_flow   # measure those tasks only (tests/task_sweep.py)
    python scripts/model_sweep.py --timm deit_tiny_patch16_224 --quantizers xnnpack   # printed only; needs timm
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import re
import sys
import time
import traceback
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import torch  # noqa: E402

DOCS = ROOT / "docs" / "model_coverage.md"
RESULTS = ROOT / "docs" / "model_coverage.json"
README = ROOT / "README.md"
QUANTIZERS = ("x86", "xnnpack")
HF_FLOWS = ("dynamic", "x86", "xnnpack")
TORCHAO_MODELS = ("mlp", "llama", "qwen2", "bert")


def cpu_name() -> str:
    """The CPU's model name with its family and model numbers ("AMD EPYC" alone names a Zen 3 and a Zen 5 alike)."""
    fields: dict[str, str] = {}
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []:
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    if "model name" not in fields:
        return platform.processor() or "unknown CPU"
    return f"{fields['model name']} (family {fields.get('cpu family', '?')} model {fields.get('model', '?')})"


def _load() -> dict:
    return json.loads(RESULTS.read_text()) if RESULTS.exists() else {"torchvision": {}, "transformers": {}}


def _save(results: dict) -> None:
    RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")


def _record(results: dict, part: str, key: str, measure: Callable[[], dict], names: dict) -> None:
    """results[part][key] = measure(), or ``names`` with the error it raised, with the time it took and the date;
    saved at once, so that an interrupted sweep resumes after it."""
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outcome = measure()
    except Exception as e:  # noqa: BLE001  (a failure is a result of the sweep, recorded with its message)
        outcome = {**names, "error": f"{type(e).__name__}: {str(e)[:400]}"}
        traceback.print_exc(limit=2)
    outcome["sweep_seconds"] = time.perf_counter() - start
    outcome["date"] = time.strftime("%Y-%m-%d")
    outcome["cpu"] = cpu_name()
    results.setdefault(part, {})[key] = outcome
    _save(results)
    print(f"[sweep] {key}: {'error' if 'error' in outcome else 'ok'} in {outcome['sweep_seconds']:.0f} s", flush=True)


def sweep_torchvision(models: list[str], quantizers: list[str], other_forms: str, results: dict) -> None:
    import model_sweep

    for name in models:
        for kind in quantizers:
            key = f"{name}:{kind}"
            if key in results["torchvision"]:
                continue
            forms = other_forms == "all" or (other_forms == "families" and name in model_sweep.FAMILIES)
            _record(results, "torchvision", key, lambda: dataclasses.asdict(model_sweep.measure(
                name, kind, reference=True, other_forms=forms)), {"model": name, "quantizer": kind})


def sweep_transformers(results: dict) -> None:
    import numpy as np

    import hf_models
    import qnnpy

    for name in hf_models.MODELS:
        for flow in HF_FLOWS:
            key = f"{name}:{flow}"
            if key in results["transformers"]:
                continue
            outcome: dict = {"model": name, "flow": flow, "date": time.strftime("%Y-%m-%d")}
            step = "PyTorch's quantization"
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = hf_models.dynamic(name) if flow == "dynamic" else hf_models.pt2e(name, flow)
                    step = "qnnpy"
                    x = hf_models.inputs(name, 1, seed=3)[0]
                    module = qnnpy.from_torch(model, hf_models.inputs(name, 1)[0])
                    with torch.no_grad():
                        theirs = [t.numpy() for t in torch.utils._pytree.tree_leaves(model(*x))]
                    ours = [o.dequantized for o in module.run(*(t.numpy() for t in x), profile="fbgemm").outputs]
                outcome["outputs"] = [o["name"] for o in module.output_info]
                outcome["max_relative"] = max(float(np.abs(o - t).max() / np.abs(t).max()) for o, t in zip(ours, theirs))
            except Exception as e:  # noqa: BLE001
                outcome["error"] = f"in {step}: {type(e).__name__}: {str(e)[:400]}"
            results["transformers"][key] = outcome
            _save(results)
            print(f"[sweep] {key}: {'error' if 'error' in outcome else 'ok'}", flush=True)


def _torchao_outcome(name: str, config: str) -> dict:
    """One torchao config on one model of TORCHAO_MODELS, as sweep_torchao records it."""
    import numpy as np
    from torchao.quantization import quantize_

    import qnnpy
    import torchao_models

    try:
        if name == "mlp":
            model = torchao_models.quantized_mlp(config)
            x = torch.randn(2, 5, 64, generator=torch.Generator().manual_seed(3))
        else:
            model = torchao_models.tiny_lm(name)
            quantize_(model, torchao_models.CONFIGS[config]())
            x = torch.randint(0, 256, (1, 12), generator=torch.Generator().manual_seed(3))
    except Exception as e:
        raise RuntimeError(f"in torchao's quantize_, before qnnpy: {type(e).__name__}: {e}") from e
    start = time.perf_counter()
    module = qnnpy.from_torch(model, (x,))
    seconds = time.perf_counter() - start
    with torch.no_grad():
        out = model(x)
    if isinstance(out, torch.Tensor):
        theirs = [out.numpy()]
    else:  # a decoder's logits (not its cache), an encoder's every output
        theirs = [out.logits.numpy()] if hasattr(out, "logits") else [t.numpy() for t in out.values()]
    ours = [o.dequantized for o in module.run(x.numpy()).outputs]
    if len(ours) != len(theirs):
        raise ValueError(f"{len(ours)} outputs where PyTorch gives {len(theirs)}")
    return {"model": name, "config": config, "seconds": seconds,
            "max_relative": max(float(np.abs(o - t).max() / np.abs(t).max()) for o, t in zip(ours, theirs))}


def sweep_torchao(results: dict) -> None:
    """Each torchao config of tests/torchao_models.py on each model of TORCHAO_MODELS: converts, the largest
    difference of any output from the quantized model's own run relative to its range, from_torch's seconds."""
    import torchao_models

    for name in TORCHAO_MODELS:
        for config in torchao_models.CONFIGS:
            key = f"{name}:{config}"
            if key not in results.get("torchao", {}):
                _record(results, "torchao", key, lambda: _torchao_outcome(name, config),
                        {"model": name, "config": config})


def sweep_tasks(tasks: list[str], quantizers: list[str], results: dict) -> None:
    """Every model of each task (tests/task_sweep.py) under each quantizer, saved after each."""
    import task_sweep

    for task in tasks:
        for name in task_sweep.models(task):
            for kind in quantizers:
                key = f"{task}:{name}:{kind}"
                if key not in results.get("tasks", {}):
                    _record(results, "tasks", key, lambda: task_sweep.measure(task, name, kind),
                            {"task": task, "model": name, "quantizer": kind})


def _task_rows(task: str, measured: dict) -> list[str]:
    """One row per model of the task and quantizer: its measurement, its error, or that it was not measured yet."""
    import task_sweep

    rows = []
    for name in task_sweep.models(task):
        for kind in task_sweep.QUANTIZERS:
            o = measured.get(f"{task}:{name}:{kind}")
            if o is None:
                rows.append(f"| `{name}` | {kind} | not measured yet | | | | | | |")
            elif "error" in o:
                rows.append(f"| `{name}` | {kind} | no: {o['error'][:200]} | | | | | | |")
            else:
                deployment = (f"{100 * o['reference_distance']:.2f}% ({o['reference']})"
                              if o.get("reference") and not o["reference"].startswith("not run") else o.get("reference") or "-")
                rows.append(f"| `{name}` | {kind} | yes | {o['quantized_ops']} | {100 * o['distance']:.2f}% | "
                            f"{100 * o['floor_distance']:.2f}% | {deployment} | "
                            f"{'yes' if o['within_bound'] else '**no**'} | {o['seconds']:.1f} |")
    return rows


def _torchao_row(o: dict) -> str:
    if "error" in o:
        return f"| {o['model']} | `{o['config']}` | no: {o['error'][:200]} | | |"
    return f"| {o['model']} | `{o['config']}` | yes | {o['max_relative']:.1e} | {o['seconds']:.2f} |"


def _family(name: str) -> str:
    return re.sub(r"(_v\d)?(_|\d).*$", "", name) if not name.startswith("wide_") else "wide_resnet"


def _ok(o: dict) -> bool:
    """The checks of tests/test_model_sweep.py, on a saved outcome."""
    import model_sweep

    return "error" not in o and o["quantized_layers"] >= 5 and o.get("output_range") != 0 \
        and o["min_identical"] >= 0.999 and o["max_lsb"] <= 1 \
        and o["top1_equal"] and o["max_float_relative"] <= model_sweep.FLOAT_RELATIVE \
        and o.get("kernels_form_equal") is not False and o.get("other_forms_run") is not False \
        and (not model_sweep.computes_in_int8(o["reference"])
             or o["distance"] <= model_sweep.distance_bound(o["reference_distance"], o["floor_distance"]))


def _top1_of_pytorch(o: dict) -> str:
    """Whether PyTorch's deployment's top-1 equals eager's too, where qnnpy's does not."""
    same = o.get("reference_top1_equal")
    return "" if o["top1_equal"] or same is None else f" (PyTorch's deployment: {'yes' if same else 'no'})"


def _torchvision_row(o: dict) -> str:
    if "error" in o:
        return f"| `{o['model']}` | {o['quantizer']} | no: {o['error'].replace('|', '/')[:160]} | | | | | | | | |"
    return (f"| `{o['model']}` | {o['quantizer']} | {'yes' if _ok(o) else 'converts; checks fail'} | "
            f"{o['quantized_layers']}: {100 * o['min_identical']:.2f}%, {o['max_lsb']} | {o['max_float_relative']:.1e} | "
            f"{'yes' if o['top1_equal'] else 'no'}{_top1_of_pytorch(o)} | {100 * o['distance']:.2f}% | "
            f"{100 * o['reference_distance']:.2f}% ({o['reference']}) | {100 * o['floor_distance']:.2f}% | "
            f"{'=' if o.get('kernels_form_equal') else o.get('kernels_form_equal')} | "
            f"{ {True: 'run', False: 'FAIL', None: '-'}[o.get('other_forms_run')] } | {o['seconds']:.1f} |")


def tables(results: dict) -> tuple[str, str]:
    """The docs page and the README's short table."""
    import model_sweep
    import task_sweep

    tv, hf, ao = results["torchvision"], results["transformers"], results.get("torchao", {})
    measured_tasks = results.get("tasks", {})
    dates = sorted({o.get("date", results.get("date", "")) for o in [*tv.values(), *hf.values()]} - {""})
    header = (f"Measured on {results.get('cpu', cpu_name())} with torch {results.get('torch', torch.__version__)}, "
              f"{' to '.join(dict.fromkeys([dates[0], dates[-1]])) if dates else 'no date'}.")

    def measured_on(entries: list[dict]) -> str:
        """The CPUs and dates of a part measured apart from the classification sweep."""
        cpus = sorted({o.get("cpu", "an unrecorded CPU") for o in entries})
        days = sorted({o.get("date", "") for o in entries} - {""})
        return f"Measured on {', '.join(cpus) or 'no CPU yet'}, {' to '.join(dict.fromkeys(days[:1] + days[-1:])) or 'no date'}."
    hf_rows = [f"| {o['model']} | {o['flow']} | " + (f"no: {o['error'][:200]}" if "error" in o else
               f"yes | {', '.join(o['outputs'])} | {o['max_relative']:.1e}") + " |" for o in hf.values()]
    passed = sum(_ok(o) for o in tv.values())
    swept = {o["model"] for o in tv.values()}
    every = model_sweep.classification_models()
    missing = [f"{m} ({', '.join(k for k in QUANTIZERS if f'{m}:{k}' not in tv)})" for m in every
               if any(f"{m}:{k}" not in tv for k in QUANTIZERS)]
    measured = [o for o in tv.values() if "error" not in o]
    no_further = sum(o["distance"] <= max(o["reference_distance"], o["floor_distance"]) + model_sweep.FLOAT_RELATIVE
                     for o in measured)
    page = "\n".join([
        "# Models that convert",
        "",
        "Generated by `scripts/model_sweep.py` (the measurements of `tests/model_sweep.py`). " + header,
        "",
        "torchvision's classification models with `weights=None` and real batch-norm statistics, quantized with",
        "PT2E (X86InductorQuantizer, the XNNPACK quantizer), converted and run in qnnpy's runtime under profile",
        "fbgemm. Quantized layers fed PyTorch's own inputs: how many, the smallest share identical and the largest",
        "difference in steps; float layers: the largest difference relative to the tensor's range; end to end:",
        "top-1 equal, and the largest difference from PyTorch's eager output relative to the output's range: qnnpy's,",
        "PyTorch's int8 deployment's (torch.compile for X86; ExecuTorch's XNNPACK delegate for XNNPACK where it",
        "lowers, else torch.compile) and PyTorch's eager run's without oneDNN or with the math attention backend (the further). Where PyTorch's deployment ran int8",
        "kernels (torch.compile with freezing, ExecuTorch), qnnpy's passes within twice the further of those two",
        "(`tests/model_sweep.py` says why); elsewhere PyTorch computed in float as eager does, and the distance is",
        "reported, not checked. Where an output's range is a few quantization",
        "steps (random weights can leave the logits within a step or two of 0), one step reads as 50 to 100%.",
        "Then TVM's kernels form against the runtime; TVM's integer and qdq forms built and run (`-` where the",
        "sweep did not build them: it builds them for the models of the test suite's default run); seconds:",
        "`qnnpy.from_torch`'s. Left out: " + ", ".join(f"{name} ({why})" for name, why in model_sweep.LEFT_OUT.items())
        + ".",
        "",
        *([f"Not measured yet: {len(missing)} of torchvision's {len(every)} models under the quantizers named (the sweep "
           "takes minutes per model and quantizer on 2 cores; `scripts/model_sweep.py --models ...` adds them): " + ", ".join(missing) + ".",
           ""] if missing else []),
        f"**{passed} of {len(tv)} model / quantizer pairs measured convert and pass every check** ({len(swept)} "
        f"models). End to end, qnnpy's output is no further from PyTorch's eager output than the further of",
        f"PyTorch's own two paths (to float rounding, 1e-5) on {no_further} of the {len(measured)} that convert.",
        "",
        "| model | quantizer | converts | quantized layers: identical, max steps | float layers | top-1 | distance "
        "| PyTorch's deployment | eager without oneDNN / math attention | TVM kernels | integer, qdq | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        *(_torchvision_row(tv[key]) for key in sorted(tv)),
        "",
        "torchvision's other tasks (`tests/task_sweep.py`): every model `torchvision.models.list_models` names for",
        "segmentation, video, optical flow and detection, random weights and the batch-norm statistics of noise, at",
        "the smallest input each takes (segmentation 64 x 64; clips of 8 x 32 x 32, S3D and MViT 16 x 224 x 224,",
        "Swin3D 8 x 112 x 112; RAFT a 128 x 128 pair, 4 flow updates; detectors 256-pixel images, SSDs their own size),",
        "exported (strict), cleared of dead code (`qnnpy.pt2e_fixups.dead_code_removed`), quantized by PT2E and",
        "converted; a detector as the body `qnnpy.detection` makes of it (backbone, feature pyramid",
        "and heads, anchors as constants; box decoding and NMS stay the user's code: [convert.md](convert.md)). Quantized ops",
        "in the module; end to end, the largest difference of every output from PyTorch's run of the quantized graph",
        "relative to its range, qnnpy's and PyTorch's own eager run's with oneDNN off; where qnnpy's is further than",
        "twice that, PyTorch's int8 deployment's too (ExecuTorch's XNNPACK delegate, torch.compile; models of one",
        "input and output), and whether qnnpy's is within twice the further of PyTorch's (the bound of the",
        "classification table: where PyTorch's paths agree exactly, a float layer summed in another order that moves",
        "a quantized value by one step is outside it); seconds: `qnnpy.from_torch`'s. "
        + measured_on(list(measured_tasks.values())),
        "",
        *[line for task in task_sweep.TASKS for line in (
            f"### {task.replace('_', ' ')}", "",
            "| model | quantizer | converts | quantized ops | distance | eager without oneDNN | PyTorch's deployment "
            "| within bound | seconds |",
            "|---|---|---|---|---|---|---|---|---|",
            *_task_rows(task, measured_tasks), "",
            *[f"- `{key.split(':')[1]}`, {key.split(':')[2]}: {note}" for key, note in task_sweep.NOTES.items()
              if key.startswith(task + ":")], "")],
        "Hugging Face transformers from small configs (`tests/hf_models.py`): the largest difference of any output",
        "from PyTorch's, relative to its range. An error in PyTorch's own quantization (before qnnpy runs) says so.",
        "",
        "| model | flow | converts | outputs | difference |",
        "|---|---|---|---|---|",
        *hf_rows,
        "",
        "torchao's `quantize_` configs (`tests/torchao_models.py`, torchao 0.18) on a two-layer MLP and on tiny",
        "Llama, Qwen2 and BERT models built from their configs: the largest difference of any output from the",
        "quantized model's own PyTorch run, relative to its range (W8A8's linears are bit for bit; the float glue",
        "between them and torchao's float sums move the end by float rounding, now and then a per-token step),",
        "and `qnnpy.from_torch`'s seconds. [docs/torchao.md](torchao.md) says what each config computes. "
        + measured_on(list(ao.values())),
        "",
        "| model | config | converts | distance | seconds |",
        "|---|---|---|---|---|",
        *(_torchao_row(ao[key]) for key in sorted(ao)),
        "",
    ])
    families: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for o in tv.values():
        families[_family(o["model"])][o["quantizer"]].append(_ok(o))
    short = ["| family | models measured | PT2E X86: pass | PT2E XNNPACK: pass |", "|---|---|---|---|"]
    for family in sorted(families):
        q = families[family]
        count = max(len(v) for v in q.values())
        short.append(f"| {family} | {count} | " + " | ".join(f"{sum(q[k])}/{len(q[k])}" for k in QUANTIZERS) + " |")
    flows: dict[str, list[str]] = defaultdict(list)
    for o in hf.values():
        if "error" not in o:
            flows[o["model"]].append(o["flow"])
    task_pairs = {task: [(name, kind) for name in task_sweep.models(task) for kind in task_sweep.QUANTIZERS]
                  for task in task_sweep.TASKS}
    task_counts = []
    for task, pairs in task_pairs.items():
        done = [measured_tasks[f"{task}:{n}:{k}"] for n, k in pairs if f"{task}:{n}:{k}" in measured_tasks]
        passed = sum("error" not in o and o["within_bound"] for o in done)
        task_counts.append(f"{task.replace('_', ' ')} {passed} of {len(done)} measured ({len(pairs)} in all)")
    short += ["", "Hugging Face: " + "; ".join(f"{m} ({', '.join(f)})" for m, f in sorted(flows.items())) +
              ". torchvision's other tasks, model / quantizer pairs converted within the bound: " +
              "; ".join(task_counts) + " (m" + measured_on(list(measured_tasks.values()))[1:].removesuffix(".") +
              "). Each model's measurements, and the models not measured yet: "
              "[docs/model_coverage.md](docs/model_coverage.md). " + header]
    return page, "\n".join(short)


def write_tables(results: dict) -> None:
    page, short = tables(results)
    DOCS.write_text(page)
    text = README.read_text()
    begin, end = "<!-- coverage:begin -->", "<!-- coverage:end -->"
    if begin not in text or end not in text:
        raise SystemExit(f"{README} has no {begin} ... {end} section")
    README.write_text(text[:text.index(begin) + len(begin)] + "\n" + short + "\n" + text[text.index(end):])
    print(f"wrote {DOCS.relative_to(ROOT)} and the README's coverage table")


def measure_timm(names: list[str], quantizers: list[str]) -> None:
    """timm's models (random weights, 224x224) measured as the sweep measures torchvision's, printed, not saved:
    for models from outside torchvision (docs/pt2e.md, "Vision transformers under XNNPACK"). Needs timm."""
    import timm

    import model_sweep

    def timm_model(name: str) -> torch.nn.Module:
        torch.manual_seed(0)
        return timm.create_model(name, pretrained=False).eval()

    model_sweep.float_model = timm_model
    print(f"{cpu_name()}; torch {torch.__version__.split('+')[0]}, timm {timm.__version__}")
    for name in names:
        model_sweep.SIDE[name] = 224
        for kind in quantizers:
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                o = model_sweep.measure(name, kind, kernels_form=False)
            print(f"{name} ({kind}): {o.quantized_layers} quantized layers >= {100 * o.min_identical:.3f}% identical, "
                  f"max {o.max_lsb} step(s); float layers within {o.max_float_relative:.1e}; end to end "
                  f"{100 * o.distance:.2f}% of the output range (top-1 {'equal' if o.top1_equal else 'differs'}); "
                  f"PyTorch's deployment {100 * o.reference_distance:.2f}% ({o.reference}); eager without oneDNN / "
                  f"math attention {100 * o.floor_distance:.2f}%; {time.perf_counter() - start:.0f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated torchvision model names (default: all but those left out)")
    parser.add_argument("--quantizers", default=",".join(QUANTIZERS))
    parser.add_argument("--no-transformers", action="store_true", help="leave the Hugging Face and torchao models out")
    parser.add_argument("--other-forms", choices=("all", "families", "none"), default="families",
                        help="build and run TVM's integer and qdq forms for every model, one per family, or none")
    parser.add_argument("--tables-only", action="store_true", help="rewrite the tables from the saved results")
    parser.add_argument("--torchao-only", action="store_true",
                        help="measure torchao's configs only (the torchao table), then rewrite the tables")
    parser.add_argument("--tasks", help="comma-separated torchvision tasks to measure only (segmentation, video, "
                                        "optical_flow, detection), then rewrite the tables")
    parser.add_argument("--timm", help="comma-separated timm model names: measure and print them, save nothing (needs timm)")
    args = parser.parse_args()
    if args.timm:
        measure_timm(args.timm.split(","), args.quantizers.split(","))
        return
    results = _load()
    if args.torchao_only:
        sweep_torchao(results)
    elif args.tasks:
        sweep_tasks(args.tasks.split(","), args.quantizers.split(","), results)
    elif not args.tables_only:
        results.update(cpu=cpu_name(), torch=torch.__version__.split("+")[0], date=time.strftime("%Y-%m-%d"))
        import model_sweep

        models = args.models.split(",") if args.models else model_sweep.classification_models()
        sweep_torchvision(models, args.quantizers.split(","), args.other_forms, results)
        import task_sweep

        sweep_tasks(list(task_sweep.TASKS), args.quantizers.split(","), results)
        if not args.no_transformers:
            sweep_transformers(results)
            sweep_torchao(results)
    write_tables(results)


if __name__ == "__main__":
    main()

"""The plot of bench_llm_decode.py's results: decode latency per token of each contender, per CPU, config and
thread count (benchmarks/llm_decode.png).

    .venv/bin/python -P benchmarks/plot_llm_decode.py   (bench_llm_decode.py --save also draws it)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent


def plot(results: Path, out: Path) -> None:
    """One panel per CPU: for each (config, threads), a bar per contender of its decode ms per token."""
    runs = [json.loads(p.read_text()) for p in sorted(results.glob("*.json"))]
    if not runs:
        sys.exit(f"no results in {results}: run benchmarks/bench_llm_decode.py --save first")
    figure, axes = plt.subplots(len(runs), 1, figsize=(10, 4.2 * len(runs)), squeeze=False)
    for ax, run in zip(axes[:, 0], runs):
        groups = sorted({(r["config"], r["threads"]) for r in run["rows"]})
        contenders = list(dict.fromkeys(r["contender"] for r in run["rows"]))
        colors = {c: f"C{i}" for i, c in enumerate(contenders)}
        width = 0.8 / max(sum(1 for r in run["rows"] if (r["config"], r["threads"]) == g) for g in groups)
        for x, group in enumerate(groups):  # the contenders measured in this group, side by side
            present = [r for r in run["rows"] if (r["config"], r["threads"]) == group]
            for i, r in enumerate(present):
                bar = ax.bar(x + (i - (len(present) - 1) / 2) * width, r["decode_ms"], width,
                             color=colors[r["contender"]], label=r["contender"])
                ax.bar_label(bar, labels=[f"{r['decode_ms']:.0f}"], fontsize=7, padding=1)
        handles = {label: h for h, label in zip(*ax.get_legend_handles_labels())}
        ax.legend(handles.values(), handles.keys(), fontsize=8, ncol=3)
        ax.set_xticks(range(len(groups)), [f"{c}, {t} thread{'s' * (t > 1)}" for c, t in groups])
        ax.set_yscale("log")
        ax.set_ylabel("decode, ms per token (log)")
        ax.set_title(f"{run['cpu'].split(';')[0]}): {run['layers']}-layer Llama (hidden 2048), batch 1, "
                     f"{run['date'][:10]}", fontsize=10)
    figure.tight_layout()
    figure.savefig(out, dpi=110)
    plt.close(figure)


if __name__ == "__main__":
    plot(HERE / "results" / "llm", HERE / "llm_decode.png")
    print(f"wrote {HERE / 'llm_decode.png'}")

"""The benchmark reports (benchmarks/latency_results.py, benchmarks/speed_table.py) on made-up results: which
PyTorch path counts as the fastest, each CPU's own section of RESULTS.md, and the README table between its
markers (no markers: the README is left alone). No timing here: speed is measured in benchmarks/ only."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import latency_results  # noqa: E402


def _result(cpu: str, ours: float) -> dict:
    return {"cpu": cpu, "cpu_key": latency_results.cpu_key(cpu), "date": "2026-11-26 21:00 UTC", "torch": "2.14",
            "tvm": None, "qnnpy_isa": "amx", "runs": 3, "input": "1x3x224x224",
            "ceilings_gmacs": {"AMX tdpbusd": 1900.0, "vpdpbusd zmm": 0.0},
            "load_average": {"before": "0.1", "after": "0.2"}, "notes": ["a note"], "layers": ["(layers)"],
            "models": {"ResNet-18": {"1": {"qnnpy runtime": ours, "qnnpy kernels form": 1.0,
                                           "PyTorch eager fbgemm": 12.0, "PyTorch eager onednn": 5.5,
                                           "PT2E + torch.compile": 5.6}}}}


INTEL = "Intel(R) Xeon(R) Platinum 8580 (family 6 model 207; avx2 avx512f avx512_vnni amx_tile amx_int8)"
AMD = "AMD EPYC (family 25 model 17; avx2 avx512f avx512_vnni)"


def test_the_fastest_pytorch_path_leaves_qnnpy_out():
    assert latency_results.fastest_pytorch(_result(INTEL, 4.4)["models"]["ResNet-18"]["1"]) == \
        ("PyTorch eager onednn", 5.5)


def test_each_cpu_has_one_section_of_results_md_replaced_on_a_new_run(tmp_path):
    md = tmp_path / "RESULTS.md"
    md.write_text("# Benchmarks\n\nHow to reproduce: ...\n")
    latency_results.update_results_md(_result(INTEL, 4.4), md)
    latency_results.update_results_md(_result(AMD, 8.0), md)
    latency_results.update_results_md(_result(INTEL, 4.0), md)
    text = md.read_text()
    assert text.startswith("# Benchmarks\n\nHow to reproduce: ...\n")
    assert text.count(f"## {INTEL}") == 1 and text.count(f"## {AMD}") == 1
    assert "| 1 | 4.00 |" in text and "| 1 | 4.40 |" not in text  # the newer Intel run replaced the older
    assert "| PyTorch eager onednn | **0.73x** |" in text  # 4.0 / 5.5
    assert "| PyTorch eager onednn | **1.45x** |" in text  # AMD: 8.0 / 5.5
    assert "vpdpbusd zmm" not in text  # a ceiling of 0: not on this CPU


def _speed_table(readme: Path, results: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-P", str(BENCHMARKS / "speed_table.py"), "--readme", str(readme),
                           "--results", str(results)], capture_output=True, text=True)


def test_speed_table_refuses_a_readme_without_its_markers(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# qnnpy\n\nno markers here\n")
    latency_results.save(_result(INTEL, 4.4), tmp_path / "results")
    done = _speed_table(readme, tmp_path / "results")
    assert done.returncode != 0 and "markers" in done.stderr
    assert readme.read_text() == "# qnnpy\n\nno markers here\n"


@pytest.mark.parametrize("cpus", [[INTEL], [INTEL, AMD]])
def test_speed_table_writes_between_the_markers_only(tmp_path, cpus):
    readme = tmp_path / "README.md"
    readme.write_text("before\n<!-- speed:begin -->\nold table\n<!-- speed:end -->\nafter\n")
    for cpu in cpus:
        latency_results.save(_result(cpu, 4.4), tmp_path / "results")
    done = _speed_table(readme, tmp_path / "results")
    assert done.returncode == 0, done.stderr
    text = readme.read_text()
    assert text.startswith("before\n<!-- speed:begin -->\n| CPU |") and text.endswith("<!-- speed:end -->\nafter\n")
    assert "old table" not in text
    assert "| Intel(R) Xeon(R) Platinum 8580 (family 6 model 207), 2026-11-26 | ResNet-18 | 1 | 4.40 | 5.50 " \
           "(PyTorch eager onednn) | 0.80x |" in text
    assert text.count("| ResNet-18 |") == len(cpus)


def test_speed_table_adds_the_llm_decode_rows_against_the_fastest_other_contender(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("<!-- speed:begin -->\n<!-- speed:end -->\n")
    latency_results.save(_result(INTEL, 4.4), tmp_path / "results")
    rows = [{"config": "8da4w", "threads": 1, "contender": "qnnpy runtime", "decode_ms": 30.0, "prefill_ms": 500.0},
            {"config": "8da4w", "threads": 1, "contender": "torchao eager", "decode_ms": 900.0, "prefill_ms": 800.0},
            {"config": "8da4w", "threads": 1, "contender": "llama.cpp Q4_0", "decode_ms": 25.0, "prefill_ms": 600.0}]
    llm = {"cpu": INTEL, "cpu_key": latency_results.cpu_key(INTEL), "date": "2026-11-28 21:00 UTC", "rows": rows}
    latency_results.save(llm, tmp_path / "results" / "llm")
    done = _speed_table(readme, tmp_path / "results")
    assert done.returncode == 0, done.stderr
    text = readme.read_text()
    assert "| Intel(R) Xeon(R) Platinum 8580 (family 6 model 207), 2026-11-28 | 8da4w | 1 | 30.0 | 25.0 " \
           "(llama.cpp Q4_0) | 1.20x |" in text
    assert text.count("| ResNet-18 |") == 1

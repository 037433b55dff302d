"""The fuzz targets in the suite (docs/fuzzing.md): every seed and past finding runs clean,
then a short fuzz run of each target finds nothing; and the findings fixed so far, as plain tests.

The libFuzzer targets are built once per machine into build/fuzz (scripts/build_fuzzers.sh;
later sessions rebuild only what changed) and need clang; the atheris harnesses need only
the atheris package. The four short runs start together and each lasts QNNPY_FUZZ_SECONDS of wall
time (default 30 s), so the four share the machine's cores for half a minute (set it higher for a longer run).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from qnnpy import QDQModule, _core
from qnnpy.capture.torchscript_archive import packed_param_states
from qnnpy.errors import ConversionError
from qnnpy.model_files import InputFileError, load_model_file

import sanitized_build

ROOT = Path(__file__).resolve().parent.parent
FUZZ = ROOT / "fuzz"
SECONDS = int(os.environ.get("QNNPY_FUZZ_SECONDS", "30"))
LIBFUZZER_TARGETS = ["graph_file", "packed_state"]
# atheris harness -> the corpus it starts from
ATHERIS_HARNESSES = {"saved_module": "graph_file", "torchscript_archive": "torchscript_archive"}
# A fixed seed: the same mutations on every machine (only how far a run gets depends on its speed).
FUZZ_FLAGS = ["-seed=1", "-rss_limit_mb=3072", "-timeout=30", "-print_final_stats=1"]


def _fresh(command: list[str]) -> list[str]:
    """`command` started by a small shell. libFuzzer's -rss_limit_mb reads the process's peak RSS
    (getrusage), and Linux carries the peak of a forking parent into a child over fork and exec:
    started straight from a test worker holding gigabytes of torch and TVM, a fuzzer reports
    out-of-memory before its first input. A child forked by the shell starts from the shell's
    peak instead."""
    return ["sh", "-c", '"$@" & wait $!', "sh", *command]


def _inputs(target: str) -> list[Path]:
    """Seeds and past findings of a target."""
    return sorted(p for d in ("corpus", "regressions") for p in (FUZZ / d / target).glob("*"))


def _check(result: subprocess.CompletedProcess, what: str) -> None:
    output = (result.stdout + result.stderr).decode(errors="replace")
    tail = "\n".join(line for line in output.splitlines() if not line.startswith("INFO: Instrumenting"))[-4000:]
    assert result.returncode == 0, f"{what} exited with {result.returncode}:\n{tail}"


@pytest.fixture(scope="session")
def libfuzzer_dir() -> Path:
    """build/fuzz/fuzz with the libFuzzer executables, (re)built once per session (tests/sanitized_build.py)."""
    return sanitized_build.build() / "fuzz"


@pytest.mark.parametrize("target", LIBFUZZER_TARGETS)
def test_libfuzzer_target_runs_its_seeds_and_past_findings_clean(libfuzzer_dir: Path, target: str):
    files = _inputs(target)
    assert len(files) >= 10
    _check(subprocess.run(_fresh([str(libfuzzer_dir / f"fuzz_{target}"), *map(str, files)]), capture_output=True),
           f"fuzz_{target} on its corpus and regressions")


def _atheris(harness: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(_fresh([sys.executable, "-P", str(FUZZ / f"atheris_{harness}.py"), *args]), capture_output=True)


@pytest.mark.parametrize("harness", ATHERIS_HARNESSES)
def test_atheris_harness_runs_its_seeds_and_past_findings_clean(harness: str):
    files = _inputs(ATHERIS_HARNESSES[harness])
    _check(_atheris(harness, *map(str, files)), f"atheris_{harness} on its corpus and regressions")


@pytest.fixture(scope="module")
def short_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Runs the four targets from their seeds at once, SECONDS of wall time each. Maps a target
    ("fuzz_<name>" or "atheris_<name>") to (finished process, its directory), or to the reason it
    could not run."""
    try:
        libfuzzer = request.getfixturevalue("libfuzzer_dir")
    except pytest.skip.Exception as skipped:
        libfuzzer = skipped.msg
    commands: dict[str, list[str]] = {}
    corpora = {f"fuzz_{t}": t for t in LIBFUZZER_TARGETS}
    corpora.update({f"atheris_{h}": c for h, c in ATHERIS_HARNESSES.items()})
    runs: dict[str, object] = {}
    for name, corpus_name in corpora.items():
        if name.startswith("fuzz_") and isinstance(libfuzzer, str):
            runs[name] = libfuzzer
            continue
        work = tmp_path_factory.mktemp(name)
        corpus = shutil.copytree(FUZZ / "corpus" / corpus_name, work / "corpus")
        program = ([str(libfuzzer / name)] if name.startswith("fuzz_")
                   else [sys.executable, "-P", str(FUZZ / f"{name}.py")])
        commands[name] = [*program, str(corpus), f"-max_total_time={SECONDS}", f"-artifact_prefix={work}/", *FUZZ_FLAGS]
        runs[name] = work
    started = {}
    for name, command in commands.items():
        with open(runs[name] / "log.txt", "wb") as log:  # files, not pipes: a full pipe would stall a run
            started[name] = subprocess.Popen(_fresh(command), stdout=log, stderr=subprocess.STDOUT)
    for name, process in started.items():
        process.wait()
        output = (runs[name] / "log.txt").read_bytes()
        runs[name] = (subprocess.CompletedProcess(process.args, process.returncode, output, b""), runs[name])
    return runs


@pytest.mark.parametrize("target", [f"fuzz_{t}" for t in LIBFUZZER_TARGETS] + [f"atheris_{h}" for h in ATHERIS_HARNESSES])
def test_short_fuzz_run_finds_nothing(short_runs: dict[str, object], target: str):
    run = short_runs[target]
    if isinstance(run, str):
        pytest.skip(run)
    result, work = run
    _check(result, f"{SECONDS} s of {target} (crash input in {work})")
    assert b"stat::number_of_executed_units" in result.stdout, "the run printed no final statistics"


# --- the findings, as plain tests (each failed before its fix) -----------------------------

def test_graph_file_with_a_dequantize_output_carrying_qparams_is_refused():
    """A float32 dequantize output with a (zero) scale reached the runner's output conversion (TypeError)."""
    data = (FUZZ / "regressions" / "graph_file" / "dequantize-output-with-qparams").read_bytes()
    with pytest.raises(ValueError, match="output must be float32 without qparams"):
        _core.Graph.deserialize(data)


def test_graph_file_naming_a_missing_param_is_refused_with_value_error(tmp_path: Path):
    (tmp_path / "graph.qnnpy").write_bytes((FUZZ / "regressions" / "graph_file" / "node-param-id-out-of-range").read_bytes())
    with pytest.raises(ValueError, match=r"conv2d \(body.conv\): param"):
        QDQModule.load(tmp_path)


def test_graph_file_with_a_float_reshape_to_too_many_elements_is_refused():
    """A float_reshape to four axes of 2^24 overflowed the int64 element count (UBSan)."""
    data = (FUZZ / "regressions" / "graph_file" / "float-reshape-huge-shape").read_bytes()
    with pytest.raises(ValueError, match=r"float_reshape \(flatten\): attribute 'shape': .* holds more than"):
        _core.Graph.deserialize(data)


@pytest.mark.parametrize("name", sorted(p.name for p in (FUZZ / "regressions" / "torchscript_archive").glob("*")))
def test_damaged_archive_is_refused_with_conversion_error(name: str):
    with pytest.raises(ConversionError, match="TorchScript archive"):
        packed_param_states(FUZZ / "regressions" / "torchscript_archive" / name)


@pytest.mark.parametrize("name", ["record-name-not-utf8", "unknown-zip-version", "bad-central-directory"])
def test_unreadable_zip_directory_is_an_input_file_error(name: str):
    with pytest.raises(InputFileError, match="cannot read"):
        load_model_file(FUZZ / "regressions" / "torchscript_archive" / name)


def test_bias_scale_that_rounds_to_zero_is_refused():
    g = _core.Graph()
    x = g.add_node("quantize", [g.add_input("x", [1, 4])], "quant", "quant", "uint8", 1e-20, 0)
    with pytest.raises(ValueError, match="too small to quantize the bias"):
        g.add_linear(x, "fc", "fc", np.ones((2, 4), np.int8), np.array([1e-30]), np.array([0]), -1,
                     np.zeros(2, np.float32), False, "uint8", 0.1, 0)


def test_conv_with_a_stride_far_above_its_window_takes_im2col():
    """A 1x1 conv of stride 6488129 and padding 4194304 along y (fuzz_packed_state, regression input
    packed_state/stride-far-above-window) read its rows in place, and a task pads every input row from
    its first window to its last: 8 million rows per image, 10-30 s under ASan, near the fuzzer's
    30 s timeout. A stride of more than twice the window's height now takes im2col, which copies the
    windows alone."""
    rng = np.random.default_rng(0)
    g = _core.Graph()
    x = g.add_node("quantize", [g.add_input("x", [2, 3, 7, 9])], "q", "q", "uint8", 0.05, 3)
    config = np.array([2, 6488129, 1, 4194304, 0, 1, 1, 0, 0, 1, 0], np.int64)
    weight = rng.integers(-100, 100, (3, 3, 1, 1)).astype(np.int8)
    y = g.add_conv2d(x, "layer", "conv", 2, config, weight, np.full(3, 0.01), np.zeros(3, np.int64), 0,
                     np.zeros(3, np.float32), False, "uint8", 0.1, 7)
    g.mark_output(g.add_node("dequantize", [y], "dq", "dq", "float32"))
    x_in = rng.standard_normal((2, 3, 7, 9)).astype(np.float32)
    outputs = []
    for isa in ["scalar"] + (["avx2"] if _core.cpu_has_avx2() else []):
        ex = _core.Executor(g, "fbgemm", isa, 1)
        outputs.append(ex.run([x_in], False)[0])
        assert [k for k in ex.node_kernels() if k] == ["gemm_u8s8"], isa
    for out in outputs[1:]:
        np.testing.assert_array_equal(out, outputs[0])

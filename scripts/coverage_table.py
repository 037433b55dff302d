"""Regenerates the coverage tables of docs/coverage.md (the quantizable zoo, the op cases) from a pytest run
(JUnit XML), not by hand. (The README's short table of what converts comes from scripts/model_sweep.py.)

    .venv/bin/python -P scripts/coverage_table.py            # runs the coverage tests, then rewrites docs/coverage.md
    .venv/bin/python -P scripts/coverage_table.py --junit r.xml   # reuses a finished run
    .venv/bin/python -P scripts/coverage_table.py --output table.md   # writes the tables there instead

Each table cell is the outcome of one named test: "yes" passed, "FAIL" failed or
errored, "-" no such test (the check does not apply; docs/coverage.md says why). The full-size
zoo tests (tests/test_zoo_full_size.py, 1x3x224x224) and the PT2E zoo tests (tests/test_zoo_pt2e.py) are
marked slow: this script runs them.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST_FILES = ["tests/test_zoo_models.py", "tests/test_zoo_full_size.py", "tests/test_zoo_pt2e.py", "tests/test_more_ops.py",
              "tests/test_runtime_ops.py", "tests/test_tvm_ops.py"]
BEGIN, END = "<!-- coverage:begin -->", "<!-- coverage:end -->"

MODEL_COLUMNS = [
    ("eager: runtime bit-exact", "test_zoo_models", "test_eager_runtime_bit_exact"),
    ("eager: TVM float form within 3 LSB", "test_zoo_models", "test_eager_tvm_float_form_agrees"),
    ("FX: runtime bit-exact", "test_zoo_models", "test_fx_runtime_bit_exact"),
    ("TorchScript: runtime bit-exact", "test_zoo_models", "test_torchscript_runtime_bit_exact"),
    ("eager: qnnpack profile = qnnpack engine", "test_zoo_models", "test_eager_qnnpack_profile_equals_qnnpack_engine"),
    ("224x224: fbgemm and qnnpack profiles bit-exact", "test_zoo_full_size",
     "test_full_size_runtime_bit_exact_under_both_engines"),
    ("PT2E X86: runtime per layer >= 99.9%, <= 1 step", "test_zoo_pt2e", "test_pt2e_runtime_per_layer"),
]
OP_COLUMNS = [
    ("runtime = fbgemm engine", "test_more_ops", "test_runtime_matches_fbgemm"),
    ("runtime int32_bias = qnnpack engine", "test_more_ops", "test_runtime_int32_bias_matches_qnnpack"),
    ("runtime qnnpack = qnnpack engine", "test_more_ops", "test_runtime_qnnpack_matches_qnnpack"),
    ("TVM within 2 LSB", "test_more_ops", "test_tvm_matches_torch"),
]
# TVM tests of the base op cases (tests/test_tvm_ops.py) by case name.
BASE_TVM_TESTS = {
    "add": ("test_add_matches_torch", "False"),
    "add_relu": ("test_add_matches_torch", "True"),
    "pools_linear": ("test_pools_flatten_linear_match_torch", "False"),
    "pools_linear_relu_unfused_relu": ("test_pools_flatten_linear_match_torch", "True"),
}
BASE_OP_COLUMNS = [
    ("runtime = fbgemm engine", "test_runtime_ops", "test_op_matches_torch_engine", "fbgemm-fbgemm"),
    ("runtime int32_bias = qnnpack engine", "test_runtime_ops", "test_op_matches_torch_engine", "qnnpack-int32_bias"),
    ("runtime qnnpack = qnnpack engine", "test_runtime_ops", "test_op_matches_torch_engine", "qnnpack-qnnpack"),
]


def run_tests(junit: Path) -> None:
    # this interpreter, without the source tree on the path (-P): the installed qnnpy is tested
    cmd = [sys.executable, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "slow or not slow",
           f"--junitxml={junit}", *TEST_FILES]
    print("running:", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, cwd=ROOT, check=False)


def outcomes(junit: Path) -> dict[tuple[str, str, str], str]:
    """(module, test function, parameter id) -> "yes" / "FAIL"."""
    result = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")[-1]
        match = re.fullmatch(r"(\w+)\[(.*)\]", case.get("name", ""))
        if not match:
            continue
        failed = any(child.tag in ("failure", "error") for child in case)
        skipped = any(child.tag == "skipped" for child in case)
        if not skipped:
            result[(module, match.group(1), match.group(2))] = "FAIL" if failed else "yes"
    return result


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def model_table(res: dict[tuple[str, str, str], str]) -> str:
    columns = {(m, t) for _, m, t in MODEL_COLUMNS}
    models = sorted({p for (m, t, p) in res if (m, t) in columns})
    rows = [[f"`{name}`"] + [res.get((m, t, name), "-") for _, m, t in MODEL_COLUMNS] for name in models]
    return table(["model"] + [c for c, _, _ in MODEL_COLUMNS], rows)


def op_table(res: dict[tuple[str, str, str], str]) -> str:
    rows = []
    for case in sorted({p for (m, t, p) in res if m == "test_more_ops" and t == OP_COLUMNS[0][2]}):
        rows.append([f"`{case}`"] + [res.get((m, t, case), "-") for _, m, t in OP_COLUMNS])
    base = sorted({p.split("-", 2)[-1] for (m, t, p) in res if m == "test_runtime_ops"})
    for case in base:
        cells = [res.get((m, t, f"{engine}-{case}"), "-") for _, m, t, engine in BASE_OP_COLUMNS]
        tvm_test, tvm_id = BASE_TVM_TESTS.get(case, ("test_conv_variants_match_torch", case))
        rows.append([f"`{case}`"] + cells + [res.get(("test_tvm_ops", tvm_test, tvm_id), "-")])
    return table(["op case"] + [c for c, _, _ in OP_COLUMNS], rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--junit", type=Path, help="use this JUnit XML instead of running the tests")
    parser.add_argument("--output", type=Path, help="write the tables to this file instead of docs/coverage.md")
    args = parser.parse_args()
    junit = args.junit
    if junit is None:
        junit = Path(tempfile.mkdtemp()) / "coverage.xml"
        run_tests(junit)
    res = outcomes(junit)
    block = f"{BEGIN}\n{model_table(res)}\n\n{op_table(res)}\n{END}"
    if args.output:
        args.output.write_text(block + "\n")
        print(f"{args.output}: coverage tables written from {junit}", file=sys.stderr)
        return 0 if "FAIL" not in block else 1
    page = ROOT / "docs" / "coverage.md"
    text = page.read_text()
    if BEGIN not in text:
        print(block)
        print("docs/coverage.md has no coverage markers; printed the tables instead", file=sys.stderr)
        return 1
    start, end = text.index(BEGIN), text.index(END) + len(END)
    page.write_text(text[:start] + block + text[end:])
    print(f"docs/coverage.md: coverage tables rewritten from {junit}", file=sys.stderr)
    return 0 if "FAIL" not in block else 1


if __name__ == "__main__":
    sys.exit(main())

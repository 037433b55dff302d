"""torchvision's classification models through PT2E (X86InductorQuantizer and the XNNPACK quantizer) into qnnpy,
measured by tests/model_sweep.py: one model per family in the default run, every model under both quantizers
with ``-m slow`` (the table docs/model_coverage.md comes from scripts/model_sweep.py, the same measurements).

Asserted for each: it converts; every quantized layer of the runtime (profile fbgemm) fed PyTorch's inputs is
>= 99.9% identical to PyTorch's and within one step; float layers within 1e-5 of their range; top-1 equal end to
end; TVM's kernels form equal to the runtime bit for bit. Where measured (ResNet-18 in the default run, every
model in the slow sweep) and where PyTorch's int8 deployment runs (torch.compile with freezing for X86, ExecuTorch's
XNNPACK delegate for XNNPACK), the end-to-end distance is of the order of PyTorch's own (model_sweep.distance_bound):
at most twice that of its int8 deployment or of its eager run without oneDNN, from the eager run. (Where no int8
path runs, PyTorch's other paths compute the graph in float as eager does, and no integer engine could match them
end to end: a one-step difference in a layer, allowed above, moves a random-weight net's output by percents.)"""
from __future__ import annotations

import warnings

import pytest

import model_sweep

REFERENCE_IN_DEFAULT_RUN = {"resnet18"}


def _check(outcome: model_sweep.Outcome) -> None:
    assert outcome.quantized_layers >= 5, outcome
    assert outcome.output_range > 0, outcome  # PyTorch's output varies with the input: the comparisons test something
    assert outcome.min_identical >= 0.999 and outcome.max_lsb <= 1, outcome
    assert outcome.max_float_relative <= model_sweep.FLOAT_RELATIVE, outcome
    assert outcome.top1_equal, outcome
    assert outcome.kernels_form_equal is not False, outcome
    if outcome.int8_reference:
        assert outcome.distance <= outcome.distance_bound, outcome
    assert outcome.other_forms_run is not False, outcome


@pytest.mark.parametrize("name, kind", model_sweep.FAMILIES.items())
def test_one_model_per_family(name, kind):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check(model_sweep.measure(name, kind, reference=name in REFERENCE_IN_DEFAULT_RUN))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["x86", "xnnpack"])
@pytest.mark.parametrize("name", model_sweep.classification_models())
def test_every_classification_model(name, kind):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check(model_sweep.measure(name, kind, reference=True, other_forms=True))


def test_the_coverage_page_lists_every_model_of_every_task():
    """docs/model_coverage.md (scripts/model_sweep.py) has a row for every model torchvision lists for each task,
    under each quantizer: measured, failed with its error, or not measured yet."""
    import re
    from pathlib import Path

    import task_sweep

    page = (Path(__file__).resolve().parent.parent / "docs" / "model_coverage.md").read_text()
    for task in task_sweep.TASKS:
        section = page.split(f"### {task.replace('_', ' ')}\n", 1)[1].split("\n\n", 1)[0]
        rows = set(re.findall(r"^\| `(\w+)` \| (\w+) \|", section, re.M))
        assert rows == {(name, kind) for name in task_sweep.models(task) for kind in task_sweep.QUANTIZERS}, task

"""Every notebook in notebooks/ runs top to bottom in a fresh kernel, within its time limit."""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient


NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
TIMEOUT_SECONDS = 150  # each notebook takes 15-30 s on two shared cores
NAMES = ["01_quickstart.ipynb", "02_accuracy_real_data.ipynb", "03_byoc_patterns.ipynb", "04_pt2e_transformer.ipynb",
         "05_torchao_llm.ipynb"]


def test_every_notebook_is_tested():
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_stored_without_outputs(name):
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{name}: strip the outputs"


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs(name):
    # The kernel runs this interpreter and imports the installed qnnpy, as a reader's Jupyter does.
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = NotebookClient(notebook, timeout=TIMEOUT_SECONDS, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOKS)}})
    start = time.perf_counter()
    asyncio.run(asyncio.wait_for(client.async_execute(), TIMEOUT_SECONDS))  # raises on the first failing cell
    elapsed = time.perf_counter() - start
    executed = [c for c in notebook.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in executed)
    assert not any(o.output_type == "error" for c in executed for o in c.outputs)
    print(f"{name}: {elapsed:.1f} s")

"""atheris harness: ``qnnpy.QDQModule.load`` of a saved module directory, then what a user does next.

Each input is the ``graph.qnnpy`` of a saved module; the harness writes the matching
``params.npz`` next to it, as folders saved by qnnpy 0.1.0 hold (``load`` checks it against
the graph, the path an old folder takes). The module is loaded, printed
(TVMScript, summary, params) and, when small enough, run on the scalar kernels. Any
input must either work or be refused with ``ValueError``; every other exception and
every crash is a finding. Seeds: fuzz/corpus/graph_file. Run (docs/fuzzing.md):

    .venv/bin/python -P fuzz/atheris_saved_module.py fuzz/corpus/graph_file -max_total_time=60
"""
from __future__ import annotations

import math
import sys
import tempfile
from pathlib import Path

import atheris
import numpy as np

with atheris.instrument_imports(include=["qnnpy"], enable_loader_override=False):
    from qnnpy import QDQModule, _core

# Run only graphs whose work (output elements x reduction length, summed) stays below this.
MAX_WORK = 1 << 22
# In memory where the machine has /dev/shm: a disk write per input would dominate the run.
DIRECTORY = Path(tempfile.mkdtemp(prefix="qnnpy-fuzz-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))


def _work(module: QDQModule) -> float:
    """A rough bound on the runtime's work (inf when a shape is absurd)."""
    shapes = {v["name"]: v["shape"] for v in module.graph.values()}
    sizes = {name: math.prod(s) if all(d >= 0 for d in s) else math.inf for name, s in shapes.items()}
    params = {name: a.shape for name, a in module.params.items()}
    work = 0.0
    for node in module.nodes():
        reduction = max((math.prod(params[p]) // max(params[p][0], 1) for p in node["params"].values()
                         if p in params and params[p]), default=1)
        work += sizes[node["output"]] * reduction
    return work


def _params_of(data: bytes) -> dict[str, np.ndarray]:
    """The params qnnpy 0.1.0 wrote to params.npz for this graph (none when the graph does not load)."""
    try:
        return QDQModule(_core.Graph.deserialize(data)).params
    except Exception:  # load refuses such a graph before it reads params.npz; the try below checks how
        return {}


def test_one_input(data: bytes) -> None:
    (DIRECTORY / "graph.qnnpy").write_bytes(data)
    np.savez(DIRECTORY / "params.npz", **_params_of(data))
    try:
        module = QDQModule.load(DIRECTORY)
        module.script()
        module.summary()
        if _work(module) <= MAX_WORK and all(math.prod(s) <= MAX_WORK for s in module.input_shapes):
            module.run(*[np.zeros(s, d) for s, d in zip(module.input_shapes, module.input_dtypes)], isa="scalar")
    except ValueError:
        pass  # the documented refusal of a bad file


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()

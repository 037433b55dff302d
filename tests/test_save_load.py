"""save() writes TVMScript, params and the IR; load() gives back the same module."""
from __future__ import annotations

import numpy as np
import pytest
import tvm

import qnnpy
from small_models import Head, quantized


def test_save_then_load_round_trips(tmp_path):
    model, x = quantized(Head(linear_relu=True), (3, 17, 17), fuse=[["body.conv", "body.relu"], ["body.fc", "body.fc_relu"]])
    module = qnnpy.from_torch(model, (x,))
    module.save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph.qnnpy", "module.py", "params.npz"]
    again = qnnpy.load(tmp_path)
    assert again.script() == module.script()
    assert again.nodes() == module.nodes()
    saved = np.load(tmp_path / "params.npz")
    assert list(saved.keys()) == list(module.params.keys())
    for name, a in module.params.items():
        np.testing.assert_array_equal(saved[name], a)
        assert saved[name].dtype == a.dtype
    assert isinstance(tvm.script.from_source((tmp_path / "module.py").read_text()), tvm.IRModule)


def test_load_rejects_other_files(tmp_path):
    (tmp_path / "graph.qnnpy").write_bytes(b"not a graph")
    with pytest.raises(ValueError, match="graph file"):
        qnnpy.load(tmp_path)
    with pytest.raises(FileNotFoundError):
        qnnpy.load(tmp_path / "missing")

"""save() writes the IR with its params once and the TVMScript; load() gives back the same module, and reads
the folders of earlier versions (params also in params.npz)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import tvm

import qnnpy
from small_models import Head, quantized

OLD_FOLDER = Path(__file__).parent / "data" / "saved_module_0_1_0"


def test_save_then_load_round_trips(tmp_path):
    model, x = quantized(Head(linear_relu=True), (3, 17, 17), fuse=[["body.conv", "body.relu"], ["body.fc", "body.fc_relu"]])
    module = qnnpy.from_torch(model, (x,))
    module.save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph.qnnpy", "module.py"]
    again = qnnpy.load(tmp_path)
    assert again.script() == module.script()
    assert again.nodes() == module.nodes()
    assert list(again.params) == list(module.params)
    for name, a in module.params.items():
        np.testing.assert_array_equal(again.params[name], a)
        assert again.params[name].dtype == a.dtype
    assert isinstance(tvm.script.from_source((tmp_path / "module.py").read_text()), tvm.IRModule)


def test_the_weights_are_stored_once(tmp_path):
    model, x = quantized(Head(linear_relu=False), (3, 12, 12))
    module = qnnpy.from_torch(model, (x,))
    module.save(tmp_path)
    for name, weight in module.params.items():
        if weight.dtype == np.int8:
            found = sum(p.read_bytes().count(weight.tobytes()) for p in tmp_path.iterdir())
            assert found == 1, f"{name}: its bytes are stored {found} times"


def test_a_folder_saved_by_version_0_1_0_loads_and_runs_as_its_model():
    torch.manual_seed(0)  # the model the folder was written from (data/saved_module_0_1_0/README.md)
    model, x = quantized(Head(linear_relu=False), (3, 12, 12), seed=0)
    assert sorted(p.name for p in OLD_FOLDER.iterdir()) == ["README.md", "graph.qnnpy", "module.py", "params.npz"]
    old = qnnpy.load(OLD_FOLDER)
    fresh = qnnpy.from_torch(model, (x,))
    assert old.nodes() == fresh.nodes()
    for name, weight in old.params.items():
        np.testing.assert_array_equal(weight, fresh.params[name])
    # The folder was written on another CPU, whose float convs and linears (calibration) sum in another order:
    # an activation scale may lie an ulp away from this CPU's. The model takes the folder's activation qparams.
    layers = {"quant": model.quant, "body_conv": model.body.conv, "body_fc": model.body.fc}
    for value in old.graph.values():
        if value["name"] in layers:
            layer = layers.pop(value["name"])
            if isinstance(layer.scale, torch.Tensor):
                layer.scale.fill_(value["scale"])
            else:
                layer.scale = value["scale"]
            assert int(layer.zero_point) == value["zero_point"]
    assert not layers
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_array_equal(old.run(x.numpy(), profile="fbgemm").dequantized, expected)


def test_saving_into_an_old_folder_removes_its_params_npz(tmp_path):
    for path in OLD_FOLDER.iterdir():
        (tmp_path / path.name).write_bytes(path.read_bytes())
    qnnpy.load(OLD_FOLDER).save(tmp_path)
    assert not (tmp_path / "params.npz").exists()
    assert qnnpy.load(tmp_path).nodes() == qnnpy.load(OLD_FOLDER).nodes()


def test_load_rejects_other_files(tmp_path):
    (tmp_path / "graph.qnnpy").write_bytes(b"not a graph")
    with pytest.raises(ValueError, match="graph file"):
        qnnpy.load(tmp_path)
    with pytest.raises(FileNotFoundError):
        qnnpy.load(tmp_path / "missing")

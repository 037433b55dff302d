"""TorchScript archives written by PyTorch 1.13 (tests/data/archives_1_13/, made by
scripts/make_archives_1_13.py with Debian's python3-torch): they convert, the runtime's qnnpack
profile reproduces the outputs 1.13's qnnpack engine saved beside them bit for bit, the fbgemm
profile matches today's fbgemm engine at every layer, and TVM agrees with the saved outputs."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import qnnpy
from qnnpy import tvm_bridge
from qnnpy.capture.torchscript_archive import packed_param_states
from qnnpy.model_files import load_model_file
from script_archives import rewrite_conv_states
from script_models import quantized_functional_fx

CORPUS = Path(__file__).parent / "data" / "archives_1_13"
ARCHIVES = sorted(p.stem for p in CORPUS.glob("*.pt"))


def _load(name: str, engine: str) -> tuple[torch.jit.ScriptModule, dict[str, np.ndarray]]:
    """The archive loaded under ``engine`` (torch.jit.load packs the weights for it) and its saved data."""
    torch.backends.quantized.engine = engine
    return torch.jit.load(str(CORPUS / f"{name}.pt")), dict(np.load(CORPUS / f"{name}.npz"))


def test_corpus_holds_both_recipes_modes_and_1_13_outputs():
    assert len(ARCHIVES) == 12
    for recipe in ("qnnpack", "fbgemm"):
        for mode in ("trace", "script"):
            assert any(name.endswith(f"_{recipe}_{mode}") for name in ARCHIVES)
    for name in ARCHIVES:
        data = np.load(CORPUS / f"{name}.npz")
        assert str(data["torch_version"]).startswith("1.13") and str(data["engine"]) == "qnnpack"


@pytest.mark.parametrize("name", ARCHIVES)
def test_qnnpack_profile_reproduces_the_outputs_torch_1_13_saved(name):
    model, data = _load(name, "qnnpack")
    module = qnnpy.from_torch(model, torch.from_numpy(data["x"]))
    for key in ("x", "check"):
        np.testing.assert_array_equal(module.run(data[key], profile="qnnpack").dequantized, data[f"out_{key}"])


@pytest.mark.parametrize("name", ARCHIVES)
def test_fbgemm_profile_matches_todays_fbgemm_engine_at_every_layer(name):
    model, data = _load(name, "fbgemm")
    module = qnnpy.from_torch(model, torch.from_numpy(data["x"]))
    report = qnnpy.compare(model, module, [torch.from_numpy(data["check"])], profiles=["fbgemm"])
    assert report.all_identical("fbgemm"), report.table()


@pytest.mark.parametrize("name", [n for n in ARCHIVES if n.startswith("small_cnn")])
def test_tvm_top1_agrees_with_the_saved_outputs(name):
    model, data = _load(name, "qnnpack")
    module = qnnpy.from_torch(model, torch.from_numpy(data["x"]))
    run = tvm_bridge.build(module, profile="qnnpack")
    for key in ("x", "check"):
        out = np.asarray(run(data[key]))
        assert out.argmax(1).tolist() == data[f"out_{key}"].argmax(1).tolist()
        np.testing.assert_array_equal(out, data[f"out_{key}"])


def test_module_archives_of_1_13_store_conv_weights_in_module_state():
    """1.13 serializes quantized conv modules through the module's own state (weight and bias
    tensors, re-packed on load): its archives hold no conv packed-params object, only linear ones."""
    classes = {cls for cls, _ in packed_param_states(CORPUS / "small_cnn_fbgemm_script.pt").values()}
    assert classes == {"LinearPackedParamsBase"}


def test_version_3_conv_states_convert_through_the_cli_loader(tmp_path):
    """An archive whose conv states are in layout version 3 converts through load_model_file and
    from_torch (the path of `qnnpy convert`) to the same module as the version-2 original."""
    fx_model, x = quantized_functional_fx()
    source = tmp_path / "v2.pt"
    torch.jit.save(torch.jit.script(fx_model), str(source))
    assert rewrite_conv_states(source, tmp_path / "v3.pt", 3) == 1
    assert {state[0] for cls, state in packed_param_states(tmp_path / "v3.pt").values()
            if cls == "Conv2dPackedParamsBase"} == {3}
    torch.backends.quantized.engine = "fbgemm"
    v2 = qnnpy.from_torch(load_model_file(source).model, x)
    v3 = qnnpy.from_torch(load_model_file(tmp_path / "v3.pt").model, x)
    assert v3.graph.serialize() == v2.graph.serialize()
    with torch.no_grad():
        np.testing.assert_array_equal(v3.run(x.numpy(), profile="fbgemm").dequantized, fx_model(x).numpy())

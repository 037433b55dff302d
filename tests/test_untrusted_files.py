"""Files from elsewhere: no code runs without --trust-pickle / trust_pickle=True, readers are
bounded, a saved folder is read back whole, and every refusal is one clear error."""
from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import qnnpy
from graph_file_writer import FileValue, graph_file, quantize_value
from qnnpy import cli
from qnnpy.capture.torchscript_archive import packed_param_states, read_archive_objects
from qnnpy.errors import ConversionError
from qnnpy.model_files import InputFileError, UntrustedPickleError, load_model_file
from small_models import Head, quantized

SHAPE = (1, 3, 8, 8)


class Payload:
    """Unpickling this calls open(marker, "w"): the file appears only if the pickle's code ran."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_a_pickle_with_a_payload_is_refused_without_trust(tmp_path):
    marker = tmp_path / "payload_ran"
    torch.save(Payload(marker), tmp_path / "model.pt")
    with pytest.raises(UntrustedPickleError, match="it names io.open"):
        load_model_file(tmp_path / "model.pt")
    assert not marker.exists()
    assert cli.main(["convert", str(tmp_path / "model.pt"), "-o", str(tmp_path / "out"), "--input-shape", "1,3,8,8"]) \
        == cli.EXIT_INPUT_FILE
    assert not marker.exists()


def test_trust_pickle_means_the_pickle_runs(tmp_path):
    marker = tmp_path / "payload_ran"
    torch.save(Payload(marker), tmp_path / "model.pt")
    with pytest.raises(InputFileError, match="not a torch.nn.Module"):
        load_model_file(tmp_path / "model.pt", trust_pickle=True)
    assert marker.exists()


def test_a_pickled_model_needs_trust_and_loads_with_it(tmp_path, capsys):
    model, _ = quantized(Head(linear_relu=False), SHAPE[1:])
    torch.save(model, tmp_path / "model.pt")
    args = ["convert", str(tmp_path / "model.pt"), "-o", str(tmp_path / "out"), "--input-shape", "1,3,8,8"]
    assert cli.main(args) == cli.EXIT_INPUT_FILE
    assert "--trust-pickle" in capsys.readouterr().err
    assert cli.main(args + ["--trust-pickle"]) == cli.EXIT_OK
    assert isinstance(load_model_file(tmp_path / "model.pt", trust_pickle=True).model, nn.Module)


def test_a_state_dict_still_loads_without_trust_and_is_reported_as_such(tmp_path):
    model, _ = quantized(Head(linear_relu=False), SHAPE[1:])
    torch.save(model.state_dict(), tmp_path / "state.pt")
    with pytest.raises(InputFileError, match="holds a dict"):
        load_model_file(tmp_path / "state.pt")


@pytest.mark.parametrize("content, reason", [(bytes(range(224, 256)) * 8, r"UnpicklingError: Unsupported operand 224"),
                                             (b"hello world", r"KeyError")])
def test_a_file_that_is_no_model_is_refused_without_advising_an_unsafe_load(tmp_path, content, reason):
    """torch.load's weights-only error advises weights_only=False; for a file that is no pickle at all that is
    both useless and unsafe advice, so qnnpy says what the file is not and why torch.load stopped."""
    (tmp_path / "model.pt").write_bytes(content)
    with pytest.raises(InputFileError, match=r"not a TorchScript or torch\.export archive, and torch\.load cannot "
                                             rf"read it \({reason}") as info:
        load_model_file(tmp_path / "model.pt")
    assert "weights_only" not in str(info.value)


def test_trust_pickle_is_documented_in_the_cli_help(capsys):
    assert cli.main(["convert", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--trust-pickle" in text and "runs whatever code the file names" in text


# --- the restricted archive reader ---------------------------------------------------

class SharedStorage(nn.Module):
    """Two buffers that are views of one storage: the archive holds one record for both."""

    def __init__(self) -> None:
        super().__init__()
        base = torch.arange(64, dtype=torch.float32)
        self.register_buffer("a", base)
        self.register_buffer("b", base[8:])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.a[0] + self.b[0]


def test_the_archive_reader_reads_each_record_once(tmp_path, monkeypatch):
    torch.jit.save(torch.jit.script(SharedStorage()), tmp_path / "shared.pt")
    reads: list[str] = []
    original = zipfile.ZipFile.read
    monkeypatch.setattr(zipfile.ZipFile, "read", lambda self, name, pwd=None: reads.append(name) or original(self, name, pwd))
    root = read_archive_objects(tmp_path / "shared.pt")
    assert torch.equal(root.state["b"], torch.arange(8, 64, dtype=torch.float32))
    assert sorted(reads) == sorted(set(reads))
    assert sum("/data/" in name for name in reads) == 1


def test_the_archive_reader_stops_at_its_size_limit(tmp_path):
    model, x = quantized(Head(linear_relu=False), SHAPE[1:])
    torch.jit.save(torch.jit.trace(model, x), tmp_path / "scripted.pt")
    assert packed_param_states(tmp_path / "scripted.pt")  # within the default limit
    with pytest.raises(ConversionError, match="exceeds the limit of 1000 bytes"):
        packed_param_states(tmp_path / "scripted.pt", max_bytes=1000)


def test_a_damaged_archive_is_a_conversion_error(tmp_path):
    with zipfile.ZipFile(tmp_path / "bad.pt", "w") as archive:
        archive.writestr("m/data.pkl", b"\x80\x02}q\x00.garbage")  # a dict, then junk
    with pytest.raises(ConversionError, match="holds dict, not a module|cannot read the TorchScript archive"):
        read_archive_objects(tmp_path / "bad.pt")
    with zipfile.ZipFile(tmp_path / "bad2.pt", "w") as archive:
        archive.writestr("m/data.pkl", b"\x80\x02(X\x07\x00\x00\x00storageq\x00")  # truncated pickle
    with pytest.raises(ConversionError, match="cannot read the TorchScript archive"):
        read_archive_objects(tmp_path / "bad2.pt")


# --- saved module folders --------------------------------------------------------------

@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    model, x = quantized(Head(linear_relu=False), SHAPE[1:])
    out = tmp_path_factory.mktemp("saved")
    qnnpy.from_torch(model, (x,)).save(out)
    return out


def copy_of(saved: Path, tmp_path: Path) -> Path:
    for name in ("graph.qnnpy", "module.py"):
        (tmp_path / name).write_bytes((saved / name).read_bytes())
    return tmp_path


def test_an_old_folders_params_npz_is_read_back_and_must_match_the_graph(saved, tmp_path):
    folder = copy_of(saved, tmp_path)
    params = qnnpy.load(folder).params
    np.savez(folder / "params.npz", **params)  # the layout of qnnpy 0.1.0: the params twice
    qnnpy.load(folder)
    name = next(iter(params))
    np.savez(folder / "params.npz", **{**params, name: params[name] + 1})
    with pytest.raises(ValueError, match=f"params.npz: param '{name}' differs from the graph file's"):
        qnnpy.load(folder)
    (folder / "params.npz").write_bytes(b"not an npz")
    with pytest.raises(ValueError, match="params.npz: cannot read"):
        qnnpy.load(folder)


def test_inspect_of_a_damaged_graph_exits_4_naming_the_file_and_the_node(saved, tmp_path, capsys):
    folder = copy_of(saved, tmp_path)
    data = bytearray((folder / "graph.qnnpy").read_bytes())
    # A node whose param id points nowhere (IndexError in the core before): one value, then a conv referring to param 7.
    bad = graph_file([], quantize_value([1, 3, 4, 4]) + [
        FileValue("y", "uint8", [1, 2, 4, 4], [0.2], [0], op="conv2d", inputs=[1], params={"weight": 7},
                  ints={"stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "groups": [1], "relu": [0]})], [2])
    (folder / "graph.qnnpy").write_bytes(bad)
    assert cli.main(["inspect", str(folder)]) == cli.EXIT_INPUT_FILE
    err = capsys.readouterr().err
    assert str(folder / "graph.qnnpy") in err and "no param with id 7" in err
    data[12] ^= 0xFF  # the param count
    (folder / "graph.qnnpy").write_bytes(bytes(data))
    assert cli.main(["inspect", str(folder)]) == cli.EXIT_INPUT_FILE
    err = capsys.readouterr().err
    assert err.count("qnnpy: error:") == 1 and "graph.qnnpy" in err


def test_inspect_names_the_node_of_an_invalid_attribute(saved, tmp_path, capsys):
    folder = copy_of(saved, tmp_path)
    values = quantize_value([1, 3, 8, 8]) + [
        FileValue("y", "uint8", [1, 3, 3, 3], [0.1], [128], op="max_pool2d", inputs=[1], source="body.pool",
                  ints={"kernel": [2, 2], "stride": [2, 2], "padding": [-1, -1], "dilation": [1, 1], "ceil_mode": [0]})]
    (folder / "graph.qnnpy").write_bytes(graph_file([], values, [2]))
    assert cli.main(["inspect", str(folder)]) == cli.EXIT_INPUT_FILE
    assert "max_pool2d (body.pool): attribute 'padding' must be >= 0" in capsys.readouterr().err

"""atheris harness: qnnpy's readers of TorchScript archives (``torch.jit.save`` zip files).

Each input is an archive. ``qnnpy.model_files.detect_kind`` classifies it (it may
raise only what ``load_model_file`` turns into ``InputFileError``), then
``qnnpy.capture.torchscript_archive.packed_param_states`` unpickles its ``data.pkl``
with the restricted unpickler and every conv packed state found goes through
``conv_state_from_tuple`` (the reader of PyTorch's state layouts). Any input must
either be read or be refused with ``ValueError`` (``ConversionError`` is one); every
other exception and every crash is a finding. ``torch.jit.load`` itself (PyTorch's
C++ reader) is not fuzzed here.

An input that is not a zip archive (no ``PK`` at the start) is taken as the
``data.pkl`` of an archive whose storages are those of the seed
conv_per_tensor.pt: mutations of a whole archive mostly break its CRCs, so this is
how the fuzzer reaches the unpickler. Seeds: fuzz/corpus/torchscript_archive
(archives and the ``data.pkl`` of each). Run:

    .venv/bin/python -P fuzz/atheris_torchscript_archive.py fuzz/corpus/torchscript_archive -max_total_time=60
"""
from __future__ import annotations

import io
import sys
import tempfile
import zipfile
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["qnnpy"], enable_loader_override=False):
    from qnnpy.capture.torchscript_archive import packed_param_states
    from qnnpy.convert.torch_weight_reader import conv_state_from_tuple
    from qnnpy.model_files import ZIP_READ_ERRORS, detect_kind

# In memory where the machine has /dev/shm: detect_kind reads a path.
ARCHIVE = Path(tempfile.mkdtemp(prefix="qnnpy-fuzz-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None)) / "m.pt"


TEMPLATE = Path(__file__).resolve().parent / "corpus" / "torchscript_archive" / "conv_per_tensor.pt"


def _template_records() -> dict[str, bytes]:
    """The records of the template archive the reader opens besides data.pkl: storages and byte order."""
    with zipfile.ZipFile(TEMPLATE) as archive:
        return {n: archive.read(n) for n in archive.namelist() if "/data/" in n or n.endswith("/byteorder")}


RECORDS = _template_records()
PREFIX = next(iter(RECORDS)).split("/", 1)[0]


def as_archive(data: bytes) -> bytes:
    """The input itself if it is a zip archive, else the template archive with the input as data.pkl."""
    if data.startswith(b"PK"):
        return data
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr(f"{PREFIX}/data.pkl", data)
        for name, record in RECORDS.items():
            archive.writestr(name, record)
    return buffer.getvalue()


def test_one_input(data: bytes) -> None:
    data = as_archive(data)
    ARCHIVE.write_bytes(data)
    try:
        detect_kind(ARCHIVE)
    except ZIP_READ_ERRORS:
        pass  # what load_model_file turns into InputFileError
    try:
        for path, (class_name, state) in packed_param_states(io.BytesIO(data)).items():
            if class_name.startswith("Conv"):
                conv_state_from_tuple(state, path)
    except ValueError:
        pass  # the documented refusal of a bad archive


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()

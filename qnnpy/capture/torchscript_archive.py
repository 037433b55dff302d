"""The packed-param states a TorchScript archive stores, read as written.

``torch.jit.load`` re-packs every conv and linear weight through its class's
``__setstate__``, and ``__getstate__`` then answers in the layout of the
running torch (conv state version 2 today), whatever the archive holds. To see
the layout an archive actually stores (conv versions 2 or 3), this module
unpickles the archive's ``data.pkl`` itself: tensors are rebuilt from the
archive's storages, TorchScript objects become :class:`PickledObject` records
(class name and state), and no other global is imported or called.
"""
from __future__ import annotations

import collections
import io
import os
import pickle
import pickletools
import re
import sys
import zipfile
from dataclasses import dataclass
from typing import IO, Any

import torch
import torch.jit._pickle

from qnnpy.errors import ConversionError
from qnnpy.quantized_types import (ALL_SCHEMES, INTEGER_DTYPE, PER_CHANNEL_SCHEMES, PER_TENSOR_SCHEMES,
                                    QuantizedValue)

PACKED_PARAMS_PREFIX = "__torch__.torch.classes.quantized."

# The storage classes a pickled tensor names, and the element type each holds.
_STORAGE_DTYPES = {
    "FloatStorage": torch.float32, "DoubleStorage": torch.float64, "HalfStorage": torch.float16,
    "BFloat16Storage": torch.bfloat16, "LongStorage": torch.int64, "IntStorage": torch.int32,
    "ShortStorage": torch.int16, "CharStorage": torch.int8, "ByteStorage": torch.uint8, "BoolStorage": torch.bool,
    "QInt8Storage": torch.qint8, "QUInt8Storage": torch.quint8, "QInt32Storage": torch.qint32,
}


@dataclass
class _Storage:
    dtype: torch.dtype
    data: bytes


def _strided(storage: _Storage, offset: int, size: tuple[int, ...], stride: tuple[int, ...]) -> torch.Tensor:
    element = INTEGER_DTYPE.get(storage.dtype, storage.dtype)
    flat = torch.frombuffer(bytearray(storage.data), dtype=element) if storage.data else torch.empty(0, dtype=element)
    return flat.as_strided(size, stride, offset)


def _rebuild_tensor(storage: _Storage, offset: int, size: tuple[int, ...], stride: tuple[int, ...],
                    requires_grad: bool, backward_hooks: Any) -> torch.Tensor:
    return _strided(storage, offset, size, stride)


def _rebuild_quantized_tensor(storage: _Storage, offset: int, size: tuple[int, ...], stride: tuple[int, ...],
                              qparams: tuple, requires_grad: bool, backward_hooks: Any) -> QuantizedValue:
    values = _strided(storage, offset, size, stride)
    scheme = qparams[0]
    if scheme in PER_TENSOR_SCHEMES:
        return QuantizedValue(values, qparams[1], qparams[2])
    if scheme in PER_CHANNEL_SCHEMES:
        return QuantizedValue(values, qparams[1], qparams[2], qparams[3])
    raise ConversionError(f"TorchScript archive: quantization scheme {scheme} is not supported")


_ALLOWED_GLOBALS: dict[tuple[str, str], Any] = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_qtensor"): _rebuild_quantized_tensor,
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch", "device"): torch.device,
    **{("torch.jit._pickle", name): getattr(torch.jit._pickle, name)
       for name in ("build_intlist", "build_doublelist", "build_boollist", "build_tensorlist", "restore_type_tag")},
    **{("torch", str(scheme).removeprefix("torch.")): scheme for scheme in ALL_SCHEMES},
}


class PickledObject:
    """A TorchScript object (module or class instance) as the archive stores it: class name and state."""

    class_name = ""
    state: Any = None

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def __repr__(self) -> str:
        return f"PickledObject({self.class_name})"


# The most bytes one archive may make the reader decompress (data.pkl and every storage record).
DEFAULT_MAX_BYTES = 1 << 31


class _RecordReader:
    """Reads an archive's records by name, each at most once, refusing past ``max_bytes`` decompressed in total.

    The sizes are the ones the zip directory declares; ``zipfile`` never returns more
    than the declared size of a record.
    """

    def __init__(self, archive: zipfile.ZipFile, max_bytes: int):
        self.archive = archive
        self.remaining = max_bytes
        self.max_bytes = max_bytes
        self.cache: dict[str, bytes] = {}

    def read(self, name: str) -> bytes:
        if name not in self.cache:
            try:
                size = self.archive.getinfo(name).file_size
            except KeyError:
                raise ConversionError(f"TorchScript archive has no record {name!r}") from None
            if size > self.remaining:
                raise ConversionError(f"TorchScript archive: record {name!r} ({size} bytes) exceeds the limit of "
                                      f"{self.max_bytes} bytes read per archive")
            self.remaining -= size
            self.cache[name] = self.archive.read(name)
        return self.cache[name]


def _check_declared_lengths(data: bytes) -> None:
    """Refuse a pickle whose opcodes declare more bytes than it holds, before unpickling allocates them.

    ``pickletools.genops`` reads each opcode's argument without allocating its declared
    length (a 500-byte data.pkl can declare a 20 GB BYTEARRAY8, which pickle allocates first).
    """
    try:
        for _ in pickletools.genops(data):
            pass
    except ValueError as e:
        raise ConversionError(f"cannot read the TorchScript archive: data.pkl is malformed: {e}") from e


# The pure-Python unpickler: its memo is a dict, where the C one sizes an array by the largest
# memo index a file names (a 1.4 kB archive with LONG_BINPUT 10**9 asked for gigabytes).
class _ArchiveUnpickler(pickle._Unpickler):
    def __init__(self, records: _RecordReader, prefix: str):
        data = records.read(f"{prefix}/data.pkl")
        _check_declared_lengths(data)
        super().__init__(io.BytesIO(data))
        self.records = records
        self.prefix = prefix
        self.classes: dict[str, type] = {}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED_GLOBALS:
            return _ALLOWED_GLOBALS[(module, name)]
        if module == "torch" and name in _STORAGE_DTYPES:
            return _STORAGE_DTYPES[name]
        if module.startswith("__torch__."):
            qualified = f"{module}.{name}"
            if qualified not in self.classes:
                self.classes[qualified] = type(name, (PickledObject,), {"class_name": qualified})
            return self.classes[qualified]
        raise ConversionError(f"TorchScript archive refers to {module}.{name}, which qnnpy does not load")

    def persistent_load(self, pid: Any) -> _Storage:
        if not isinstance(pid, tuple) or len(pid) != 5 or pid[0] != "storage":
            raise ConversionError(f"TorchScript archive: unknown persistent id {pid!r:.80}")
        _kind, dtype, key, _location, _numel = pid
        if not isinstance(key, str) or not re.fullmatch(r"[A-Za-z0-9_]+", key):
            raise ConversionError(f"TorchScript archive: bad storage key {key!r:.80}")
        return _Storage(dtype, self.records.read(f"{self.prefix}/data/{key}"))


def _archive_prefix(archive: zipfile.ZipFile) -> str:
    roots = [name[: -len("/data.pkl")] for name in archive.namelist() if re.fullmatch(r"[^/]+/data\.pkl", name)]
    if len(roots) != 1:
        raise ConversionError("not a TorchScript archive: expected exactly one <name>/data.pkl")
    return roots[0]


def read_archive_objects(path: str | os.PathLike | IO[bytes], max_bytes: int = DEFAULT_MAX_BYTES) -> PickledObject:
    """The root module of a ``torch.jit.save`` archive, unpickled into :class:`PickledObject` records.

    No code from the archive runs: only the globals that rebuild tensors and
    TorchScript objects are resolved. At most ``max_bytes`` are decompressed; every
    problem with the file raises :class:`ConversionError`.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            records = _RecordReader(archive, max_bytes)
            prefix = _archive_prefix(archive)
            if f"{prefix}/byteorder" in archive.namelist():
                order = records.read(f"{prefix}/byteorder").decode(errors="replace").strip()
                if order != sys.byteorder:
                    raise ConversionError(f"TorchScript archive is {order}-endian; this machine is {sys.byteorder}-endian")
            root = _ArchiveUnpickler(records, prefix).load()
    except ConversionError:
        raise
    except Exception as e:  # zipfile, pickle and torch (as_strided bounds, qparams) raise many types on bad data
        name = path if isinstance(path, (str, os.PathLike)) else "archive"
        raise ConversionError(f"cannot read the TorchScript archive {name}: {type(e).__name__}: {e}") from e
    if not isinstance(root, PickledObject):
        raise ConversionError(f"TorchScript archive holds {type(root).__name__}, not a module")
    return root


def packed_param_states(path: str | os.PathLike | IO[bytes], max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, tuple[str, Any]]:
    """Attribute path -> (class name, stored state) of every quantized packed-params object in an archive.

    The path is the module attribute chain (``_packed_weight_0``,
    ``fc._packed_params._packed_params``); the state is the tuple the archive
    stores, e.g. ``("2", [config, weight], [bias])`` or ``(3, config, [None, weight, bias])``
    for a conv.
    """
    found: dict[str, tuple[str, Any]] = {}

    def visit(obj: Any, path: str) -> None:
        if not isinstance(obj, PickledObject):
            return
        if obj.class_name.startswith(PACKED_PARAMS_PREFIX):
            found[path] = (obj.class_name[len(PACKED_PARAMS_PREFIX):], obj.state)
        elif isinstance(obj.state, dict):
            for name, value in obj.state.items():
                visit(value, f"{path}.{name}" if path else name)

    visit(read_archive_objects(path, max_bytes), "")
    return found

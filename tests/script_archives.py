"""Hand-made TorchScript archives: conv packed-params state rewritten to layout version 2 or 3.

``torch.jit.save`` writes conv packed params in the layout its torch serializes
(version 2 today). ``rewrite_conv_states`` unpickles the archive's ``data.pkl``
into inert records (every global, persistent id and object kept as it came),
replaces the state of each ``Conv2dPackedParamsBase`` with the requested layout
and pickles the records back, leaving every other archive entry untouched.

Layouts (PyTorch's conv_serialization.h):
- version 2: ``("2", [config int16 tensor, weight], [bias])``
- version 3: ``(3, [config ints], [None, weight, bias])``
"""
from __future__ import annotations

import copyreg
import io
import pickle
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

_CONV_CLASS = ("__torch__.torch.classes.quantized", "Conv2dPackedParamsBase")
_OPTIONAL_TENSORS = "List[Optional[Tensor]]"


class _Record:
    """A pickled global, or an object built from one, kept for pickling back unchanged."""

    module_name = ""
    global_name = ""

    def __new__(cls, *args: Any) -> "_Record":
        record = object.__new__(cls)
        record.args = args
        record.called = False
        record.state = None
        return record

    def __init__(self, *args: Any):
        self.called = True  # built by REDUCE (a call), not NEWOBJ

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def __reduce__(self) -> tuple:
        build = (type(self), self.args) if self.called else (copyreg.__newobj__, (type(self), *self.args))
        return build if self.state is None else (*build, self.state)


class _PersistentId:
    def __init__(self, pid: Any):
        self.pid = pid


class _RecordingUnpickler(pickle._Unpickler):
    def __init__(self, data: bytes):
        super().__init__(io.BytesIO(data))
        self.globals: dict[tuple[str, str], type] = {}

    def find_class(self, module: str, name: str) -> type:
        return record_class(self.globals, module, name)

    def persistent_load(self, pid: Any) -> _PersistentId:
        return _PersistentId(pid)


class _RecordPickler(pickle._Pickler):
    def save_global(self, obj: Any, name: str | None = None) -> None:
        if isinstance(obj, type) and issubclass(obj, _Record):
            self.write(pickle.GLOBAL + f"{obj.module_name}\n{obj.global_name}\n".encode())
            self.memoize(obj)
        else:
            super().save_global(obj, name)

    def persistent_id(self, obj: Any) -> Any:
        return obj.pid if isinstance(obj, _PersistentId) else None


def record_class(cache: dict[tuple[str, str], type], module: str, name: str) -> type:
    if (module, name) not in cache:
        cache[(module, name)] = type(name, (_Record,), {"module_name": module, "global_name": name})
    return cache[(module, name)]


def _walk(obj: Any, seen: set[int]):
    if id(obj) in seen:
        return
    seen.add(id(obj))
    yield obj
    children: Any = ()
    if isinstance(obj, _Record):
        children = (*obj.args, obj.state)
    elif isinstance(obj, (list, tuple)):
        children = obj
    elif isinstance(obj, dict):
        children = obj.values()
    for child in children:
        yield from _walk(child, seen)


def _config_values(tensor: _Record, archive: zipfile.ZipFile, prefix: str) -> list[int]:
    """The int16 values of a rebuilt 1-D tensor record, read from its storage in the archive."""
    pid, offset, size = tensor.args[0].pid, tensor.args[1], tensor.args[2]
    raw = np.frombuffer(archive.read(f"{prefix}/data/{pid[2]}"), dtype="<i2")
    return [int(v) for v in raw[offset: offset + size[0]]]


def _rewrite_state(state: tuple, version: int, globals_: dict, archive: zipfile.ZipFile, prefix: str) -> tuple:
    stored_version, tensors, optional = state
    if stored_version != "2":
        raise ValueError(f"expected torch to write conv state version 2, found {stored_version!r}")
    config, weight = tensors.args[0]
    (bias,) = optional.args[0]
    tag = record_class(globals_, "torch.jit._pickle", "restore_type_tag")
    if version == 2:
        tensor_list = record_class(globals_, "torch.jit._pickle", "build_tensorlist")
        return "2", tensor_list([config, weight]), tag([bias], _OPTIONAL_TENSORS)
    int_list = record_class(globals_, "torch.jit._pickle", "build_intlist")
    return 3, int_list(_config_values(config, archive, prefix)), tag([None, weight, bias], _OPTIONAL_TENSORS)


def rewrite_conv_states(source: Path, target: Path, version: int) -> int:
    """Copy the archive ``source`` to ``target`` with every conv packed-params state in layout ``version``.

    The state is rebuilt from the stored version-2 one: same weight and bias
    storages, same configuration values. Returns the number of conv states rewritten.
    """
    with zipfile.ZipFile(source) as archive:
        (data_name,) = [n for n in archive.namelist() if n.count("/") == 1 and n.endswith("/data.pkl")]
        prefix = data_name.split("/")[0]
        unpickler = _RecordingUnpickler(archive.read(data_name))
        root = unpickler.load()
        rewritten = 0
        for obj in list(_walk(root, set())):
            if isinstance(obj, _Record) and (obj.module_name, obj.global_name) == _CONV_CLASS:
                obj.state = _rewrite_state(obj.state, version, unpickler.globals, archive, prefix)
                rewritten += 1
        out = io.BytesIO()
        _RecordPickler(out, protocol=2).dump(root)
        with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as copy:
            for info in archive.infolist():
                copy.writestr(info, out.getvalue() if info.filename == data_name else archive.read(info))
    return rewritten

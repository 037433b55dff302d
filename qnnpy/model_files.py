"""Reading a saved PyTorch model whatever way it was written: TorchScript, ``torch.save`` or ``torch.export``.

The kind is read from the file's contents, not its name: TorchScript and
``torch.export`` archives and ``torch.save`` files are zip archives that differ in
the records they hold; a file that is not a zip archive can still be a legacy
``torch.save`` pickle.
"""
from __future__ import annotations

import importlib
import os
import pickle
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import torch

from qnnpy.errors import InputFileError

TORCHSCRIPT = "torchscript"
PICKLED_MODULE = "pickled module"
EXPORTED_PROGRAM = "torch.export program"


# What reading a damaged zip's directory raises: besides BadZipFile, a record name that is not
# UTF-8 raises UnicodeDecodeError and an unknown zip version NotImplementedError (Python's zipfile.py).
ZIP_READ_ERRORS = (OSError, zipfile.BadZipFile, UnicodeDecodeError, NotImplementedError)


@dataclass
class LoadedModel:
    """A model read from disk and how it was stored."""

    model: torch.nn.Module
    kind: str
    path: Path


def _record_names(path: Path) -> list[str]:
    """Names of a zip archive's records without the archive's top folder."""
    with zipfile.ZipFile(path) as archive:
        return [name.split("/", 1)[1] if "/" in name else name for name in archive.namelist()]


def detect_kind(path: str | os.PathLike) -> str:
    """``"torchscript"``, ``"torch.export program"`` or ``"pickled module"`` (the default for anything else).

    Raises one of :data:`ZIP_READ_ERRORS` for a zip archive whose directory cannot be read.
    """
    path = Path(path)
    if not zipfile.is_zipfile(path):
        return PICKLED_MODULE  # legacy (non-zip) torch.save; torch.load tells if it is not
    names = _record_names(path)
    if "constants.pkl" in names or any(n.startswith("code/") for n in names):
        return TORCHSCRIPT
    if "archive_format" in names or any(n.startswith("models/") for n in names):
        return EXPORTED_PROGRAM
    return PICKLED_MODULE


def _rebuilt_if_incomplete(module: torch.nn.Module) -> torch.nn.Module:
    """``module``, or a rebuilt copy if unpickling left it without ``nn.Module``'s own attributes.

    PyTorch's quantized conv modules restore their pickled state with a ``__setstate__``
    that never runs ``nn.Module.__init__``, so after ``torch.load`` they lack
    ``_modules``/``_parameters`` and fail on first use (pytorch/pytorch#25137, still so
    in torch 2.14; PyTorch recommends state_dict or TorchScript instead). Their
    ``__deepcopy__`` builds a complete module from the same state.
    """
    if "_modules" in module.__dict__ or not hasattr(type(module), "__deepcopy__"):
        return module
    return module.__deepcopy__({})


def _complete_modules(module: torch.nn.Module) -> torch.nn.Module:
    """Rebuild every incomplete module in the tree under ``module`` (see :func:`_rebuilt_if_incomplete`)."""
    module = _rebuilt_if_incomplete(module)
    children = module.__dict__.get("_modules", {})
    for name, child in list(children.items()):
        if child is not None:
            children[name] = _complete_modules(child)
    return module


def _refused_global(error: Exception) -> str:
    """The "Unsupported global: GLOBAL x" part of torch's weights-only refusal, or the error's type."""
    match = re.search(r"Unsupported global: GLOBAL (\S+)", str(error))
    return f"it names {match.group(1)}" if match else type(error).__name__


class UntrustedPickleError(InputFileError):
    """A pickle that only a full unpickler (which runs code from the file) can read, refused without ``trust_pickle``."""


def _load_pickled(path: Path, trust_pickle: bool) -> torch.nn.Module:
    if trust_pickle:
        obj = torch.load(path, weights_only=False, map_location="cpu")
    else:
        try:
            obj = torch.load(path, weights_only=True, map_location="cpu")
        except pickle.UnpicklingError as e:
            if "Unsupported global" not in str(e):  # not a refusal of the allowlist: a damaged or foreign file
                raise
            raise UntrustedPickleError(
                f"{path} is a pickle that needs Python classes or functions from outside torch's weights-only "
                f"allowlist ({_refused_global(e)}). A whole module saved with torch.save is such a pickle, and reading one "
                "runs code the file names: qnnpy refuses it unless told the file is trusted (--trust-pickle on the "
                "command line, trust_pickle=True in the API). Safer: save the model as TorchScript "
                "(torch.jit.save), which qnnpy reads without unpickling Python objects"
            ) from e
    if isinstance(obj, dict):
        raise InputFileError(
            f"{path} holds a dict (a state_dict?), not a model: save the whole module with "
            "torch.save(model, path) or torch.jit.save(torch.jit.trace(model, x), path)"
        )
    if not isinstance(obj, torch.nn.Module):
        raise InputFileError(f"{path} holds a {type(obj).__name__}, not a torch.nn.Module")
    return _complete_modules(obj)


def load_model_file(path: str | os.PathLike, trust_pickle: bool = False) -> LoadedModel:
    """Read a quantized model saved with ``torch.jit.save`` or ``torch.save(model, path)``.

    ``torch.save`` files are read with ``torch.load(weights_only=True)``, which runs
    no code from the file and therefore cannot rebuild a whole module: such a file
    raises :class:`UntrustedPickleError` unless ``trust_pickle=True``. With
    ``trust_pickle=True`` the file is fully unpickled (``weights_only=False``): that
    runs whatever code the file names, so pass it only for files you trust; the
    model's classes must be importable. TorchScript archives are read by
    ``torch.jit.load``, whose unpickler rebuilds only tensors and TorchScript objects.
    Conv and linear weights are packed for the current ``torch.backends.quantized.engine``.

    A ``torch.export`` archive (``torch.export.save``, .pt2) is read with ``torch.export.load``
    and its program's module returned: a PT2E-quantized graph (``convert_pt2e``) that
    ``qnnpy.from_torch`` converts.

    Raises :class:`InputFileError` for a missing or unreadable file.
    """
    path = Path(path)
    if not path.exists():
        raise InputFileError(f"{path}: no such file")
    if not path.is_file():
        raise InputFileError(f"{path} is not a file")
    try:
        kind = detect_kind(path)
    except ZIP_READ_ERRORS as e:
        raise InputFileError(f"cannot read {path}: {e}") from e
    try:
        if kind == EXPORTED_PROGRAM:
            # A PT2E archive calls quantized_decomposed ops, which torch.export.load resolves by name: registered
            # by importing their module (PyTorch's copy of torchao's), or a fresh process fails to read the file.
            importlib.import_module("torch.ao.quantization.fx._decomposed")
            # An exported module has no train/eval switch of its own (PT2E graphs carry the mode in their ops).
            return LoadedModel(torch.export.load(str(path)).module(), kind, path)
        if kind == TORCHSCRIPT:
            model = torch.jit.load(str(path), map_location="cpu")
        else:
            model = _load_pickled(path, trust_pickle)
    except InputFileError:
        raise
    except Exception as e:  # unpickling and TorchScript loading raise many types; all mean "cannot read"
        if kind == PICKLED_MODULE:  # what is not a recognized archive is tried as a torch.save pickle
            raise InputFileError(f"cannot load {path}: not a TorchScript or torch.export archive, and torch.load "
                                 f"cannot read it ({_load_failure(e)})") from e
        raise InputFileError(f"cannot load {path} as a {kind}: {_load_failure(e)}") from e
    return LoadedModel(model.eval(), kind, path)


def _load_failure(e: Exception) -> str:
    """What went wrong, in one line: the weights-only unpickler's own reason where torch.load gives one
    (its message around it advises weights_only=False, which does not apply to a file that is no
    pickle), else the first line of the message."""
    text = str(e).strip()
    lines = [line.strip() for line in text.split("WeightsUnpickler error:", 1)[-1].splitlines() if line.strip()]
    return f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__

"""Assertions for users' own test suites: is my converted module exact, does it classify the same?

::

    from qnnpy.testing import assert_bit_exact, assert_top1_agrees

    def test_my_model_is_bit_exact(model, example):
        module = qnnpy.from_torch(model, (example,))
        assert_bit_exact(model, module, [example], profile="fbgemm")

Each profile of the integer runtime equals one PyTorch quantized engine (``fbgemm`` <->
``fbgemm``, ``int32_bias`` <-> ``qnnpack``). The helpers run PyTorch under the engine
paired with the profile unless told otherwise, on a copy of the model re-packed for
that engine, and restore the engine the caller had.
"""
from __future__ import annotations

import contextlib
import copy
from typing import Iterator, Sequence

import numpy as np
import torch

from qnnpy.comparison import compare
from qnnpy.module import QDQModule
from qnnpy.profiles import ENGINE_FOR_PROFILE, check_profile


@contextlib.contextmanager
def engine_copy(model: torch.nn.Module, engine: str) -> Iterator[torch.nn.Module]:
    """A deep copy of ``model`` whose conv/linear weights are packed for ``engine``; the engine
    is ``engine`` inside the block and restored after it."""
    previous = torch.backends.quantized.engine
    torch.backends.quantized.engine = engine
    try:
        yield copy.deepcopy(model)  # unpickling the packed params packs them for the current engine
    finally:
        torch.backends.quantized.engine = previous


def _as_list(inputs: torch.Tensor | Sequence[torch.Tensor]) -> list[torch.Tensor]:
    return [inputs] if isinstance(inputs, torch.Tensor) else list(inputs)


def _engine(profile: str, engine: str | None) -> str:
    if engine:
        return engine
    if check_profile(profile) not in ENGINE_FOR_PROFILE:
        raise ValueError(f"profile {profile!r} equals no PyTorch engine: pass engine= to compare it with one")
    return ENGINE_FOR_PROFILE[profile]


def assert_bit_exact(
    model: torch.nn.Module,
    module: QDQModule,
    inputs: torch.Tensor | Sequence[torch.Tensor],
    profile: str = "fbgemm",
    engine: str | None = None,
) -> None:
    """Assert that every quantized tensor of ``module`` run under ``profile`` equals PyTorch's, bit for bit.

    ``module`` must come from :func:`qnnpy.from_torch` on ``model`` (not from disk).
    ``inputs`` is one input tensor or a sequence of them, each shaped like the module's
    input. PyTorch runs under ``engine`` (default: the engine the profile equals).
    On failure the ``AssertionError`` names the first diverging layer (PyTorch module
    path and op), the fraction of its values that are identical and the largest
    difference in quantization steps (LSB), followed by the per-layer table.
    """
    engine = _engine(profile, engine)
    with engine_copy(model, engine) as repacked:
        report = compare(repacked, module, _as_list(inputs), profiles=[profile])
    first = report.first_divergence(profile)
    if first is not None:
        raise AssertionError(
            f"profile {profile!r} differs from PyTorch's {engine} engine; first diverging layer "
            f"'{first.source}' ({first.op}): {first.identical}/{first.total} values identical "
            f"({first.fraction:.4%}), max difference {first.max_lsb} LSB\n{report.table()}"
        )


def _predictions(model: torch.nn.Module, batches: list[torch.Tensor]) -> np.ndarray:
    with torch.no_grad():
        return np.concatenate([model(x).argmax(1).numpy() for x in batches])


def _module_predictions(module: QDQModule, batches: list[torch.Tensor], backend: str, profile: str) -> np.ndarray:
    if backend == "runtime":
        return np.concatenate([module.run(x.numpy(), profile=profile).dequantized.argmax(1) for x in batches])
    if backend == "tvm":
        from qnnpy import tvm_bridge

        runner = tvm_bridge.build(module, profile=profile)
        return np.concatenate([np.asarray(runner(x.numpy())).argmax(1) for x in batches])
    raise ValueError(f"unknown backend {backend!r}; choose 'runtime' or 'tvm'")


def assert_top1_agrees(
    model: torch.nn.Module,
    module: QDQModule,
    inputs: torch.Tensor | Sequence[torch.Tensor],
    backend: str = "runtime",
    profile: str = "fbgemm",
    engine: str | None = None,
) -> None:
    """Assert that ``module`` and ``model`` predict the same class (arg max over dim 1) for every sample.

    ``backend`` is ``"runtime"`` (qnnpy's integer runtime under ``profile``) or ``"tvm"``
    (compiled with :func:`qnnpy.tvm_bridge.build` in its default form under ``profile``). ``inputs`` is one batch or a sequence of batches shaped
    like the module's input; samples are numbered across batches in order. On failure
    the ``AssertionError`` lists the indices of the samples that disagree.
    """
    batches = _as_list(inputs)
    engine = _engine(profile, engine)
    with engine_copy(model, engine) as repacked:
        expected = _predictions(repacked, batches)
    got = _module_predictions(module, batches, backend, profile)
    wrong = np.flatnonzero(got != expected)
    if wrong.size:
        where = "runtime profile " + repr(profile) if backend == "runtime" else "TVM"
        raise AssertionError(
            f"top-1 of {where} differs from PyTorch's {engine} engine on {wrong.size}/{expected.size} "
            f"sample(s): indices {wrong.tolist()}"
        )

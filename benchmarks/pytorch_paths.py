"""The ways PyTorch runs a quantized CNN on a CPU, each a contender of bench_latency.py.

* Eager mode under each quantized engine the build has among ``fbgemm``, ``onednn`` and ``x86``
  (``torch.backends.quantized.supported_engines``), the model quantized with that engine's default qconfig and
  run with the engine selected: what a user picks with ``torch.backends.quantized.engine``.
* PT2E: ``torch.export`` (strict), ``X86InductorQuantizer``, then ``torch.compile`` with
  ``torch._inductor.config.freezing = True`` (oneDNN's int8 kernels: AMX on Xeons that have it). Compiled once
  per thread count (inductor fixes the OpenMP thread count of its kernels when it compiles). The quantizer
  comes from torchao (``torchao.quantization.pt2e``), else from ``torch.ao.quantization`` (older PyTorch).

Models are torchvision's, weights=None (random weights; speed does not depend on the values).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import torch

from qnnpy import zoo

CANDIDATE_ENGINES = ("fbgemm", "onednn", "x86")


@dataclass
class PyTorchPath:
    """One contender: ``call()`` runs a forward; ``setup(threads)`` selects its engine and thread count."""
    name: str
    call: Callable[[], object]
    setup: Callable[[int], None]


def engines() -> list[str]:
    """The quantized engines of this PyTorch build that bench_latency compares."""
    return [e for e in CANDIDATE_ENGINES if e in torch.backends.quantized.supported_engines]


def _engine_setup(engine: str) -> Callable[[int], None]:
    def setup(threads: int) -> None:
        torch.backends.quantized.engine = engine
        torch.set_num_threads(threads)
    return setup


def _pt2e_api() -> tuple:
    """(prepare_pt2e, convert_pt2e, X86InductorQuantizer, get_default_x86_inductor_quantization_config)."""
    try:
        from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
        from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
            X86InductorQuantizer, get_default_x86_inductor_quantization_config)
    except ImportError:
        from torch.ao.quantization.quantize_pt2e import convert_pt2e, prepare_pt2e
        from torch.ao.quantization.quantizer.x86_inductor_quantizer import (
            X86InductorQuantizer, get_default_x86_inductor_quantization_config)
    return prepare_pt2e, convert_pt2e, X86InductorQuantizer, get_default_x86_inductor_quantization_config


def pt2e_model(name: str, x: torch.Tensor, calibration: list[torch.Tensor]) -> torch.fx.GraphModule:
    """torchvision's float ``name`` quantized by X86InductorQuantizer through torch.export (strict: the
    non-strict export merges ResNet's shared relu into one partition, which the quantizer refuses)."""
    import torchvision

    prepare_pt2e, convert_pt2e, quantizer_class, default_config = _pt2e_api()
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    exported = torch.export.export(model, (x,), strict=True).module()
    prepared = prepare_pt2e(exported, quantizer_class().set_global(default_config()))
    with torch.no_grad():
        for batch in calibration:
            prepared(batch)
    return convert_pt2e(prepared)


class PyTorchPaths:
    """Every PyTorch path for torchvision model ``name`` on input ``x``. ``notes`` says what could not run and
    how long each compile took."""

    def __init__(self, name: str, x: torch.Tensor, pt2e: bool = True):
        self.x = x
        self.notes: list[str] = []
        self.eager = {engine: zoo.quantized_torchvision(name, engine=engine, calibration_batches=2, batch_size=4)
                      for engine in engines()}
        self.graph: torch.fx.GraphModule | None = None
        if not pt2e:
            self.notes.append("PT2E + torch.compile: not run (--no-pt2e)")
            return
        try:
            # Calibration batches of x's shape: the exported graph is specialized to it.
            self.graph = pt2e_model(name, x, zoo.calibration_data(4, x.shape[0], tuple(x.shape[1:]), seed=1))
        except Exception as e:  # noqa: BLE001 - any failure of export, the quantizer or its import is reported
            self.notes.append(f"PT2E (X86InductorQuantizer): failed: {type(e).__name__}: {str(e).splitlines()[0]}")

    def contenders(self, threads: int) -> list[PyTorchPath]:
        """The paths for ``threads`` threads. PT2E is compiled again for each thread count (inductor fixes the
        OpenMP thread count of its kernels when it compiles, and one compiled graph serves every wrapper of
        the same module), so call this for one thread count at a time and time its paths before the next."""
        x = self.x
        paths = [PyTorchPath(f"PyTorch eager {engine}", lambda m=model: m(x), _engine_setup(engine))
                 for engine, model in self.eager.items()]
        if self.graph is None:
            return paths
        torch._inductor.config.freezing = True
        torch.set_num_threads(threads)
        torch._dynamo.reset()
        start = time.perf_counter()
        try:
            with torch.no_grad():
                compiled = torch.compile(self.graph)
                compiled(x)
        except Exception as e:  # noqa: BLE001
            self.notes.append(f"PT2E + torch.compile ({threads} threads): failed: {type(e).__name__}: "
                              f"{str(e).splitlines()[0]}")
            return paths
        self.notes.append(f"PT2E + torch.compile ({threads} threads): compiled in {time.perf_counter() - start:.0f} s")
        paths.append(PyTorchPath("PT2E + torch.compile", lambda: compiled(x), _engine_setup("x86")))
        return paths

"""Per-layer agreement between a PyTorch model and the integer runtime."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from qnnpy.convert.converter import capture
from qnnpy.module import QDQModule
from qnnpy.profiles import PROFILES


@dataclass
class LayerAgreement:
    """How one quantized tensor of the runtime compares with PyTorch's, over all inputs."""

    name: str        # IR value name
    source: str      # module path / node in the PyTorch model
    op: str
    identical: int   # bit-identical elements
    total: int
    max_lsb: int     # largest |difference| in quantization steps

    @property
    def fraction(self) -> float:
        return self.identical / self.total if self.total else 1.0


@dataclass
class ComparisonReport:
    """Agreement per profile: one row per quantized tensor, in execution order."""

    layers: dict[str, list[LayerAgreement]]
    inputs: int

    def final(self, profile: str) -> LayerAgreement:
        """The last quantized tensor (the model's quantized output)."""
        return self.layers[profile][-1]

    def all_identical(self, profile: str) -> bool:
        return all(r.identical == r.total for r in self.layers[profile])

    def first_divergence(self, profile: str) -> LayerAgreement | None:
        return next((r for r in self.layers[profile] if r.identical != r.total), None)

    def table(self) -> str:
        """A text table: fraction bit-identical and max LSB difference per layer and profile."""
        profiles = list(self.layers)
        rows = self.layers[profiles[0]]
        width = max(len(r.source) for r in rows) + 2
        head = f"{'layer':<{width}}{'op':<22}" + "".join(f"{p + ' identical':>22}{'max LSB':>9}" for p in profiles)
        lines = [f"{self.inputs} input(s)", head]
        for i, r in enumerate(rows):
            cells = "".join(
                f"{self.layers[p][i].fraction:>22.6%}{self.layers[p][i].max_lsb:>9}" for p in profiles
            )
            lines.append(f"{r.source:<{width}}{r.op:<22}{cells}")
        return "\n".join(lines)


def compare(
    model: torch.nn.Module,
    module: QDQModule,
    inputs: Sequence[torch.Tensor],
    profiles: Sequence[str] = PROFILES,
    isa: str | None = None,
) -> ComparisonReport:
    """Run ``model`` (PyTorch, current engine) and ``module`` (integer runtime, each profile)
    on every input and compare every quantized tensor bit by bit.

    The module must come from :func:`qnnpy.from_torch` on ``model`` (it knows which FX
    node computed each tensor). PyTorch's intermediate tensors are recorded by running
    the traced model node by node.
    """
    if not module.torch_nodes:
        raise ValueError("this module has no link to a PyTorch model (it was loaded from disk); convert it again")
    # Integer tensors computed by a PyTorch node (not those qnnpy adds, e.g. a slice ahead of a dequantize).
    nodes = [n for n in module.nodes() if n["op"] != "dequantize" and n["output"] in module.torch_nodes]
    stats = {p: {n["output"]: [0, 0, 0] for n in nodes} for p in profiles}
    for x in inputs:
        captured = capture(model, (x,))
        for profile in profiles:
            result = module.run(x.numpy(), profile=profile, isa=isa, capture=True)
            for n in nodes:
                ours = result.intermediates[n["output"]].astype(np.int64)
                theirs = captured.values[module.torch_nodes[n["output"]]].int_repr().numpy().astype(np.int64)
                diff = np.abs(ours - theirs)
                s = stats[profile][n["output"]]
                s[0] += int((diff == 0).sum())
                s[1] += diff.size
                s[2] = max(s[2], int(diff.max()))
    layers = {
        p: [LayerAgreement(n["output"], n["source"], n["op"], *stats[p][n["output"]]) for n in nodes] for p in profiles
    }
    return ComparisonReport(layers, len(inputs))

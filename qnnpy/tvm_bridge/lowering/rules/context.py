"""What every rule sees besides its island: the profile, param values and hints."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from qnnpy.tvm_bridge.lowering.island import NotLowerable


@dataclass
class Context:
    profile: str
    params: dict[str, np.ndarray]
    hints: Any  # ModuleHints or None

    def node(self, name: str, *ops: str) -> int | None:
        """The qnnpy node index computing ``name`` when hints are given (and its op is one of ``ops``)."""
        if self.hints is None:
            return None
        found = self.hints.node(name)
        if found is None:
            raise NotLowerable(f"the hints have no node computing {name}")
        index, info = found
        if ops and info["op"] not in ops:
            raise NotLowerable(f"the hints' node for {name} is a {info['op']}, expected {' or '.join(ops)}")
        return index

    def float_mean(self, name: str) -> bool:
        """Whether the qnnpy node computing ``name`` carries ``float_mean`` (a PT2E island whose
        PyTorch arithmetic is dequantize -> float mean -> quantize; src/ops/pool.cpp)."""
        found = None if self.hints is None else self.hints.node(name)
        return found is not None and found[1]["ints"].get("float_mean", [0]) == [1]

    def node_op(self, name: str) -> str | None:
        if self.hints is None:
            return None
        found = self.hints.node(name)
        return None if found is None else found[1]["op"]

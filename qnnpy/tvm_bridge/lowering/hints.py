"""What qnnpy's runtime knows about a module and the Relax text does not.

A foreign module (any canonical QDQ module) is lowered from its own constants with
layout-free rules. A module converted by qnnpy comes with its graph: the lowering
then takes the runtime's own numbers from the C++ core (requantization constants,
op tables) and the memory layout PyTorch gives each tensor, on which some of
PyTorch's kernels (and so the runtime) depend: average pools, mean, cat, and the
position of the scalar tail of element-wise kernels.
"""
from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from qnnpy import _core


class ModuleHints:
    """The QDQModule behind a Relax module, looked up by IR value name."""

    def __init__(self, module: Any, profile: str = "int32_bias"):
        """``profile``: the runtime profile whose memory layouts the hints report (the qnnpack
        profile's QNNPACK kernels give some outputs another layout)."""
        self.module = module
        self.profile = profile
        self.graph = module.graph
        self._node = {n["output"]: (i, n) for i, n in enumerate(module.nodes())}

    def float_ops(self) -> list[tuple[str, str]]:
        """(value name, op) of each float op: what the model's quantizer left in float (PT2E float islands)."""
        return [(n["output"], n["op"]) for _, n in self._node.values() if _core.op_info(n["op"])["kind"] == "float"]

    def node(self, name: str) -> tuple[int, dict[str, Any]] | None:
        """(index, node info) of the node computing value ``name``."""
        return self._node.get(name)

    def node_index(self, name: str) -> int:
        found = self.node(name)
        if found is None:
            raise KeyError(f"no qnnpy node computes value {name!r}")
        return found[0]

    @cached_property
    def _layouts(self) -> dict[str, tuple[bool, bool]]:
        return dict(_core.lowering_layout_flags(self.graph, self.profile))

    def channels_last(self, name: str) -> bool:
        """Whether PyTorch holds value ``name`` in channels_last order (False for graph inputs)."""
        return self._layouts.get(name, (False, True))[0]

    def dense(self, name: str) -> bool:
        """Whether value ``name`` is dense in its PyTorch memory order (False for slices)."""
        return self._layouts.get(name, (False, True))[1]

    def requantization(self, name: str, profile: str) -> dict[str, Any]:
        return dict(_core.lowering_layer_requantization(self.graph, self.node_index(name), profile))

    def unary_tables(self, name: str, profile: str) -> tuple[np.ndarray, np.ndarray]:
        vector, tail = _core.lowering_unary_tables(self.graph, self.node_index(name), profile)
        return np.asarray(vector), np.asarray(tail)

    def channel_tables(self, name: str, profile: str, op: str) -> np.ndarray:
        return np.asarray(_core.lowering_channel_tables(self.graph, self.node_index(name), profile, op))

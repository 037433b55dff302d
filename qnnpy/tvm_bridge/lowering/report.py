"""What the lowering did: islands lowered to integers and islands kept in float."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

REPORT_ATTR = "qnnpy_lowering_report"


@dataclass
class LoweringReport:
    """``lowered``: (value name, rule) per island now in integer Relax; ``kept_float``:
    (value name, op, reason) per island left as dequantize -> float op -> quantize;
    ``float_ops``: (value name, op) per float op of the module (what a PT2E quantizer left in
    float), which stays float by definition (known when the QDQModule is given as hints)."""

    profile: str
    lowered: list[tuple[str, str]] = field(default_factory=list)
    kept_float: list[tuple[str, str, str]] = field(default_factory=list)
    float_ops: list[tuple[str, str]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.kept_float

    def to_json(self) -> str:
        return json.dumps({"profile": self.profile, "lowered": self.lowered, "kept_float": self.kept_float,
                           "float_ops": self.float_ops})

    @classmethod
    def from_json(cls, text: str) -> "LoweringReport":
        d = json.loads(text)
        return cls(d["profile"], [tuple(x) for x in d["lowered"]], [tuple(x) for x in d["kept_float"]],
                   [tuple(x) for x in d.get("float_ops", [])])

    def summary(self) -> str:
        lines = [f"integer lowering ({self.profile}): {len(self.lowered)} islands lowered, "
                 f"{len(self.kept_float)} kept in float"]
        lines += [f"  kept in float: {name} ({op}): {reason}" for name, op, reason in self.kept_float]
        if self.float_ops:
            lines.append(f"  {len(self.float_ops)} float op(s) of the model stay float: "
                         + ", ".join(f"{name} ({op})" for name, op in self.float_ops))
        return "\n".join(lines)


def lowering_report(mod: Any) -> LoweringReport:
    """The report attached to a module returned by ``lower_integer``."""
    attrs = mod.attrs
    if attrs is None or REPORT_ATTR not in attrs:
        raise ValueError("this module was not produced by qnnpy.tvm_bridge.lower_integer")
    return LoweringReport.from_json(str(attrs[REPORT_ATTR]))

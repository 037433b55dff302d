"""A variant of a Relax module that returns intermediate values (to check them)."""
from __future__ import annotations

from typing import Any, Sequence

import tvm
from tvm import relax


def expose_values(mod: Any, names: Sequence[str], func_name: str = "main") -> Any:
    """``mod`` whose ``func_name`` returns the tuple of the dataflow variables ``names``
    (in that order) instead of its result. Unknown names raise KeyError."""
    func = mod[func_name]
    by_name = {b.var.name: b.var for blk in func.body.blocks for b in blk.bindings}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise KeyError(f"no variables named {missing} in {func_name}")
    bb = relax.BlockBuilder()
    attrs = {k: v for k, v in func.attrs.items()} if func.attrs is not None else None
    with bb.function(func_name, list(func.params), attrs=attrs, pure=True):
        with bb.dataflow():
            for blk in func.body.blocks:
                for b in blk.bindings:
                    bb.emit_normalized(b)
            out = bb.emit_output(relax.Tuple([by_name[n] for n in names]))
        bb.emit_func_output(out)
    result = tvm.IRModule(dict(mod.functions_items()), attrs=mod.attrs)
    result.update_func(result.get_global_var(func_name), bb.get()[func_name])
    return result

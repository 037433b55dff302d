"""The converter table: every entry is callable as a converter, documented, and every converter is in it."""
from __future__ import annotations

import inspect

import pytest

from qnnpy.convert import float_elementwise, float_layers, float_movement, float_reduce, float_scatter, ops
from qnnpy.convert.float_aten import FLOAT_TUPLE_OUTPUTS
from qnnpy.convert.ops import CONVERTERS, AtenForm, OpForm

_MODULES = (ops, float_elementwise, float_movement, float_reduce, float_layers, float_scatter)


def _converter_functions() -> dict[str, object]:
    return {f"{m.__name__}.{name}": f for m in _MODULES for name, f in vars(m).items()
            if name.startswith("convert_") and inspect.isfunction(f) and f.__module__ == m.__name__}


@pytest.mark.parametrize("key", [k for k, v in CONVERTERS.items() if isinstance(v, OpForm)], ids=repr)
def test_each_op_form_binds_its_arguments_to_its_converter(key):
    form = CONVERTERS[key]
    assert form.converter is not None or isinstance(form, AtenForm)
    if form.converter is not None:
        inspect.signature(form.converter).bind("ctx", "node", **form.arguments)  # TypeError on a wrong or missing name
    if isinstance(form, AtenForm):
        assert form.converter is not None or form.float_converter is not None
        if form.float_converter is not None:
            inspect.signature(form.float_converter).bind("ctx", "node")


def test_each_entry_is_documented():
    undocumented = [key for key, entry in CONVERTERS.items()
                    if not (entry.description if isinstance(entry, OpForm) else inspect.getdoc(entry))]
    undocumented += [key for key, entry in CONVERTERS.items()
                     if isinstance(entry, AtenForm) and entry.float_converter and not inspect.getdoc(entry.float_converter)]
    undocumented += [key for key, part in FLOAT_TUPLE_OUTPUTS.items() if not inspect.getdoc(part)]
    assert not undocumented


def test_plain_entries_take_only_the_context_and_the_node():
    for key, entry in CONVERTERS.items():
        if not isinstance(entry, OpForm):
            assert list(inspect.signature(entry).parameters) == ["ctx", "node"], key


def test_every_converter_is_reached_from_the_table():
    reached = set()
    for entry in CONVERTERS.values():
        reached |= {entry.converter, getattr(entry, "float_converter", None)} if isinstance(entry, OpForm) else {entry}
    unused = [name for name, f in _converter_functions().items() if f not in reached]
    assert not unused

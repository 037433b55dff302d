"""The converter table: every entry is callable as a converter, documented, and every converter is in it."""
from __future__ import annotations

import inspect

import pytest

from qnnpy.convert import ops
from qnnpy.convert.ops import CONVERTERS, OpForm


def _converter_functions() -> dict[str, object]:
    return {name: f for name, f in vars(ops).items() if name.startswith("convert_") and inspect.isfunction(f)}


@pytest.mark.parametrize("key", [k for k, v in CONVERTERS.items() if isinstance(v, OpForm)], ids=repr)
def test_each_op_form_binds_its_arguments_to_its_converter(key):
    form = CONVERTERS[key]
    inspect.signature(form.converter).bind("ctx", "node", **form.arguments)  # TypeError on a wrong or missing name


def test_each_entry_is_documented():
    undocumented = [key for key, entry in CONVERTERS.items()
                    if not (entry.description if isinstance(entry, OpForm) else inspect.getdoc(entry))]
    assert not undocumented


def test_plain_entries_take_only_the_context_and_the_node():
    for key, entry in CONVERTERS.items():
        if not isinstance(entry, OpForm):
            assert list(inspect.signature(entry).parameters) == ["ctx", "node"], key


def test_every_converter_is_reached_from_the_table():
    reached = {entry.converter if isinstance(entry, OpForm) else entry for entry in CONVERTERS.values()}
    unused = [name for name, f in _converter_functions().items() if f not in reached]
    assert not unused

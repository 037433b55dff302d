"""The op table of the C++ core (src/ops) in step with the converters, the test models
and the coverage table of docs/coverage.md; graphs built from Python and graphs loaded from a file
go through the same per-op checks."""
from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np
import pytest
import torch

import qnnpy
from qnnpy import _core
from core_aten_cases import all_samples, sample_graph
from dynamic_models import dynamic_cases
from embedding_models import embedding_cases
from pt2e_models import inputs, pt2e
from small_models import Head, Residual, conv_cases, op_cases, quantized
from torchao_models import quantize_like_executorch, quantized_mlp
from transformer_models import dynamic_encoder, dynamic_float_arithmetic, pt2e_torch_encoder_layer
from transformer_models import inputs as transformer_inputs

COVERAGE_PAGE = Path(__file__).resolve().parent.parent / "docs" / "coverage.md"  # the full tables (the README has the short one)


def _test_models():
    """Every small test model of the op tests, converted: name -> QDQModule."""
    models = {}
    for name, (body, shape) in op_cases().items():
        models[name] = qnnpy.from_torch(*_with_input(quantized(body, shape)))
    for name, (body, shape, per_channel, fuse) in conv_cases().items():
        models[name] = qnnpy.from_torch(*_with_input(quantized(body, shape, per_channel, fuse)))
    for name, body in {"add": Residual(False), "pools_linear": Head(False)}.items():
        models[name] = qnnpy.from_torch(*_with_input(quantized(body, (3, 17, 17))))
    for name, (model, shape) in dynamic_cases().items():
        models[name] = qnnpy.from_torch(model, (torch.randn(shape),))
    for name, (model, example_inputs) in embedding_cases().items():
        models[name] = qnnpy.from_torch(model, example_inputs)
    # The float ops come from PT2E models (what a quantizer leaves in float) and dynamic-quantized ones.
    models["pt2e_float_ops"] = qnnpy.from_torch(pt2e("float_ops", "x86"), (inputs(1)[0],))
    models["pt2e_shuffle_unit"] = qnnpy.from_torch(pt2e("shuffle_unit", "x86"), (inputs(1)[0],))
    models["dynamic_transformer"] = qnnpy.from_torch(dynamic_encoder(), (transformer_inputs(1)[0],))
    models["dynamic_float_arithmetic"] = qnnpy.from_torch(dynamic_float_arithmetic(), (torch.randn(2, 16),))
    models["pt2e_torch_encoder_layer"] = qnnpy.from_torch(pt2e_torch_encoder_layer("x86"), (transformer_inputs(1)[0],))
    # torchao quantize_ models: affine_linear (a warning says they are captured with torch.export).
    with pytest.warns(UserWarning, match="torchao"):
        models["torchao_8da4w"] = qnnpy.from_torch(quantized_mlp("8da4w_group32"), (torch.randn(2, 64),))
    lookup = quantize_like_executorch(torch.nn.Sequential(torch.nn.Embedding(50, 64), torch.nn.Linear(64, 8)).eval())
    with pytest.warns(UserWarning, match="torchao"):
        models["torchao_embedding"] = qnnpy.from_torch(lookup, (torch.randint(0, 50, (2, 3)),))
    # A sample of every Core ATen op qnnpy converts (tests/core_aten_cases.py): the float ops of the opset.
    models["core_aten_samples"] = qnnpy.from_torch(*sample_graph(all_samples()))
    return models


def _with_input(model_and_input):
    model, x = model_and_input
    return model, (x,)


@pytest.fixture(scope="module")
def produced_ops() -> dict[str, set[str]]:
    """op name -> the test models whose conversion produced it."""
    ops: dict[str, set[str]] = {}
    for name, module in _test_models().items():
        for node in module.nodes():
            ops.setdefault(node["op"], set()).add(name)
    return ops


def test_op_names_are_unique():
    names = _core.op_names()
    assert len(names) == len(set(names)) and len(names) > 0


@pytest.mark.parametrize("name", _core.op_names())
def test_every_op_has_rule_emission_and_runner(name):
    info = _core.op_info(name)
    assert info["name"] == name
    assert info["kind"] in {"requantizing", "qparam_preserving", "quantize", "dequantize", "float", "lookup"}
    assert info["has_rule"] and info["has_emission"]
    assert info["has_runner"] or info["not_runnable"], f"{name}: no runner and no reason why"
    # Only a float op can promise a float output equal to PyTorch's bit for bit.
    assert not info["bit_exact_float_output"] or info["kind"] == "float"


def test_dynamic_linear_is_the_float_op_with_a_bit_exact_output():
    """The op table says which float ops compare() checks in ulps; dynamic_linear follows PyTorch's fbgemm
    epilogue bit for bit (tests/test_dynamic_linear.py), the PT2E float ops sum in another order."""
    assert _core.op_info("dynamic_linear")["bit_exact_float_output"]
    assert not _core.op_info("float_conv2d")["bit_exact_float_output"]


def test_unknown_op_is_refused_with_its_name():
    with pytest.raises(ValueError, match="no_such_op .*unknown op"):
        _core.op_info("no_such_op")
    g = _core.Graph()
    x = g.add_input("x", [1, 4])
    with pytest.raises(ValueError, match=r"no_such_op \(here\): unknown op"):
        g.add_node("no_such_op", [x], "here", "y", "uint8", 0.1, 0)


def test_test_models_produce_exactly_the_table_ops(produced_ops):
    """Every op the converters produce for the test models is in the table, and every
    op of the table is produced (so runs and emits) in at least one test model."""
    table = set(_core.op_names())
    assert set(produced_ops) - table == set(), "converters produce ops the C++ table does not define"
    assert table - set(produced_ops) == set(), "ops of the table that no test model exercises"


def test_coverage_table_lists_each_op_case_once():
    text = COVERAGE_PAGE.read_text()
    block = text[text.index("<!-- coverage:begin -->"):text.index("<!-- coverage:end -->")]
    op_section = block[block.index("| op case |"):]
    rows = re.findall(r"^\| `([^`]+)` \|", op_section, flags=re.M)
    duplicates = {r for r in rows if rows.count(r) > 1}
    assert not duplicates, f"listed more than once: {sorted(duplicates)}"
    expected = set(op_cases()) | set(conv_cases()) | {"add", "add_relu", "pools_linear", "pools_linear_relu_unfused_relu"}
    assert set(rows) == expected


# --- the same checks for a graph built and a graph loaded -------------------------

# state version 3 packed conv config: spatial dims, stride, padding, dilation, output padding, groups, flags.
CONV_1X1 = [2, 1, 1, 0, 0, 1, 1, 0, 0, 1, 0]


def _two_convs() -> _core.Graph:
    """quantize -> conv 3->4 (bias) -> conv 4->6 (bias) -> dequantize."""
    rng = np.random.default_rng(0)
    g = _core.Graph()
    x = g.add_input("x", [1, 3, 5, 5])
    q = g.add_node("quantize", [x], "quant", "q", "uint8", 0.05, 128)
    for name, cin, cout in (("a", 3, 4), ("b", 4, 6)):
        w = rng.integers(-20, 20, size=(cout, cin, 1, 1), dtype=np.int8)
        q = g.add_conv2d(q, name, name, 3, CONV_1X1, w, np.full(cout, 0.01, np.float32), np.zeros(cout, np.int64), 0,
                         rng.normal(size=cout).astype(np.float32), False, "uint8", 0.1, 100)
    g.mark_output(g.add_node("dequantize", [q], "dequant", "y", "float32"))
    return g


def _replace_once(data: bytes, old: bytes, new: bytes) -> bytes:
    assert data.count(old) >= 1, "pattern not in the graph file"
    return data.replace(old, new, 1)


def test_loading_a_valid_graph_passes_the_checks():
    g = _two_convs()
    again = _core.Graph.deserialize(g.serialize())
    assert again.script() == g.script()


def test_load_refuses_a_stride_of_zero():
    data = _two_convs().serialize()
    key = struct.pack("<Q", 6) + b"stride" + struct.pack("<Q", 2)
    bad = _replace_once(data, key + struct.pack("<qq", 1, 1), key + struct.pack("<qq", 0, 1))
    with pytest.raises(ValueError, match=r"conv2d \(a\): attribute 'stride' must be >= 1, got 0"):
        _core.Graph.deserialize(bad)


def test_load_refuses_a_bias_of_the_wrong_length(tmp_path):
    """Conv b (6 output channels) pointed at conv a's bias (4 values)."""
    g = _two_convs()
    names = [p["params"] for p in g.nodes() if p["op"] == "conv2d"]
    assert names[0]["bias"] == "a_bias" and names[1]["bias"] == "b_bias"
    param_ids = {"a_bias": 1, "b_bias": 4}  # params in insertion order: a_weight, a_bias, a_bias_float, b_weight, ...
    role = struct.pack("<Q", 4) + b"bias"
    bad = _replace_once(g.serialize(), role + struct.pack("<i", param_ids["b_bias"]), role + struct.pack("<i", param_ids["a_bias"]))
    with pytest.raises(ValueError, match=r"conv2d \(b\): bias must be int32 with one value per output channel \(6,\)"):
        _core.Graph.deserialize(bad)
    module = qnnpy.QDQModule(g)
    module.save(tmp_path)
    (tmp_path / "graph.qnnpy").write_bytes(bad)
    with pytest.raises(ValueError, match="bias must be int32"):
        qnnpy.load(tmp_path)


def test_building_refuses_a_bias_of_the_wrong_length():
    g = _core.Graph()
    q = g.add_node("quantize", [g.add_input("x", [1, 3, 5, 5])], "quant", "q", "uint8", 0.05, 128)
    w = np.ones((4, 3, 1, 1), np.int8)
    with pytest.raises(ValueError, match=r"conv2d \(layer\): bias has 3 values for 4 output channels"):
        g.add_conv2d(q, "layer", "layer", 3, CONV_1X1, w, np.full(4, 0.01, np.float32), np.zeros(4, np.int64), 0,
                     np.zeros(3, np.float32), False, "uint8", 0.1, 100)


def test_batch_norm_parts_of_different_lengths_are_refused():
    g = _core.Graph()
    q = g.add_node("quantize", [g.add_input("x", [1, 3, 5, 5])], "quant", "q", "uint8", 0.05, 128)
    ones = np.ones(3, np.float32)
    with pytest.raises(ValueError, match=r"batch_norm2d \(bn\): weight, bias, mean and var differ in length"):
        g.add_batch_norm2d(q, "bn", "bn", ones, ones, ones, np.ones(2, np.float32), 1e-5, False, "uint8", 0.1, 100)


@pytest.mark.parametrize("op, shape, ints, message", [
    ("avg_pool3d", [1, 2, 4, 4, 4], {"kernel": [2**24] * 3, "stride": [1, 1, 1], "padding": [0, 0, 0], "ceil_mode": [0],
                                     "count_include_pad": [1], "divisor_override": [0]}, "overflows the int32 window sums"),
    ("adaptive_avg_pool3d", [1, 1, 256, 256, 256], {"output_size": [1, 1, 1]}, "overflow the int32 sums"),
])
def test_3d_pool_windows_past_the_int32_sums_are_refused(op, shape, ints, message):
    """Windows whose extents multiply past the int32 sums' bound are refused (a kernel of 2^24 per axis: the
    product, 2^72, is never formed)."""
    g = _core.Graph()
    x = g.add_input("x", shape)
    q = g.add_node("quantize", [x], "quant", "q", "uint8", 0.05, 128)
    with pytest.raises(ValueError, match=f"{op} \\(pool\\): .*{message}"):
        g.add_node(op, [q], "pool", "y", "uint8", 0.05, 128, ints=ints)

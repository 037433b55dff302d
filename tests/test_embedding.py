"""Integer graph inputs and the embedding ops: embedding (nnq.Embedding), embedding_bag (nnq.EmbeddingBag) and
float_embedding (nn.Embedding left in float), bit-exact against PyTorch's fbgemm engine (tolerance 0)."""
from __future__ import annotations

import struct
from collections import OrderedDict

import numpy as np
import pytest
import torch
from torch import nn
from torch.ao.quantization import float_qparams_weight_only_qconfig, float_qparams_weight_only_qconfig_4bit

import qnnpy
from qnnpy import _core, tvm_bridge
from qnnpy.errors import ConversionError
from qnnpy.executor import Executor
from embedding_models import (DIM, BagLinear, EmbeddingEncoder, WeightedBagLinear, dynamic_quantized,
                              embedding_cases, static_quantized, token_ids)


def _float_outputs(module, profile: str, *inputs: torch.Tensor) -> np.ndarray:
    return module.run(*(x.numpy() for x in inputs), profile=profile).dequantized


def _lookup_node(module, op: str) -> dict:
    return next(n for n in module.nodes() if n["op"] == op)


@pytest.fixture(scope="module")
def cases():
    return embedding_cases()


@pytest.mark.parametrize("name", ["embedding_linear", "embedding_bag_linear", "float_embedding_dynamic"])
def test_lookup_output_equals_pytorch_bit_for_bit(cases, name):
    """The lookup's float32 rows (captured) and the model's output equal PyTorch's exactly under the fbgemm profile."""
    model, inputs = cases[name]
    module = qnnpy.from_torch(model, inputs)
    result = module.run(*(x.numpy() for x in inputs), profile="fbgemm", capture=True)
    op = {"embedding_linear": "embedding", "embedding_bag_linear": "embedding_bag"}.get(name, "float_embedding")
    node = _lookup_node(module, op)
    with torch.no_grad():
        submodule = model.emb if hasattr(model, "emb") else model.bag
        expected_rows = submodule(*inputs).numpy()
        expected = model(*inputs).numpy()
    np.testing.assert_array_equal(result.intermediates[node["output"]], expected_rows)
    np.testing.assert_array_equal(result.dequantized, expected)


def test_module_with_int64_input_describes_it(cases):
    model, inputs = cases["embedding_linear"]
    module = qnnpy.from_torch(model, inputs)
    assert module.graph.value(module.graph.inputs[0])["dtype"] == "int64"
    assert 'R.Tensor((3, 7), "int64")' in module.script()
    assert "R.take(" in module.script()
    assert "ids" in module.summary() and "int64" in module.summary()


def test_int32_indices_and_bags_of_a_2d_input_with_per_sample_weights():
    """int32 indices, fixed-length bags (2-D indices, no offsets) weighted per sample: fbgemm's weighted sum."""
    ids = token_ids((5, 3), dtype=torch.int32)
    weights = torch.rand(5, 3, generator=torch.Generator().manual_seed(3))
    model = static_quantized(WeightedBagLinear(), [(token_ids((5, 3), seed=s, dtype=torch.int32), weights) for s in range(2)])
    module = qnnpy.from_torch(model, (ids, weights))
    assert module.graph.value(module.graph.inputs[0])["dtype"] == "int32"
    with torch.no_grad():
        expected = model(ids, weights).numpy()
    np.testing.assert_array_equal(_float_outputs(module, "fbgemm", ids, weights), expected)


@pytest.mark.parametrize("include_last_offset", [False, True])
def test_bags_with_offsets_including_empty_bags(include_last_offset):
    offsets = torch.tensor([0, 3, 3, 8, 11] if include_last_offset else [0, 3, 3, 8])
    ids = token_ids((11,), seed=4)
    model = static_quantized(BagLinear(include_last_offset=include_last_offset), [(ids, offsets)])
    module = qnnpy.from_torch(model, (ids, offsets))
    other_ids = token_ids((11,), seed=9)
    with torch.no_grad():
        expected = model(other_ids, offsets).numpy()
    np.testing.assert_array_equal(_float_outputs(module, "fbgemm", other_ids, offsets), expected)


def test_mean_mode_bag_computes_the_sum_as_pytorch_does():
    """PyTorch's quantized EmbeddingBag sums whatever its mode: converted as that sum, with a warning."""
    ids, offsets = token_ids((10,), seed=2), torch.tensor([0, 2, 7])
    model = static_quantized(BagLinear(mode="mean"), [(ids, offsets)])
    with pytest.warns(UserWarning, match=r"bag: .*mode='mean' computes the sum"):
        module = qnnpy.from_torch(model, (ids, offsets))
    with torch.no_grad():
        expected = model(ids, offsets).numpy()
    np.testing.assert_array_equal(_float_outputs(module, "fbgemm", ids, offsets), expected)


def test_weight_only_embedding_in_front_of_a_dynamic_linear():
    model = dynamic_quantized(EmbeddingEncoder(), quantize_embedding=True)
    ids = token_ids((2, 9), seed=6)
    module = qnnpy.from_torch(model, (ids,))
    assert [n["op"] for n in module.nodes()][0] == "embedding"
    with torch.no_grad():
        expected = model(ids).numpy()
    np.testing.assert_array_equal(_float_outputs(module, "fbgemm", ids), expected)


def test_index_out_of_range_is_refused_naming_node_and_index(cases):
    model, inputs = cases["embedding_linear"]
    module = qnnpy.from_torch(model, inputs)
    bad = inputs[0].clone()
    bad[1, 2] = 50
    with pytest.raises(ValueError, match=r"embedding \(emb\): index 50 \(at position 9 of input 'ids'\) is outside "
                                         r"the table's 50 rows"):
        module.run(bad.numpy())
    bad[1, 2] = -1
    with pytest.raises(ValueError, match=r"index -1 "):
        module.run(bad.numpy())


def test_offsets_that_leave_the_indices_are_refused(cases):
    model, (ids, offsets) = cases["embedding_bag_linear"]
    module = qnnpy.from_torch(model, (ids, offsets))
    with pytest.raises(ValueError, match=r"embedding_bag \(bag\): offsets 'offsets' do not describe bags of the 12 "
                                         r"indices: bag 2 would span \[4, 3\)"):
        module.run(ids.numpy(), np.array([0, 4, 4, 3]))


def test_float_input_where_indices_are_expected_is_refused(cases):
    model, inputs = cases["embedding_linear"]
    module = qnnpy.from_torch(model, inputs)
    with pytest.raises(ValueError, match=r"input 'ids' takes int64 indices, got an array of float32"):
        module.run(inputs[0].numpy().astype(np.float32))
    with pytest.raises(ValueError, match=r"runtime: input 'ids' takes int64 indices, got an array of float64"):
        graph = _core.Graph.deserialize(module.graph.serialize())  # the core refuses it too, without the Python check
        _core.Executor(graph).run([inputs[0].numpy().astype(np.float64)])


class Lookup(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.emb(ids)


def test_a_model_of_one_quantized_embedding_converts():
    model = torch.ao.quantization.quantize_dynamic(Lookup().eval(), {nn.Embedding: float_qparams_weight_only_qconfig})
    ids = token_ids((4,))
    module = qnnpy.from_torch(model, (ids,))
    with torch.no_grad():
        np.testing.assert_array_equal(module.run(ids.numpy()).dequantized, model(ids).numpy())


def test_four_bit_tables_are_refused_by_name():
    model = torch.ao.quantization.quantize_dynamic(Lookup().eval(), {nn.Embedding: float_qparams_weight_only_qconfig_4bit})
    with pytest.raises(ConversionError, match=r"emb \(torch.ao.nn.quantized.modules.embedding_ops.Embedding\): 4-bit "
                                              r"\(quint4x2\) embedding tables are not supported"):
        qnnpy.from_torch(model, (token_ids((2, 4)),))


def test_embedding_with_max_norm_is_refused():
    model = dynamic_quantized(EmbeddingEncoder(), quantize_embedding=False)
    model.emb.max_norm = 1.0
    with pytest.raises(ConversionError, match=r"emb: .*embedding_renorm.*no float form"):
        qnnpy.from_torch(model, (token_ids((2, 3)),))


def test_rule_refuses_index_values_for_other_ops_and_float_indices():
    g = _core.Graph()
    ids = g.add_input("ids", [4], "int64")
    with pytest.raises(ValueError, match=r"quantize \(q\): input 'ids' holds int64 values, which only embedding ops and float ops of any dtype take"):
        g.add_node("quantize", [ids], "q", "q", "uint8", 0.1, 0)
    x = g.add_input("x", [4])
    with pytest.raises(ValueError, match=r"float_embedding \(e\): input 'x' must be int64 or int32 indices, got float32"):
        _core.add_embedding(g, "float_embedding", [x], "e", "e", np.zeros((5, 2), np.float32))
    with pytest.raises(ValueError, match=r"input 'b': dtype uint8 is not an input dtype"):
        g.add_input("b", [4], "uint8")


def test_saved_module_with_an_int64_input_round_trips(cases, tmp_path):
    model, inputs = cases["embedding_bag_linear"]
    module = qnnpy.from_torch(model, inputs)
    module.save(tmp_path)
    loaded = qnnpy.load(tmp_path)
    assert loaded.script() == module.script()
    assert [loaded.graph.value(i)["dtype"] for i in loaded.graph.inputs] == ["int64", "int64"]
    arrays = [x.numpy() for x in inputs]
    np.testing.assert_array_equal(loaded.run(*arrays).dequantized, module.run(*arrays).dequantized)


def test_compare_reports_the_lookup_bit_exact(cases):
    model, inputs = cases["embedding_linear"]
    module = qnnpy.from_torch(model, inputs)
    report = qnnpy.compare(model, module, [inputs[0], token_ids((3, 7), seed=8)], profiles=["fbgemm"])
    layers = {layer.op: layer for layer in report.layers["fbgemm"]}
    assert layers["embedding"].identical == layers["embedding"].total > 0


def test_compare_takes_a_tuple_per_input_for_a_model_with_several_inputs(cases):
    model, inputs = cases["embedding_bag_linear"]
    module = qnnpy.from_torch(model, inputs)
    flat, offsets = inputs
    report = qnnpy.compare(model, module, [inputs, (token_ids((12,), seed=9), offsets)], profiles=["fbgemm"])
    layers = {layer.op: layer for layer in report.layers["fbgemm"]}
    bag = layers["embedding_bag"]
    assert bag.identical == bag.total == 2 * len(offsets) * DIM  # two inputs of len(offsets) bags each
    assert report.all_identical("fbgemm")


def test_tvm_builds_and_runs_the_lookups(cases):
    """TVM's float form: the dequantized table and R.take, the bags as a membership matrix product (another summation
    order than PyTorch's): the model outputs within one output step of PyTorch's."""
    for name in ("embedding_linear", "embedding_bag_linear"):
        model, inputs = cases[name]
        module = qnnpy.from_torch(model, inputs)
        runner = tvm_bridge.build(module, form="qdq")
        got = runner(*(x.numpy() for x in inputs))
        with torch.no_grad():
            expected = model(*inputs).numpy()
        scale, _ = module.output_qparams()[0]
        assert np.abs(got - expected).max() <= 1.01 * scale


@pytest.mark.parametrize("name", ["embedding_linear", "embedding_bag_linear", "float_embedding_dynamic"])
def test_torchscript_graphs_convert_like_eager(cases, name):
    """quantized::embedding_byte / embedding_bag_byte and aten::embedding of a traced model: the same ops and outputs."""
    model, inputs = cases[name]
    eager = qnnpy.from_torch(model, inputs)
    scripted = qnnpy.from_torch(torch.jit.trace(model, inputs), inputs)
    assert [n["op"] for n in scripted.nodes()] == [n["op"] for n in eager.nodes()]
    arrays = [x.numpy() for x in inputs]
    np.testing.assert_array_equal(scripted.run(*arrays, profile="fbgemm").dequantized,
                                  eager.run(*arrays, profile="fbgemm").dequantized)


def test_pt2e_embedding_left_in_float_before_a_quantized_linear():
    """XNNPACKQuantizer leaves aten.embedding in float (its table a dequantized int8 constant): float_embedding, then
    the quantized linear, bit-exact against the converted PT2E graph."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from pt2e_models import quantizer

    torch.manual_seed(0)
    float_model = nn.Sequential(OrderedDict(emb=nn.Embedding(50, 16), fc=nn.Linear(16, 8)))
    ids = token_ids((3, 7))
    exported = torch.export.export(float_model.eval(), (ids,), strict=True).module()
    prepared = prepare_pt2e(exported, quantizer("xnnpack"))
    for seed in range(3):
        prepared(token_ids((3, 7), seed=seed))
    converted = convert_pt2e(prepared)
    module = qnnpy.from_torch(converted, (ids,))
    assert [n["op"] for n in module.nodes()] == ["float_embedding", "quantize", "linear", "dequantize"]
    with torch.no_grad():
        expected = converted(ids).numpy()
    np.testing.assert_array_equal(module.run(ids.numpy()).dequantized, expected)


def test_tvm_kernels_form_equals_the_runtime(cases):
    """The kernels form runs the lookups through the runtime's own runners: bit-identical."""
    for name in ("embedding_linear", "embedding_bag_linear"):
        model, inputs = cases[name]
        module = qnnpy.from_torch(model, inputs)
        arrays = [x.numpy() for x in inputs]
        runner = tvm_bridge.build(module, form="kernels", profile="fbgemm")
        np.testing.assert_array_equal(runner(*arrays), module.run(*arrays, profile="fbgemm").dequantized)


def test_token_ids_with_a_dynamic_batch(cases):
    model, inputs = cases["embedding_linear"]
    module = qnnpy.from_torch(model, inputs, dynamic_batch=True)
    ids = token_ids((8, 7), seed=3)
    with torch.no_grad():
        expected = model(ids).numpy()
    np.testing.assert_array_equal(module.run(ids.numpy(), profile="fbgemm").dequantized, expected)


def test_bag_rule_refuses_inputs_that_do_not_fit():
    g = _core.Graph()
    ids, offsets = g.add_input("ids", [6], "int64"), g.add_input("offsets", [2], "int64")
    grid = g.add_input("grid", [2, 3], "int32")
    weights = g.add_input("w", [5])
    table = dict(weight=np.zeros((10, 4), np.uint8), row_scale=np.ones(10, np.float32), row_zero_point=np.zeros(10, np.float32))
    with pytest.raises(ValueError, match=r"embedding_bag \(b\): expects indices, offsets and optional per-sample weights"):
        _core.add_embedding(g, "embedding_bag", [ids], "b", "b", ints={"include_last_offset": [0]}, **table)
    with pytest.raises(ValueError, match=r"per-sample weights 'w' must be float32 shaped like the indices \(6,\)"):
        _core.add_embedding(g, "embedding_bag", [ids, offsets, weights], "b", "b", ints={"include_last_offset": [0]}, **table)
    with pytest.raises(ValueError, match=r"include_last_offset needs 1-D indices with offsets"):
        _core.add_embedding(g, "embedding_bag", [grid], "b", "b", ints={"include_last_offset": [1]}, **table)
    with pytest.raises(ValueError, match=r"weight_scale of row 0 is 0.000000, not positive"):
        _core.add_embedding(g, "embedding", [ids], "e", "e", np.zeros((10, 4), np.uint8), np.zeros(10, np.float32),
                            np.zeros(10, np.float32))
    out = _core.add_embedding(g, "embedding_bag", [grid], "b", "b", ints={"include_last_offset": [0]}, **table)
    assert g.value(out)["shape"] == (2, 4)


def test_cli_compare_reads_index_inputs(cases, tmp_path, capsys):
    from qnnpy import cli

    model, inputs = cases["embedding_linear"]
    torch.jit.save(torch.jit.trace(model, inputs), tmp_path / "model.pt")
    qnnpy.from_torch(model, inputs).save(tmp_path / "out")
    np.save(tmp_path / "ids.npy", np.stack([inputs[0].numpy(), token_ids((3, 7), seed=5).numpy()]))
    code = cli.main(["compare", str(tmp_path / "model.pt"), str(tmp_path / "out"), "--inputs", str(tmp_path / "ids.npy"),
                     "--profile", "fbgemm", "--no-tvm"])
    out = capsys.readouterr().out
    assert code == cli.EXIT_OK, out
    assert "runtime profile fbgemm (required) vs PyTorch fbgemm: 3/3 layers bit-identical" in out
    code = cli.main(["compare", str(tmp_path / "model.pt"), str(tmp_path / "out"), "--no-tvm"])
    assert code == cli.EXIT_CONVERSION
    assert "the module's input takes int64 indices: give them with --inputs FILE.npy" in capsys.readouterr().err
    np.save(tmp_path / "floats.npy", inputs[0].numpy().astype(np.float32))
    code = cli.main(["compare", str(tmp_path / "model.pt"), str(tmp_path / "out"), "--inputs", str(tmp_path / "floats.npy")])
    assert code == cli.EXIT_INPUT_FILE
    assert "holds float32 values; the module's input takes int64 indices" in capsys.readouterr().err


def test_an_index_input_that_is_also_an_output_comes_back_unchanged():
    g = _core.Graph()
    for dtype in ("int64", "int32"):
        ids = g.add_input(f"ids_{dtype}", [2, 3], dtype)
        g.mark_output(ids)
    values = [np.arange(6, dtype=np.int64).reshape(2, 3) - 2, np.arange(6, dtype=np.int32).reshape(2, 3) * 7]
    outputs, _ = _core.Executor(g).run(values)
    for got, expected in zip(outputs, values):
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
    # The Python executor too (an atheris finding: it subtracted a missing zero point, TypeError).
    result = Executor(g, [(None, None), (None, None)]).run(*values)
    for output, expected in zip(result.outputs, values):
        assert output.quantized is None and output.dequantized.dtype == expected.dtype
        np.testing.assert_array_equal(output.dequantized, expected)


def test_tvm_float_form_gives_pytorchs_rows():
    """The table is computed in float64 (exact product, one rounding to float32): TVM's rows of every table row equal
    PyTorch's fma rows (a double rounding could part them; none does here)."""
    model = torch.ao.quantization.quantize_dynamic(Lookup().eval(), {nn.Embedding: float_qparams_weight_only_qconfig})
    ids = torch.arange(50)
    module = qnnpy.from_torch(model, (ids,))
    with torch.no_grad():
        np.testing.assert_array_equal(tvm_bridge.build(module, form="qdq")(ids.numpy()), model(ids).numpy())


class TwoTables(nn.Module):
    """Token embedding + bag embedding, added, then a linear: FX graph mode quantizes it whole."""

    def __init__(self):
        super().__init__()
        self.emb, self.bag, self.fc = nn.Embedding(50, 16), nn.EmbeddingBag(50, 16), nn.Linear(16, 8)

    def forward(self, ids: torch.Tensor, bag_ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.fc(self.emb(ids) + self.bag(bag_ids, offsets))


def test_fx_graph_mode_model_with_two_tables():
    from torch.ao.quantization import QConfigMapping, get_default_qconfig
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

    torch.manual_seed(0)
    mapping = (QConfigMapping().set_global(get_default_qconfig("fbgemm"))
               .set_object_type(nn.Embedding, float_qparams_weight_only_qconfig)
               .set_object_type(nn.EmbeddingBag, float_qparams_weight_only_qconfig))
    example = (token_ids((4,)), token_ids((9,), seed=1), torch.tensor([0, 2, 2, 5]))
    prepared = prepare_fx(TwoTables().eval(), mapping, example)
    prepared(*example)
    model = convert_fx(prepared)
    module = qnnpy.from_torch(model, example)
    assert [n["op"] for n in module.nodes()] == ["embedding", "quantize", "embedding_bag", "quantize", "add", "linear",
                                                 "dequantize"]
    with torch.no_grad():
        expected = model(*example).numpy()
    np.testing.assert_array_equal(_float_outputs(module, "fbgemm", *example), expected)


def test_graph_file_keeps_its_version_and_refuses_an_unknown_input_dtype():
    """Index inputs need no new file layout (a value's dtype byte holds them): version 01 as before; a dtype byte past
    bool (a newer qnnpy's) is refused by name."""
    g = _core.Graph()
    ids = g.add_input("ids", [3], "int64")
    g.mark_output(_core.add_embedding(g, "float_embedding", [ids], "e", "e", np.ones((4, 2), np.float32)))
    data = bytes(g.serialize())
    assert data.startswith(b"QNNPYG01")
    record = struct.pack("<Q", 3) + b"ids"
    assert _core.Graph.deserialize(data).value(0)["dtype"] == "int64"
    with pytest.raises(ValueError, match="graph file holds an unknown dtype"):
        _core.Graph.deserialize(data.replace(record + b"\x04", record + b"\x06", 1))

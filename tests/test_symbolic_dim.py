"""A symbolic sequence length: from_torch(..., dynamic_dim=DynamicDim(...)) on Hugging Face LMs quantized with
torchao. At every size the module equals, bit for bit, a conversion made at that size (runtime and TVM's qdq form),
the TVMScript declares the symbolic variable, and models whose computation is not the same at every size are
refused naming the node."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torchao.quantization import quantize_

import qnnpy
from qnnpy import DynamicDim
from torchao_models import CONFIGS, quantized_mlp, tiny_lm

transformers = pytest.importorskip("transformers")

MAX = 40


def _tiny(kind: str, config: str) -> nn.Module:
    """A two-layer model built from its config (random weights), quantized with torchao's ``config``."""
    model = tiny_lm(kind)
    quantize_(model, CONFIGS[config]())
    return model


def _ids(length: int, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, 256, (1, length), generator=torch.Generator().manual_seed(seed))


@pytest.fixture(scope="module")
def llama() -> tuple[nn.Module, qnnpy.QDQModule]:
    model = _tiny("llama", "w8a8_dynamic")
    return model, qnnpy.from_torch(model, (_ids(12),), dynamic_dim=DynamicDim(axes=(1,), max=MAX))


@pytest.mark.parametrize("size", [1, 5, 12, MAX])
def test_llama_at_every_size_equals_a_conversion_at_that_size(llama, size):
    """Causal mask and rotary tables follow the length: kept at MAX and cut to the run's."""
    model, module = llama
    ids = _ids(size, seed=size)
    static = qnnpy.from_torch(model, (ids,))
    got = module.run(ids.numpy()).dequantized
    assert got.shape == (1, size, 256)
    np.testing.assert_array_equal(got, static.run(ids.numpy()).dequantized)
    with torch.no_grad():
        logits = model(ids).logits.numpy()
    assert np.abs(got - logits).max() <= 0.02 * np.abs(logits).max()


def test_llama_module_declares_the_length_and_holds_its_tables_at_the_bound(llama):
    _, module = llama
    assert module.dynamic_dim == {"name": "seq", "example": 12, "max": MAX, "input_axes": [(0, 1)]}
    script = module.script()
    assert 'input_ids: R.Tensor((1, "seq"), "int64")' in script
    assert "end=[seq]" in script
    tables = [a.shape for name, a in module.params.items() if a.ndim == 4]
    assert tables and all(MAX in shape for shape in tables), tables


def test_save_and_load_keep_the_symbolic_dim(llama, tmp_path):
    _, module = llama
    module.save(tmp_path / "m")
    loaded = qnnpy.load(tmp_path / "m")
    assert loaded.dynamic_dim == module.dynamic_dim
    ids = _ids(23).numpy()
    np.testing.assert_array_equal(loaded.run(ids).dequantized, module.run(ids).dequantized)


def test_sizes_outside_the_bound_or_disagreeing_inputs_are_refused(llama):
    _, module = llama
    with pytest.raises(ValueError, match=r"'seq' must be in \[1, 40\].*got 41"):
        module.run(_ids(41).numpy())
    with pytest.raises(ValueError, match=r"must have shape \(1, seq <= 40\)"):
        module.run(np.zeros((2, 5), np.int64))


def test_bert_with_its_mask_input_equals_conversions_at_each_size_in_tvm_too():
    """Two inputs share the length (ids and attention mask), under ExecuTorch's 8da4w config (W8A8 is the Llama's);
    TVM's qdq form of the symbolic module, built once, equals the qdq form of a conversion at each size bit for
    bit."""
    pytest.importorskip("tvm")
    from qnnpy import tvm_bridge

    model = _tiny("bert", "8da4w_group32")
    mask = torch.ones(1, 9, dtype=torch.int64)
    module = qnnpy.from_torch(model, (_ids(9), mask), dynamic_dim=DynamicDim(axes=(1, 1), max=MAX))
    runner = tvm_bridge.build(module, form="qdq")
    for size in (3, 31):
        ids, ones = _ids(size, seed=size), torch.ones(1, size, dtype=torch.int64)
        static = qnnpy.from_torch(model, (ids, ones))
        got = module.run(ids.numpy(), ones.numpy()).outputs
        expected = static.run(ids.numpy(), ones.numpy()).outputs
        for a, b in zip(got, expected):
            np.testing.assert_array_equal(a.dequantized, b.dequantized)
        tvm_out = runner(ids.numpy(), ones.numpy())
        tvm_static = tvm_bridge.build(static, form="qdq")(ids.numpy(), ones.numpy())
        for a, b in zip(tvm_out, tvm_static):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("form", ["kernels", "integer"])
@pytest.mark.parametrize("config", ["w8a8_dynamic", "8da4w_group32"])
def test_static_tvm_forms_take_the_symbolic_length_and_equal_the_runtime(config, form):
    """TVM's kernels and integer forms of a module with a symbolic length, built once: equal to the runtime bit for
    bit at every size (the integer form with its torchao linears in integers; the kernels form rebuilds each node
    at each size it meets)."""
    pytest.importorskip("tvm")
    from qnnpy import tvm_bridge

    module = qnnpy.from_torch(quantized_mlp(config), (torch.randn(1, 5, 64),), dynamic_dim=DynamicDim(axes=(1,), max=24))
    runner = tvm_bridge.build(module, form=form)
    if form == "integer":
        report = tvm_bridge.lowering_report(runner.relax_module)
        assert report.complete and [rule for _, rule in report.lowered].count("affine_linear") == 2, report.summary()
    for size in (1, 5, 17, 24, 5):
        x = torch.randn(1, size, 64, generator=torch.Generator().manual_seed(size)).numpy()
        np.testing.assert_array_equal(runner(x), module.run(x).dequantized)


def test_kernels_form_of_a_symbolic_llama_equals_the_runtime(llama):
    """The Llama's every node called at each length: the causal mask and rotary tables cut, attention and the
    reshapes over the heads rebuilt at that length, bit for bit the runtime's logits."""
    pytest.importorskip("tvm")
    from qnnpy import tvm_bridge

    _, module = llama
    runner = tvm_bridge.build(module, form="kernels")
    assert 'R.Tensor((1, seq), dtype="int64")' in runner.ir_module.script()
    for size in (1, 7, MAX):
        ids = _ids(size, seed=size).numpy()
        np.testing.assert_array_equal(runner(ids), module.run(ids).dequantized)


def test_kernels_form_takes_a_symbolic_width_through_8_bit_nhwc_values():
    """A quantized conv and depthwise conv along a symbolic width: the kernels form's 8-bit rank-4 values travel
    NHWC between the calls, and each call reads the width from them; equal to the runtime bit for bit."""
    pytest.importorskip("tvm")
    from qnnpy import tvm_bridge
    from small_models import ConvBlock, quantized

    body = nn.Sequential(ConvBlock(3, 8, True, kernel_size=3, padding=1),
                         ConvBlock(8, 8, False, kernel_size=3, padding=1, groups=8))
    model, x = quantized(body, (3, 12, 12))
    module = qnnpy.from_torch(model, (x,), dynamic_dim=DynamicDim(axes=(3,), max=20))
    runner = tvm_bridge.build(module, form="kernels")
    for width in (4, 19):
        xw = torch.randn(2, 3, 12, width, generator=torch.Generator().manual_seed(width)).numpy()
        np.testing.assert_array_equal(runner(xw), module.run(xw).dequantized)


def test_integer_form_of_a_symbolic_llama_lowers_every_linear(llama):
    """Every linear and every per-token quantization of the Llama are integer; the float glue between them
    (norms, rotary, attention) is TVM's float code, so the logits are close to the runtime's, not equal."""
    pytest.importorskip("tvm")
    from qnnpy import tvm_bridge

    model, module = llama
    runner = tvm_bridge.build(module, form="integer")
    report = tvm_bridge.lowering_report(runner.relax_module)
    linears = sum(isinstance(m, nn.Linear) for m in model.modules())
    assert report.complete and [rule for _, rule in report.lowered].count("affine_linear") == linears, report.summary()
    for size in (3, 29):
        ids = _ids(size, seed=size).numpy()
        want = module.run(ids).dequantized
        got = runner(ids)
        assert got.shape == want.shape == (1, size, 256)
        assert np.abs(got - want).max() <= 0.01 * np.abs(want).max()


class _Positions(nn.Module):
    """The MLP with something added per position, made by ``table(length)``."""

    def __init__(self, table) -> None:
        super().__init__()
        self.mlp = quantized_mlp("w8a8_dynamic")
        self.table = table

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp(x) + self.table(x.shape[1])[None, :, None]


@pytest.mark.parametrize("table, refusal", [
    (lambda n: torch.linspace(0, 1, n), "is not the leading block of its values at size 40"),
    (lambda n: torch.ones(n * n)[:n] * n, "takes other values at other sizes|not the leading block"),
])
def test_constants_that_are_not_one_table_cut_to_size_are_refused_naming_the_node(table, refusal):
    model = _Positions(table).eval()
    with pytest.raises(qnnpy.ConversionError, match=f"cannot take a symbolic 'seq'.*({refusal})"):
        qnnpy.from_torch(model, (torch.randn(1, 6, 64),), dynamic_dim=DynamicDim(axes=(1,), max=MAX))


def test_positions_from_arange_follow_the_length():
    """arange(length) is the leading block of arange(max): such a constant is cut to size, and the module equals a
    conversion at each size."""
    model = _Positions(lambda n: torch.arange(n, dtype=torch.float32)).eval()
    module = qnnpy.from_torch(model, (torch.randn(1, 6, 64),), dynamic_dim=DynamicDim(axes=(1,), max=MAX))
    for size in (1, 17):
        x = torch.randn(1, size, 64, generator=torch.Generator().manual_seed(size))
        np.testing.assert_array_equal(module.run(x.numpy()).dequantized,
                                      qnnpy.from_torch(model, (x,)).run(x.numpy()).dequantized)


def test_bad_specs_are_refused():
    model = quantized_mlp("w8a8_dynamic")
    x = torch.randn(1, 6, 64)
    with pytest.raises(qnnpy.ConversionError, match="below max - 1"):
        qnnpy.from_torch(model, (x,), dynamic_dim=DynamicDim(axes=(1,), max=7))
    with pytest.raises(qnnpy.ConversionError, match="names 2 input"):
        qnnpy.from_torch(model, (x,), dynamic_dim=DynamicDim(axes=(1, 1), max=MAX))
    with pytest.raises(qnnpy.ConversionError, match="cannot be combined"):
        qnnpy.from_torch(model, (x,), dynamic_batch=True, dynamic_dim=DynamicDim(axes=(1,), max=MAX))


def test_compare_links_a_loaded_symbolic_module_to_its_model(llama, tmp_path):
    """compare converts the model again (at the module's three sizes) to link a loaded module to its layers."""
    model, module = llama
    module.save(tmp_path / "m")
    report = qnnpy.compare(model, qnnpy.load(tmp_path / "m"), [(_ids(7),)], profiles=["int32_bias"])
    assert report.layers["int32_bias"]


def test_executors_of_other_lengths_are_kept_for_the_lengths_used_last(llama):
    """A service that sees many lengths keeps the executors (and their values' buffers) of the last
    SIZED_EXECUTORS lengths, not one per length it ever saw; a dropped length is made again when it comes back."""
    from qnnpy.module import SIZED_EXECUTORS

    _, module = llama
    first = module.run(_ids(2).numpy()).dequantized
    for length in range(3, 3 + SIZED_EXECUTORS + 2):
        module.run(_ids(length).numpy())
    lengths = {key[3] for key in module._executors}
    assert len(lengths - {module.dynamic_dim["example"]}) == SIZED_EXECUTORS and 2 not in lengths
    np.testing.assert_array_equal(module.run(_ids(2).numpy()).dequantized, first)

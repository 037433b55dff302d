"""torchao ``quantize_`` models: captured with torch.export around each quantized linear, converted to
``affine_linear`` and run by the runtime. W8A8 dynamic (Int8DynamicActivationInt8WeightConfig) equals torchao
bit for bit under every kernel set this CPU runs; the weight-only and 8da4w configs, whose torchao reference
is a float linear, agree within float rounding; TVM's kernels form equals the runtime bit for bit."""
from __future__ import annotations

import copy
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch import nn

import qnnpy
from isas import AMX, AVX2, AVX512VNNI, AVXVNNI

pytest.importorskip("torchao.quantization")
from torchao.quantization import Int8DynamicActivationIntxWeightConfig, quantize_  # noqa: E402
from torchao.quantization.granularity import PerAxis  # noqa: E402
from torchao_models import CONFIGS, MLP, quantize_like_executorch, quantized_mlp, tiny_lm  # noqa: E402


def _convert(model: nn.Module, x: torch.Tensor) -> qnnpy.QDQModule:
    with pytest.warns(UserWarning, match="captured with torch.export"):
        return qnnpy.from_torch(model, (x,))


def _inputs(seed: int, shape: tuple[int, ...] = (2, 5, 64)) -> list[torch.Tensor]:
    """Tokens of ordinary range, large values, a row of zeros (the eps floor of the scale) and one-signed rows."""
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(shape, generator=g)
    zeros = base.clone()
    zeros[0, 1] = 0
    return [base, base * 300, zeros, base.abs(), -base.abs() * 1e-3]


@pytest.mark.parametrize("isa", ["scalar", AVX2, AVXVNNI, AVX512VNNI, AMX])
@pytest.mark.parametrize("name", ["w8a8_dynamic", "8da4w_group32"])
@pytest.mark.parametrize("shape", [(2, 5, 64), (4, 16, 64)], ids=["10_tokens", "64_tokens"])
def test_integer_paths_agree_with_torchao(isa, name, shape):
    """W8A8: bit for bit. 8da4w (integer dot products per group, scaled and summed in float; torchao sums float
    products): within float rounding. Every kernel set computes the same integers, so their outputs are equal; the
    amx set runs GEMMs of fewer than 16 rows (10 tokens) on vpdpbusd, of more (64) on its tiles."""
    model = quantized_mlp(name)
    module = _convert(model, torch.randn(shape))
    assert [n["op"] for n in module.nodes() if n["op"] == "affine_linear"] == ["affine_linear"] * 2
    for x in _inputs(1, shape):
        got = module.run(x.numpy(), isa=isa).dequantized
        np.testing.assert_array_equal(got, module.run(x.numpy(), isa="scalar").dequantized)
        with torch.no_grad():
            expected = model(x).numpy()
        if name == "w8a8_dynamic":
            np.testing.assert_array_equal(got, expected)
        else:
            assert np.abs(got - expected).max() <= 1e-5 * np.abs(expected).max()


@pytest.mark.parametrize("isa", ["scalar", AVX2, AVXVNNI, AVX512VNNI, AMX])
@pytest.mark.parametrize("rows", [3, 40])
def test_8da8w_runs_the_gemm_of_each_group(isa, rows):
    """int8 weights in groups (values past int4's range): the u8 x s8 GEMM of each group and add_group_sums, where
    int4 weights take int4_group_sums. One linear, so that only float rounding separates it from torchao (in a chain a
    rounding can move the next layer's per-token quantization by a step)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 40)).eval()
    quantize_(model, CONFIGS["8da8w_group32"]())
    module = _convert(model, torch.randn(rows, 64))
    for x in _inputs(2, (rows, 64)):
        got = module.run(x.numpy(), isa=isa).dequantized
        np.testing.assert_array_equal(got, module.run(x.numpy(), isa="scalar").dequantized)
        with torch.no_grad():
            expected = model(x).numpy()
        assert np.abs(got - expected).max() <= 1e-5 * np.abs(expected).max()


def test_w8a8_dynamic_each_layer_equals_torchao():
    """Each linear alone, fed the same input, gives torchao's float32 output bit for bit."""
    model = quantized_mlp("w8a8_dynamic", seed=3)
    x = torch.randn(7, 64) * 4
    module = _convert(model.up, x)
    with torch.no_grad():
        np.testing.assert_array_equal(module.run(x.numpy()).dequantized, model.up(x).numpy())


@pytest.mark.parametrize("name", [n for n in CONFIGS if n not in ("w8a8_dynamic", "8da4w_group32", "8da8w_group32")])
def test_weight_only_configs_agree_within_float_rounding(name):
    """torchao computes these with a float linear of the dequantized weight (its BLAS's summation order): the
    runtime agrees within float32 rounding of the output's range."""
    model = quantized_mlp(name)
    module = _convert(model, torch.randn(2, 5, 64))
    for x in _inputs(2)[:2]:
        with torch.no_grad():
            expected = model(x).numpy()
        got = module.run(x.numpy()).dequantized
        assert np.abs(got - expected).max() <= 1e-5 * np.abs(expected).max()


def test_weights_are_stored_as_torchao_holds_them():
    """The int4 values stay int8 in [-8, 7] with one float32 scale and int8 zero point per group of 32."""
    model = quantized_mlp("int4_weight_only_group32")
    module = _convert(model, torch.randn(2, 5, 64))
    node = next(n for n in module.nodes() if n["op"] == "affine_linear")
    assert node["ints"]["group_size"] == [32] and node["ints"]["weight_bits"] == [4]
    params = module.params
    weight = params[node["params"]["weight"]]
    w = model.up.weight
    np.testing.assert_array_equal(weight, w.qdata.numpy())
    assert weight.dtype == np.int8 and weight.min() >= -8 and weight.max() <= 7
    np.testing.assert_array_equal(params[node["params"]["weight_scale"]], w.scale.reshape(-1).numpy())


@pytest.mark.parametrize("capability", ["avx512", "avx2", "default"])
def test_int4_cpu_pack_reads_back_under_each_pytorch_build(capability):
    """PyTorch packs int4 weights for its CPU kernel in a layout that depends on the kernel build it dispatches to
    (ATEN_CPU_CAPABILITY; a capability the CPU lacks falls back to a lower one): whichever it is, the unpacked values
    are the ones packed, for output channels in whole blocks and in a shorter last one."""
    script = ("import numpy as np, torch\n"
              "from qnnpy.convert.tinygemm_int4 import unpack_int4_weight\n"
              "w = torch.randint(0, 16, (208, 96), generator=torch.Generator().manual_seed(0), dtype=torch.int32)\n"
              "packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(w, 1)\n"
              "assert np.array_equal(unpack_int4_weight(packed, 208, 96), w.numpy() - 8)\n")
    env = {**os.environ, "ATEN_CPU_CAPABILITY": capability}
    subprocess.run([sys.executable, "-P", "-c", script], env=env, check=True, timeout=120)


def test_relax_module_is_well_formed_and_kernels_form_equals_runtime():
    pytest.importorskip("tvm")
    from tvm import relax

    from qnnpy import tvm_bridge

    torch.manual_seed(0)
    lookup = quantize_like_executorch(nn.Sequential(nn.Embedding(50, 64), nn.Linear(64, 8)).eval())
    cases = [(quantized_mlp(name), torch.randn(2, 5, 64)) for name in ("w8a8_dynamic", "8da4w_group32", "int4_cpu_pack_group32")]
    cases.append((lookup, torch.randint(0, 50, (2, 3))))
    for model, x in cases:
        module = _convert(model, x)
        relax.analysis.well_formed(module.to_tvm())  # raises where the module is not well formed
        expected = module.run(x.numpy()).dequantized
        np.testing.assert_array_equal(tvm_bridge.build(module, form="kernels")(x.numpy()), expected)
        with torch.no_grad():
            reference = model(x).numpy()
        qdq = tvm_bridge.build(module, form="qdq")(x.numpy())
        # The float form computes the same integers but sums in float: within a quantization step of the output.
        assert np.abs(qdq - reference).max() <= 0.05 * np.abs(reference).max()


@pytest.mark.parametrize("rules", [True, False], ids=["schedule_rules", "tvm_default"])
@pytest.mark.parametrize("name", ["w8a8_dynamic", "8da4w_group32", "8da8w_group32", "8da8w_per_row"])
def test_integer_form_computes_the_dynamic_linears_in_integers_bit_for_bit(name, rules):
    """TVM's integer form: each linear an int32 matmul (per group for 8da4w) and the runtime's float epilogue, each
    per-token quantization kept as the float arithmetic torchao defines: equal to the runtime bit for bit, with
    qnnpy's schedule rules (vectorized, where TVM's backend would fuse a multiply and an add) and without."""
    pytest.importorskip("tvm")
    from qnnpy import tvm_bridge

    x = torch.randn(2, 5, 64, generator=torch.Generator().manual_seed(1))
    if name == "8da8w_per_row":  # asymmetric tokens, a row of weights one group
        torch.manual_seed(0)
        model = MLP().eval()
        quantize_(model, Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int8, weight_granularity=PerAxis(0)))
    else:
        model = quantized_mlp(name)
    module = _convert(model, x)
    runner = tvm_bridge.build(module, form="integer", rules=rules)
    report = tvm_bridge.lowering_report(runner.relax_module)
    assert report.complete
    assert sorted(rule for _, rule in report.lowered) == ["affine_linear"] * 2 + ["token_quantization"] * 2
    script = runner.relax_module.script()
    assert 'out_dtype="int32"' in script and 'R.matmul(torchao_linear_x,' not in script
    np.testing.assert_array_equal(runner(x.numpy()), module.run(x.numpy()).dequantized)


def test_exported_program_of_a_torchao_model_is_refused_with_the_way_through():
    model = quantized_mlp("w8a8_dynamic")
    program = torch.export.export(copy.deepcopy(model), (torch.randn(3, 64),))
    with pytest.raises(qnnpy.ConversionError, match="pass the eager model after quantize_"):
        qnnpy.from_torch(program, (torch.randn(3, 64),))


def test_unsupported_config_is_refused_by_name():
    from torchao.quantization import Int8StaticActivationInt8WeightConfig
    from torchao.quantization.granularity import PerTensor

    torch.manual_seed(0)
    model = MLP().eval()
    try:
        quantize_(model, Int8StaticActivationInt8WeightConfig(act_quant_scale=torch.tensor([[0.05]]),
                                                              granularity=PerTensor()))
    except Exception as e:  # noqa: BLE001  (the config's own signature differs across torchao releases)
        pytest.skip(f"this torchao cannot build a static-activation model here: {e}")
    with pytest.raises(qnnpy.ConversionError, match="up .*Int8Tensor.*static activation scale"):
        qnnpy.from_torch(model, (torch.randn(2, 64),))


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
@pytest.mark.parametrize("name", ["w8a8_dynamic", "executorch_8da4w"])
def test_decoder_lm_converts_and_each_linear_matches_torchao(kind, name):
    """A Hugging Face decoder LM quantized with quantize_ converts from the eager model and input ids. Each quantized
    linear fed PyTorch's input gives torchao's output (W8A8: bit for bit; ExecuTorch's 8da4w recipe, whose
    int8 embedding table is looked up bit for bit: within float rounding); the logits end within 2% of their
    range of PyTorch's (float glue summed in another order moves a per-token quantization by a step now and
    then) with the same next token everywhere."""
    pytest.importorskip("transformers")
    model = tiny_lm(kind)
    if name == "executorch_8da4w":
        quantize_like_executorch(model)
    else:
        quantize_(model, CONFIGS[name]())
    ids = torch.randint(0, 256, (1, 12), generator=torch.Generator().manual_seed(1))
    module = _convert(model, ids)
    linears = {n["source"]: n for n in module.nodes() if n["op"] == "affine_linear"}
    assert len(linears) == 2 * 7 + 1  # q, k, v, o, gate, up, down per layer, and the LM head
    lookups = [n for n in module.nodes() if n["op"].endswith("embedding")]
    assert [n["op"] for n in lookups] == ["affine_embedding" if name == "executorch_8da4w" else "float_embedding"]
    seen: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    hooks = [layer.register_forward_hook(lambda _m, inputs, out, path=path: seen.__setitem__(path, (inputs[0], out)))
             for path, layer in model.named_modules() if path in linears]
    with torch.no_grad():
        logits = model(ids).logits.numpy()
    for hook in hooks:
        hook.remove()
    feed = {linears[path]["inputs"][0]: x.numpy() for path, (x, _) in seen.items()}
    result = module.run(ids.numpy(), capture=True, feed=feed)
    for path, (_, out) in seen.items():
        got, expected = result.intermediates[linears[path]["output"]], out.numpy()
        if name == "w8a8_dynamic":
            np.testing.assert_array_equal(got, expected, err_msg=path)
        else:
            assert np.abs(got - expected).max() <= 1e-5 * np.abs(expected).max(), path
    with torch.no_grad():
        rows = model.model.embed_tokens(ids).numpy()
    np.testing.assert_array_equal(result.intermediates[lookups[0]["output"]], rows)
    end_to_end = module.run(ids.numpy()).dequantized
    assert np.abs(end_to_end - logits).max() <= 0.02 * np.abs(logits).max()
    np.testing.assert_array_equal(end_to_end.argmax(-1), logits.argmax(-1))


def test_summary_counts_the_quantized_linears_apart_from_the_float_ops():
    module = _convert(quantized_mlp("w8a8_dynamic"), torch.randn(2, 5, 64))
    summary = module.summary()
    assert "(int8 weights, the input quantized at run time or weight-only): affine_linear x2" in summary
    assert "float ops: 2 (float_add x1, float_relu x1)" in summary


@pytest.mark.parametrize("granularity", ["per_row", "group32"])
def test_quantized_embedding_equals_torchao_bit_for_bit(granularity):
    from torchao.quantization import IntxWeightOnlyConfig
    from torchao.quantization.granularity import PerAxis, PerGroup

    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(100, 64), nn.Linear(64, 8)).eval()
    config = IntxWeightOnlyConfig(weight_dtype=torch.int4 if granularity == "group32" else torch.int8,
                                  granularity=PerGroup(32) if granularity == "group32" else PerAxis(0))
    quantize_(model, config, filter_fn=lambda module, _: isinstance(module, nn.Embedding))
    ids = torch.randint(0, 100, (3, 7))
    lookup = _convert(model[0], ids)
    assert [n["op"] for n in lookup.nodes()] == ["affine_embedding"]
    with torch.no_grad():
        np.testing.assert_array_equal(lookup.run(ids.numpy()).dequantized, model[0](ids).numpy())
    with pytest.raises(ValueError, match="index 100 .* outside the table's 100 rows"):
        lookup.run(np.full((3, 7), 100, np.int64))


def test_hugging_face_torchao_config_round_trip_converts(tmp_path):
    """transformers' TorchAoConfig (quantize_ at from_pretrained), then save_pretrained + from_pretrained of the
    quantized model: the reloaded model converts and computes as the one quantized in memory."""
    transformers = pytest.importorskip("transformers")
    from torchao.quantization import Int8DynamicActivationInt8WeightConfig

    pytest.importorskip("transformers")
    tiny_lm("llama").save_pretrained(tmp_path / "float")
    config = transformers.TorchAoConfig(quant_type=Int8DynamicActivationInt8WeightConfig())
    quantized = transformers.LlamaForCausalLM.from_pretrained(tmp_path / "float", quantization_config=config).eval()
    quantized.save_pretrained(tmp_path / "quantized", safe_serialization=False)
    reloaded = transformers.LlamaForCausalLM.from_pretrained(tmp_path / "quantized").eval()
    assert type(reloaded.model.layers[0].mlp.up_proj.weight).__name__ == "Int8Tensor"
    ids = torch.randint(0, 256, (1, 8), generator=torch.Generator().manual_seed(0))
    outputs = []
    for model in (quantized, reloaded):
        module = _convert(model, ids)
        outputs.append(module.run(ids.numpy()).dequantized)
        with torch.no_grad():
            logits = model(ids).logits.numpy()
        assert np.abs(outputs[-1] - logits).max() <= 0.02 * np.abs(logits).max()
    np.testing.assert_array_equal(outputs[0], outputs[1])

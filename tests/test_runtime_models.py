"""ResNet-18 and MobileNetV2 in the integer runtime against PyTorch's engines, bit for bit at every layer."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import qnnpy
from isas import AMX, AVX512VNNI, AVXVNNI


@pytest.fixture(scope="module")
def module(resnet18, resnet18_inputs) -> qnnpy.QDQModule:
    return qnnpy.from_torch(resnet18, (resnet18_inputs[0],))


def test_fbgemm_profile_equals_fbgemm_engine_at_every_layer(resnet18, resnet18_inputs, module, capsys):
    torch.backends.quantized.engine = "fbgemm"
    report = qnnpy.compare(resnet18, module, resnet18_inputs[:3], profiles=["fbgemm", "int32_bias"])
    assert len(report.layers["fbgemm"]) == 33
    assert report.all_identical("fbgemm"), report.table()
    final = report.final("int32_bias")
    with capsys.disabled():
        print(f"\nResNet-18, PyTorch fbgemm engine vs runtime profile int32_bias: final output "
              f"{final.identical}/{final.total} identical ({final.fraction:.2%}), max {final.max_lsb} LSB; "
              f"first divergence at {report.first_divergence('int32_bias').source}")


def test_int32_bias_profile_equals_qnnpack_engine_at_every_layer(resnet18, resnet18_inputs, module):
    torch.backends.quantized.engine = "qnnpack"
    repacked = copy.deepcopy(resnet18)  # __setstate__ re-packs every conv/linear for the current engine
    report = qnnpy.compare(repacked, module, resnet18_inputs[:3], profiles=["int32_bias"])
    assert report.all_identical("int32_bias"), report.table()


@pytest.mark.parametrize("isa", ["avx2", AVXVNNI, AVX512VNNI, AMX])
@pytest.mark.parametrize("profile", ["int32_bias", "fbgemm"])
def test_scalar_and_vector_kernels_agree_on_resnet18(module, resnet18_inputs, profile, isa):
    if not qnnpy._core.cpu_has_avx2():
        pytest.fail("this test machine is expected to have AVX2")
    x = resnet18_inputs[1].numpy()
    scalar = module.run(x, profile=profile, isa="scalar", capture=True)
    vector = module.run(x, profile=profile, isa=isa, capture=True, threads=2)
    assert scalar.intermediates.keys() == vector.intermediates.keys()
    for name, a in scalar.intermediates.items():
        np.testing.assert_array_equal(a, vector.intermediates[name], err_msg=name)


def test_run_returns_quantized_and_dequantized_output(module, resnet18, resnet18_inputs):
    x = resnet18_inputs[2]
    result = module.run(x.numpy(), profile="fbgemm")
    with torch.no_grad():
        ref = resnet18(x)
    scale, zero_point = module.output_qparams()[0]
    assert result.quantized.shape == (1, 1000)
    np.testing.assert_array_equal(result.dequantized, ref.numpy())
    np.testing.assert_array_equal(result.quantized,
                                  torch.quantize_per_tensor(ref, scale, zero_point, torch.quint8).int_repr().numpy())


def test_mobilenet_v2_depthwise_model_is_bit_exact_under_both_engines():
    from qnnpy import zoo

    model = zoo.quantized_mobilenet_v2()
    inputs = zoo.calibration_data(1, 1, (3, 224, 224), seed=99)
    module = qnnpy.from_torch(model, (inputs[0],))
    assert sum(n["op"] == "conv2d" and n["ints"]["groups"][0] > 1 for n in module.nodes()) == 17
    report = qnnpy.compare(model, module, inputs, profiles=["fbgemm"])
    assert report.all_identical("fbgemm"), report.table()
    torch.backends.quantized.engine = "qnnpack"
    report = qnnpy.compare(copy.deepcopy(model), module, inputs, profiles=["int32_bias"])
    assert report.all_identical("int32_bias"), report.table()


def test_run_rejects_inputs_of_the_wrong_shape_or_count(module):
    with pytest.raises(ValueError, match=r"input 'x' must have shape \(1, 3, 224, 224\), got \(1, 3, 32, 32\)"):
        module.run(np.zeros((1, 3, 32, 32), np.float32))
    with pytest.raises(ValueError, match=r"input 'x' must have shape \(1, 3, 224, 224\), got \(3, 224, 224\) "
                                         r"\(3 dimensions, not 4\)"):
        module.run(np.zeros((3, 224, 224), np.float32))
    for bad, kind in ((np.zeros((1, 3, 224, 224), np.complex64), "ndarray of complex64"), ({"x": 0}, "dict of object")):
        with pytest.raises(ValueError, match=f"input 'x' takes a real numeric array, got {kind}"):
            module.run(bad)
    with pytest.raises(ValueError, match=r"1 input\(s\) expected, got 2"):
        module.run(np.zeros((1, 3, 224, 224), np.float32), np.zeros((1, 3, 224, 224), np.float32))
    for threads in (2.5, "2", True):
        with pytest.raises(ValueError, match=rf"threads must be an integer in \[1, 256\], got {threads!r}"):
            module.run(np.zeros((1, 3, 224, 224), np.float32), threads=threads)
    with pytest.raises(ValueError, match="unknown profile"):
        module.run(np.zeros((1, 3, 224, 224), np.float32), profile="fast")

"""Bad input raises errors that name the op and the module path; nothing is dropped."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import qnnpy
from qnnpy.errors import ConversionError, UnsupportedOpsError
from small_models import Wrapped, quantized


def test_float_model_is_refused():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()).eval()
    with pytest.raises(ConversionError, match="float model"):
        qnnpy.from_torch(model, (torch.randn(1, 3, 8, 8),))


def test_missing_example_input_is_refused():
    model, _ = quantized(nn.Conv2d(3, 4, 3), (3, 8, 8))
    with pytest.raises(ConversionError, match="needs example_inputs"):
        qnnpy.from_torch(model)
    with pytest.raises(ConversionError, match=r"forward takes 1 input\(s\) \(x\), but 2"):
        qnnpy.from_torch(model, (torch.randn(1, 3, 8, 8), torch.randn(1, 3, 8, 8)))


@pytest.mark.parametrize("qat", [False, True])
def test_a_prepared_but_unconverted_model_is_refused_saying_so(qat):
    """Observers (PTQ) or fake-quantize modules (QAT, in training or eval mode) left in the model."""
    model = Wrapped(nn.Conv2d(3, 4, 3)).train(qat)
    qconfig = torch.ao.quantization.get_default_qat_qconfig if qat else torch.ao.quantization.get_default_qconfig
    model.qconfig = qconfig("fbgemm")
    prepared = (torch.ao.quantization.prepare_qat if qat else torch.ao.quantization.prepare)(model)
    x = torch.randn(1, 3, 8, 8)
    prepared(x)
    for candidate in (prepared, prepared.eval()):
        with pytest.raises(ConversionError, match=r"holds \d+ observer or fake-quantize module\(s\) \(quant\."
                                                  r"activation_post_process, \.\.\.\): it was prepared for "
                                                  r"quantization but not converted"):
            qnnpy.from_torch(candidate, (x,))


@pytest.mark.parametrize("engine", ["fbgemm", "x86"])
def test_an_example_input_the_model_does_not_run_on_names_the_expected_shape(engine):
    """PyTorch's own error (under x86 on a CPU with AVX-512 VNNI, oneDNN's "could not create a primitive
    descriptor") is replaced by the input the first layer takes."""
    torch.backends.quantized.engine = engine
    model = Wrapped(nn.Conv2d(3, 4, 3)).eval()
    model.qconfig = torch.ao.quantization.get_default_qconfig(engine)
    torch.ao.quantization.prepare(model, inplace=True)
    model(torch.randn(1, 3, 8, 8))
    torch.ao.quantization.convert(model, inplace=True)
    with pytest.raises(ConversionError, match=r"^example inputs of shape \(1, 5, 8, 8\): the model does not run on "
                                              r"inputs of this shape; it expects \(N, 3, H, W\), the input of its "
                                              r"first layer body \(Conv2d\) \("):
        qnnpy.from_torch(model, (torch.randn(1, 5, 8, 8),))


def test_training_mode_is_refused():
    model, x = quantized(nn.Conv2d(3, 4, 3), (3, 8, 8))
    with pytest.raises(ConversionError, match="training mode"):
        qnnpy.from_torch(model.train(), (x,))


def test_a_pt2e_graph_the_quantizer_left_float_is_called_a_float_model_not_a_training_one():
    """X86InductorQuantizer annotates no 3-D conv: convert_pt2e returns the graph with nothing quantized (and, as
    every exported graph, its training flag set), which is a float model, whatever the flag says."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    from pt2e_models import quantizer

    x = torch.randn(1, 3, 4, 6, 5)
    prepared = prepare_pt2e(torch.export.export(nn.Conv3d(3, 4, 3).eval(), (x,), strict=True).module(), quantizer("x86"))
    prepared(x)
    graph = convert_pt2e(prepared)
    assert graph.training
    with pytest.raises(ConversionError, match="computes no quantized tensor: it is a float model"):
        qnnpy.from_torch(graph, (x,))


class TwoUnsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.act = nn.PixelShuffle(2)
        self.tail = nn.Conv2d(1, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flip(self.tail(self.act(self.conv(x))), [3])


def test_all_unsupported_ops_are_listed_with_paths():
    model, x = quantized(TwoUnsupported(), (3, 8, 8))
    with pytest.raises(UnsupportedOpsError) as info:
        qnnpy.from_torch(model, (x,))
    paths = [path for path, _ in info.value.ops]
    assert paths == ["body.act", "body.flip"]
    assert "torch.nn.modules.pixelshuffle.PixelShuffle" in str(info.value)
    assert "torch.flip" in str(info.value)


class _Spectrum(nn.Module):
    """The magnitude of a real FFT: complex values, which qnnpy's float ops do not have."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.fft.rfft(x, dim=-1).abs()


def test_float_layer_inside_a_quantized_model_converts():
    """A float conv after a DeQuantStub: decomposed to aten.conv2d, a float_conv2d within float rounding of PyTorch."""
    class Mixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = torch.ao.quantization.QuantStub()
            self.dequant = torch.ao.quantization.DeQuantStub()
            self.float_conv = nn.Conv2d(3, 3, 1)

        def forward(self, x):
            return self.float_conv(self.dequant(self.quant(x)))

    model, x = quantized(nn.Identity(), (3, 4, 4))
    mixed = Mixed().eval()
    mixed.quant, mixed.dequant = model.quant, model.dequant
    module = qnnpy.from_torch(mixed, (x,))
    assert [n["op"] for n in module.nodes()] == ["quantize", "dequantize", "float_conv2d"]
    with torch.no_grad():
        ref = mixed(x).numpy()
    np.testing.assert_allclose(module.run(x.numpy()).dequantized, ref, rtol=0, atol=1e-6 * np.abs(ref).max())


def test_float_op_without_a_form_inside_a_quantized_model_is_reported_by_path():
    class Mixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = torch.ao.quantization.QuantStub()
            self.dequant = torch.ao.quantization.DeQuantStub()
            self.spectrum = _Spectrum()

        def forward(self, x):
            return self.spectrum(self.dequant(self.quant(x)))

    model, x = quantized(nn.Identity(), (3, 4, 4))
    mixed = Mixed().eval()
    mixed.quant, mixed.dequant = model.quant, model.dequant
    with pytest.raises(UnsupportedOpsError, match=r"spectrum.*_fft_r2c.*no float form"):
        qnnpy.from_torch(mixed, (x,))


@pytest.mark.parametrize("body, shape", [(nn.Conv2d(3, 4, 3, padding=1, padding_mode="reflect"), (3, 8, 8)),
                                         (nn.Conv1d(3, 4, 3, padding=1, padding_mode="reflect"), (3, 8))])
def test_conv_padding_other_than_zeros_is_refused_by_name(body, shape):
    """Such a quantized conv pads its input with F.pad inside its forward, which the capture does not see."""
    model, x = quantized(body, shape)
    with pytest.raises(ConversionError, match=f"body: padding_mode='{body.padding_mode}' is not supported"):
        qnnpy.from_torch(model, (x,))


class BroadcastAdd(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.join = nn.quantized.FloatFunctional()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return self.join.add(y, torch.mean(y, (2, 3), keepdim=True))


def test_a_node_the_core_refuses_is_a_conversion_error_naming_it():
    """The core's checks of a node (here: add's operands must have one shape) surface as ConversionError."""
    model, x = quantized(BroadcastAdd(), (3, 8, 8))
    with pytest.raises(ConversionError, match=r"add \(body\.add\): input shapes differ: \(2, 4, 6, 6\) vs \(2, 4, 1, 1\)"):
        qnnpy.from_torch(model, (x,))


def test_bad_example_input_type_is_refused():
    model, _ = quantized(Wrapped(nn.Identity()).body, (3, 4, 4))
    with pytest.raises(ConversionError, match="must be a float tensor, int64 / int32 indices or a bool mask, got a torch.int16 tensor"):
        qnnpy.from_torch(model, (torch.zeros(1, 3, 4, 4, dtype=torch.int16),))


def test_float_op_between_dynamic_linears_converts():
    """Dynamic linears convert, and a float sigmoid between them (decomposed to aten.sigmoid) is float_sigmoid."""
    model = nn.Sequential(nn.Linear(8, 4), nn.Sigmoid(), nn.Linear(4, 2)).eval()
    dynamic = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
    x = torch.randn(1, 8)
    module = qnnpy.from_torch(dynamic, (x,))
    assert [n["op"] for n in module.nodes()] == ["dynamic_linear", "float_sigmoid", "dynamic_linear"]
    with torch.no_grad():
        ref = dynamic(x).numpy()
    np.testing.assert_allclose(module.run(x.numpy()).dequantized, ref, rtol=0, atol=1e-5 * np.abs(ref).max())


def test_dynamic_quantized_torchscript_lstm_is_refused_naming_its_op():
    model = nn.Sequential(nn.LSTM(8, 4)).eval()
    scripted = torch.jit.script(torch.ao.quantization.quantize_dynamic(model, {nn.LSTM}, dtype=torch.qint8))
    with pytest.raises(ConversionError, match="quantized_lstm.*LSTM, GRU and RNN cells"):
        qnnpy.from_torch(scripted, (torch.randn(2, 1, 8),))

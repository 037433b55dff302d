"""qnnpy.compare_tvm: TVM's final output against PyTorch's, in steps of the module's output scale."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import qnnpy
from qnnpy import tvm_bridge
from small_models import ConvBlock, Head, quantized

SHAPE = (2, 3, 12, 12)


@pytest.fixture(scope="module")
def head():
    """A quantized classifier head (2-D output), its module and two batches of two samples."""
    model, _ = quantized(Head(linear_relu=False), SHAPE[1:])
    generator = torch.Generator().manual_seed(5)
    inputs = [torch.randn(SHAPE, generator=generator) for _ in range(2)]
    return model, qnnpy.from_torch(model, (inputs[0],)), inputs


def _pytorch(model: torch.nn.Module, x: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return model(torch.from_numpy(x)).numpy()


def test_a_runner_equal_to_pytorch_agrees_everywhere(head):
    model, module, inputs = head
    agreement = qnnpy.compare_tvm(model, module, inputs, runner=lambda x: _pytorch(model, x))
    assert (agreement.samples, agreement.same_top1) == (4, 4)
    assert (agreement.identical, agreement.total, agreement.max_lsb) == (40, 40, 0)
    assert agreement.engine == torch.backends.quantized.engine
    assert agreement.summary().endswith("top-1 agrees on 4/4 sample(s); final output 40/40 values identical "
                                        "(100.0000%), max 0 LSB")


def test_counts_the_values_moved_and_the_top1_flipped(head):
    model, module, inputs = head
    scale, _ = module.output_qparams()[0]

    def runner(x: np.ndarray) -> np.ndarray:
        """PyTorch's output with the smallest logit of sample 0 raised 4 steps above its largest."""
        out = _pytorch(model, x)
        out[0, out[0].argmin()] = out[0].max() + 4 * scale
        return out

    refs = [_pytorch(model, x.numpy())[0] for x in inputs]
    expected_worst = max(round((r.max() - r.min()) / scale) + 4 for r in refs)
    agreement = qnnpy.compare_tvm(model, module, inputs, runner=runner)
    assert (agreement.samples, agreement.same_top1) == (4, 2)
    assert (agreement.identical, agreement.total) == (38, 40)
    assert agreement.max_lsb == expected_worst
    assert f"top-1 agrees on 2/4 sample(s); final output 38/40 values identical (95.0000%), max {expected_worst} LSB" \
        in agreement.summary()


def test_outputs_that_are_not_2d_have_no_top1():
    model, x = quantized(ConvBlock(3, 4, False, kernel_size=3), (3, 8, 8))
    module = qnnpy.from_torch(model, (x,))
    agreement = qnnpy.compare_tvm(model, module, [x], runner=lambda a: _pytorch(model, a))
    assert agreement.samples == 0
    assert agreement.total == x.shape[0] * 4 * 6 * 6
    assert "top-1" not in agreement.summary()


def test_builds_with_tvm_when_no_runner_is_given(head):
    model, module, inputs = head
    agreement = qnnpy.compare_tvm(model, module, inputs)
    assert agreement.same_top1 == agreement.samples == 4
    # The default form (kernels, else integer) under the profile of the fbgemm engine computes what PyTorch does.
    assert agreement.identical == agreement.total and agreement.max_lsb == 0
    assert f"({tvm_bridge.default_form()} form, profile fbgemm)" in agreement.summary()


def test_needs_an_input(head):
    model, module, _ = head
    with pytest.raises(ValueError, match="at least one input"):
        qnnpy.compare_tvm(model, module, [], runner=lambda x: x)


def test_a_float_output_is_compared_value_by_value_relative_to_its_range():
    """A PT2E model whose head the quantizer left in float: no quantization step, so equal values are counted and
    the largest difference is relative to the output's largest magnitude; the reference is PT2E's float ops."""
    from pt2e_models import inputs, pt2e

    model = pt2e("float_ops", "x86")
    xs = inputs(2)
    module = qnnpy.from_torch(model, (xs[0],))
    assert module.output_qparams()[0][0] is None  # the float head

    def moved(x: np.ndarray) -> np.ndarray:
        """PyTorch's output with its first value moved by 1/1000 of the output's range."""
        out = _pytorch(model, x)
        out.flat[0] += 1e-3 * np.abs(out).max()
        return out

    agreement = qnnpy.compare_tvm(model, module, xs, runner=moved)
    total = sum(_pytorch(model, x.numpy()).size for x in xs)
    assert agreement.engine == "PT2E reference"
    assert (agreement.identical, agreement.total) == (total - 2, total)
    assert agreement.max_relative == pytest.approx(1e-3, rel=1e-4)
    assert agreement.summary().endswith(f"final float output {total - 2}/{total} values identical "
                                        f"({(total - 2) / total:.4%}), max difference 1.0e-03 of its range")
    built = qnnpy.compare_tvm(model, module, xs)  # the default form: within float rounding of PyTorch's float head
    assert built.max_relative < 1e-5

"""PT2E models through TVM: every form runs the float islands as float Relax ops; the integer
lowering reports them; results against PyTorch's run of the converted GraphModule."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import qnnpy
from qnnpy import _core, tvm_bridge
from pt2e_models import inputs, pt2e

FLOAT_OPS = {op for op in _core.op_names() if _core.op_info(op)["kind"] == "float"}


@pytest.fixture(scope="module", params=["float_ops", "shuffle_unit"])
def float_ops_model(request):
    """tests/pt2e_models.py's float-island models: every float op of the CNN family between them."""
    gm = pt2e(request.param, "x86")
    return gm, qnnpy.from_torch(gm, (inputs(1)[0],))


def test_integer_lowering_reports_the_float_ops(float_ops_model):
    _, module = float_ops_model
    with pytest.warns(UserWarning, match="float op"):
        lowered = tvm_bridge.lower_integer(module.to_tvm(), "fbgemm", params=module.params, hints=module)
    report = tvm_bridge.lowering_report(lowered)
    assert sorted(op for _, op in report.float_ops) == sorted(n["op"] for n in module.nodes() if n["op"] in FLOAT_OPS)
    assert report.lowered  # the quantized islands (the first conv) are integer Relax


@pytest.mark.parametrize("form", ["kernels", "integer", "qdq"])
def test_every_tvm_form_runs_the_float_islands(float_ops_model, form):
    gm, module = float_ops_model
    x = inputs(2)[1]
    runner = tvm_bridge.build(module, form=form, profile="fbgemm")
    got = np.asarray(runner(x.numpy()))
    ours = module.run(x.numpy(), profile="fbgemm").dequantized
    with torch.no_grad():
        ref = gm(x).numpy()
    if form == "kernels":  # each node runs the runtime's own runner
        np.testing.assert_array_equal(got, ours)
    # Float ops sum in another order than the runtime and PyTorch: float rounding apart.
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-4 * np.abs(ref).max())


@pytest.mark.slow
@pytest.mark.parametrize("form", [None, "qdq"])
def test_resnet18_x86_in_tvm_agrees_with_pytorch(form):
    gm = pt2e("resnet18", "x86")
    xs = inputs(3)
    module = qnnpy.from_torch(gm, (xs[0],))
    runner = tvm_bridge.build(module, form=form, profile="fbgemm")
    for x in xs[1:]:
        got = np.asarray(runner(x.numpy()))
        with torch.no_grad():
            ref = gm(x).numpy()
        assert got.argmax() == ref.argmax()
        assert np.abs(got - ref).max() <= 0.05 * np.abs(ref).max()

"""Every op of the runtime against PyTorch's quantized op, tolerance 0, under both engines."""
from __future__ import annotations

import copy

import pytest
import torch

import qnnpy
from small_models import Head, Residual, conv_cases, quantized


def _cases():
    cases = {name: (body, shape, pc, fuse) for name, (body, shape, pc, fuse) in conv_cases().items()}
    cases["add"] = (Residual(False), (3, 10, 10), True, None)
    cases["add_relu"] = (Residual(True), (3, 10, 10), True, None)
    cases["pools_linear"] = (Head(False), (3, 17, 17), True, [["body.conv", "body.relu"]])
    cases["pools_linear_relu_unfused_relu"] = (Head(True), (3, 17, 17), True, [["body.fc", "body.fc_relu"]])
    return cases


@pytest.mark.parametrize("name", sorted(_cases()))
@pytest.mark.parametrize("engine, profile", [("fbgemm", "fbgemm"), ("qnnpack", "int32_bias"), ("qnnpack", "qnnpack")])
def test_op_matches_torch_engine(name, engine, profile):
    body, shape, per_channel, fuse = _cases()[name]
    model, x = quantized(body, shape, per_channel, fuse)
    module = qnnpy.from_torch(model, (x,))
    torch.backends.quantized.engine = engine
    reference = copy.deepcopy(model) if engine != "fbgemm" else model
    report = qnnpy.compare(reference, module, [x], profiles=[profile])
    assert report.all_identical(profile), report.table()


def test_concurrent_runs_of_one_module_agree():
    """Python threads sharing one module (and so one prepared executor) get the sequential result."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    body, shape, per_channel, fuse = _cases()["pools_linear"]
    model, x = quantized(body, shape, per_channel, fuse)
    module = qnnpy.from_torch(model, (x,))
    expected = module.run(x.numpy(), profile="fbgemm", threads=2).quantized
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: module.run(x.numpy(), profile="fbgemm", threads=2).quantized, range(16)))
    for result in results:
        np.testing.assert_array_equal(result, expected)

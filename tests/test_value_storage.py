"""The runtime's value storage: a value's buffer goes back to a pool when no later node reads it, so values alive
at different times share memory, and later runs reuse it without growing."""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

import qnnpy
from qnnpy.executor import Executor
from torchao_models import quantized_mlp

LINKS = 24


class _LongChain(nn.Module):
    """torchao's W8A8 MLP, then a chain of float ops on its (rows, 64) output: many values, few alive at once."""

    def __init__(self) -> None:
        super().__init__()
        self.mlp = quantized_mlp("w8a8_dynamic")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.mlp(x)
        for i in range(LINKS):
            x = torch.tanh(x * 1.01 + 0.01 * i)
        return x


def test_values_alive_at_different_times_share_storage_and_runs_reuse_it():
    model = _LongChain().eval()
    x = torch.randn(256, 64, generator=torch.Generator().manual_seed(0))
    module = qnnpy.from_torch(model, (x,))
    one_value = 256 * 64 * 4
    values = [v for v in (module.graph.value(i) for i in range(len(module.graph.values()))) if v["dtype"] == "float32"]
    assert sum(int(np.prod(v["shape"])) * 4 for v in values) > 3 * LINKS * one_value  # what keeping each would take
    executor = Executor(module.graph, module.output_qparams(), threads=1)
    assert executor.storage_bytes() == 0
    first = executor.run(x.numpy()).dequantized
    held = executor.storage_bytes()
    assert one_value * 2 <= held <= one_value * 8, held / one_value  # input, output and a few alive together
    second = executor.run(x.numpy()).dequantized
    assert executor.storage_bytes() == held
    np.testing.assert_array_equal(first, second)
    with torch.no_grad():
        expected = model(x).numpy()
    assert np.abs(first - expected).max() <= 1e-5

"""Shared fixtures: quantized models built without downloads, and helpers."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from isas import AMX, AMX_MODEL, AVX512VNNI, AVXVNNI
from qnnpy import zoo

warnings.filterwarnings("ignore", message=".*quantized tensor creation functions.*")


@pytest.fixture(autouse=True)
def _fbgemm_engine():
    """Every test starts on the fbgemm engine, single-threaded (deterministic kernels)."""
    torch.backends.quantized.engine = "fbgemm"
    torch.set_num_threads(1)
    yield
    torch.backends.quantized.engine = "fbgemm"


@pytest.fixture(params=["avx2", AVXVNNI, AVX512VNNI, AMX, AMX_MODEL])
def vector_isa(request) -> str:
    """Each x86 vector kernel set, compared with the scalar one (the VNNI and AMX sets where the CPU runs them;
    amx_model, the AMX GEMM driver on the software model of the tiles, everywhere)."""
    return request.param


@pytest.fixture(scope="session")
def resnet18() -> torch.nn.Module:
    return zoo.quantized_resnet18(engine="fbgemm", seed=0)


@pytest.fixture(scope="session")
def resnet18_inputs() -> list[torch.Tensor]:
    return zoo.calibration_data(6, 1, (3, 224, 224), seed=123)


def lsb_diff(a: np.ndarray, b: np.ndarray, scale: float) -> np.ndarray:
    """Difference of two dequantized tensors in units of the quantization step."""
    return np.rint(np.abs(a.astype(np.float64) - b.astype(np.float64)) / scale).astype(np.int64)

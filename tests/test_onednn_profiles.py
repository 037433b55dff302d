"""PyTorch's onednn engine and its default x86 engine, which hands convs to oneDNN on CPUs with AVX-512 VNNI,
reproduced bit for bit (tolerance 0) by the onednn / onednn_amx / x86 / x86_amx profiles (src/runtime/profile.h):
one layer of each kind against PyTorch's, and whole models with oneDNN capped below AMX in a fresh process.
On a CPU without AVX-512 VNNI these tests skip: PyTorch's x86 engine then runs FBGEMM only (the fbgemm
profile's tests), and its onednn engine other kernels that no profile reproduces."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.ao.quantization import QConfig, default_observer, default_weight_observer

import qnnpy
from qnnpy import zoo
from qnnpy.profiles import cpu_flags, default_profile, profile_for_engine
from small_models import Wrapped

pytestmark = pytest.mark.skipif("avx512_vnni" not in cpu_flags(),
                                reason="this CPU has no AVX-512 VNNI: PyTorch sends no conv to oneDNN under x86, "
                                       "and its onednn engine's kernels here are not reproduced")

PER_TENSOR = QConfig(activation=default_observer, weight=default_weight_observer)

# Layers whose arithmetic the engines route differently: dense and 1x1 convs (oneDNN's tile kernels on AMX),
# a grouped conv, depthwise convs with at most and with more than 100 groups (oneDNN's brdgmm kernel; FBGEMM
# under x86), a 3-channel stem, convs with fused ReLU, a conv1d, transposed convs with per-tensor weights, and
# linears (FBGEMM under x86, oneDNN's matmul under onednn).
LAYERS = {
    "conv3x3": lambda: nn.Conv2d(16, 32, 3, padding=1),
    "conv1x1_relu": lambda: nn.Sequential(nn.Conv2d(16, 48, 1), nn.ReLU()),
    "conv_stride2": lambda: nn.Conv2d(16, 24, 3, stride=2, padding=1),
    "grouped": lambda: nn.Conv2d(16, 32, 3, padding=1, groups=4),
    "depthwise_16": lambda: nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.ReLU()),
    "depthwise_128": lambda: nn.Sequential(nn.Conv2d(16, 128, 1), nn.Conv2d(128, 128, 3, padding=1, groups=128)),
    "stem": lambda: nn.Sequential(nn.Conv2d(16, 3, 1), nn.Conv2d(3, 32, 7, stride=2, padding=3)),
    "conv1d": lambda: nn.Sequential(nn.Flatten(2), nn.Conv1d(16, 32, 5, padding=2)),
    "conv_transpose": lambda: nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1),
    "linear_relu": lambda: nn.Sequential(nn.Flatten(), nn.Linear(16 * 10 * 10, 64), nn.ReLU(), nn.Linear(64, 10)),
}
SHAPE = (16, 10, 10)


def _quantized(body: nn.Module, engine: str, seed: int) -> tuple[nn.Module, list[torch.Tensor]]:
    """``body`` quantized under ``engine`` with its default qconfig (per-tensor weights for transposed convs,
    which eager mode quantizes per tensor only) and calibrated on generated data."""
    torch.manual_seed(seed)
    for p in body.parameters():
        if p.dim() == 1:
            nn.init.normal_(p, std=0.5)
    torch.backends.quantized.engine = engine
    model = Wrapped(body).eval()
    model.qconfig = torch.ao.quantization.get_default_qconfig(engine)
    for layer in model.modules():
        if isinstance(layer, nn.ConvTranspose2d):
            layer.qconfig = PER_TENSOR
    fuse = [["0", "1"]] if isinstance(body, nn.Sequential) and len(body) == 2 and isinstance(body[1], nn.ReLU) else []
    if fuse:
        torch.ao.quantization.fuse_modules(model.body, fuse, inplace=True)
    torch.ao.quantization.prepare(model, inplace=True)
    data = zoo.calibration_data(4, 4, SHAPE, seed + 1)
    with torch.no_grad():
        for x in data:
            model(x)
    torch.ao.quantization.convert(model, inplace=True)
    return model, zoo.calibration_data(3, 4, SHAPE, seed + 2)


# PyTorch's quantized ConvTranspose2d under x86 and onednn (oneDNN's deconvolution) is up to 66 steps away from
# its own definition, the float conv_transpose2d of the dequantized tensors requantized (torch 2.14.1, Intel
# Xeon with AMX; also with the input zero point 0), while under fbgemm it equals it. qnnpy computes the definition.
PYTORCH_DIFFERS = {"conv_transpose": "PyTorch's oneDNN transposed conv differs from its own definition by up to "
                                     "66 steps; qnnpy computes the definition"}


@pytest.mark.parametrize("engine", ["x86", "onednn"])
@pytest.mark.parametrize("layer", [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=PYTORCH_DIFFERS[name]))
                                   if name in PYTORCH_DIFFERS else name for name in sorted(LAYERS)])
def test_each_layer_equals_the_engine_bit_for_bit(layer, engine):
    model, inputs = _quantized(LAYERS[layer](), engine, seed=sorted(LAYERS).index(layer))
    module = qnnpy.from_torch(model, (inputs[0],))
    profile = profile_for_engine(engine)
    report = qnnpy.compare(model, module, inputs, profiles=[profile, "fbgemm"])
    assert report.all_identical(profile), report.table()


def test_the_profiles_differ_from_fbgemm_where_pytorch_does():
    """The tests here can fail: on the layers oneDNN runs, the fbgemm profile (float bias first, one multiplier)
    lands values a step away from what PyTorch computed, and over ResNet-18 such steps are many."""
    torch.backends.quantized.engine = "onednn"
    model = zoo.quantized_torchvision("resnet18", engine="onednn", image_size=64, calibration_batches=2, batch_size=4)
    x = zoo.calibration_data(1, 2, (3, 64, 64), seed=7)[0]
    module = qnnpy.from_torch(model, (x,))
    report = qnnpy.compare(model, module, [x], profiles=[profile_for_engine("onednn"), "fbgemm"])
    assert report.all_identical(profile_for_engine("onednn")), report.table()
    assert not report.all_identical("fbgemm"), report.table()


# A fresh process with oneDNN capped at AVX-512 VNNI (ONEDNN_MAX_CPU_ISA is read when oneDNN starts): its
# brgemm kernels apply the input and weight scales one after the other, the onednn and x86 profiles. On a CPU
# without AMX the cap changes nothing and the same profiles hold.
_CAPPED = """
import sys, warnings
warnings.simplefilter("ignore")
import torch
import qnnpy
from qnnpy import zoo
from qnnpy.profiles import default_profile
torch.set_num_threads(1)
for engine in ("x86", "onednn"):
    for name in ("resnet18", "mobilenet_v2"):
        torch.backends.quantized.engine = engine
        model = zoo.quantized_torchvision(name, engine=engine, image_size=64, calibration_batches=2, batch_size=4)
        inputs = zoo.calibration_data(2, 2, (3, 64, 64), seed=7)
        module = qnnpy.from_torch(model, (inputs[0],))
        report = qnnpy.compare(model, module, inputs, profiles=[default_profile()])
        print(engine, name, default_profile(), report.all_identical(default_profile()))
"""


def test_whole_models_with_onednn_capped_below_amx():
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX512_CORE_VNNI")
    result = subprocess.run([sys.executable, "-c", _CAPPED], capture_output=True, text=True, timeout=600, env=env,
                            cwd=Path(__file__).parent)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:-1] == [f"{engine} {name} {profile} True"
                                               for engine, profile in (("x86", "x86"), ("onednn", "onednn"))
                                               for name in ("resnet18", "mobilenet_v2")]


def test_the_default_profile_follows_the_engine_and_the_cpu():
    amx = "amx_int8" in cpu_flags() and not os.environ.get("ONEDNN_MAX_CPU_ISA")
    for engine, expected in (("x86", "x86_amx" if amx else "x86"), ("onednn", "onednn_amx" if amx else "onednn"),
                             ("fbgemm", "fbgemm"), ("qnnpack", "qnnpack")):
        torch.backends.quantized.engine = engine
        assert default_profile() == expected

"""A small CNN on scikit-learn's bundled 8x8 digits, trained and quantized in seconds.

Shared by ``notebooks/02_accuracy_real_data.ipynb``, ``tests/test_digits_accuracy.py``
and the user guide. Everything is seeded, and the data ships with scikit-learn
(``sklearn.datasets.load_digits``: 1797 grey 8x8 images, no download)::

    from qnnpy.examples import digits

    data = digits.load_split()
    float_model = digits.trained_model(data)                   # seeded: the same weights every run
    quantized = digits.quantize_eager(float_model, data)      # QuantStub -> CNN -> DeQuantStub
    module = qnnpy.from_torch(quantized, (data.test_x,))       # the whole held-out split as one batch

Needs scikit-learn (``pip install scikit-learn``).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import nn
from torch.ao.quantization import DeQuantStub, QuantStub

IMAGE_SHAPE = (1, 8, 8)
CLASSES = 10
# Pairs of module paths (inside QuantizedDigits) that eager mode fuses into ConvReLU2d.
FUSE_PAIRS = [["net.conv1", "net.relu1"], ["net.conv2", "net.relu2"], ["net.conv3", "net.relu3"]]


@dataclass
class DigitsSplit:
    """Images scaled to [-1, 1] as (N, 1, 8, 8) float32 tensors, and int64 labels."""

    train_x: torch.Tensor
    train_y: torch.Tensor
    test_x: torch.Tensor
    test_y: torch.Tensor


def load_split(test_fraction: float = 0.2, seed: int = 0) -> DigitsSplit:
    """The digits data set, split into train and held-out test sets (stratified, seeded)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 8.0 - 1.0  # pixel values 0..16
    labels = torch.tensor(digits.target, dtype=torch.int64)
    train_idx, test_idx = train_test_split(
        range(len(labels)), test_size=test_fraction, random_state=seed, stratify=digits.target
    )
    return DigitsSplit(images[train_idx], labels[train_idx], images[test_idx], labels[test_idx])


class DigitsCNN(nn.Module):
    """Three 3x3 convs with ReLU, a max pool, global average pooling and a linear classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.relu2 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv3 = nn.Conv2d(16, 32, 3, padding=1)
        self.relu3 = nn.ReLU()
        self.avg = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.relu2(self.conv2(self.relu1(self.conv1(x)))))
        x = self.avg(self.relu3(self.conv3(x)))
        return self.fc(torch.flatten(x, 1))


class QuantizedDigits(nn.Module):
    """``QuantStub -> DigitsCNN -> DeQuantStub``: the form eager-mode quantization needs."""

    def __init__(self, net: DigitsCNN) -> None:
        super().__init__()
        self.quant = QuantStub()
        self.net = net
        self.dequant = DeQuantStub()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dequant(self.net(self.quant(x)))


def train(model: DigitsCNN, data: DigitsSplit, epochs: int = 20, batch_size: int = 16, seed: int = 0) -> DigitsCNN:
    """Train with Adam (learning rate 0.01, halved every 4 epochs) on the training split; returns it in eval mode.

    ``seed`` fixes the order of the batches; the initial weights are the model's own.
    """
    torch.manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(data.train_y))
        for start in range(0, len(order), batch_size):
            batch = order[start:start + batch_size]
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(data.train_x[batch]), data.train_y[batch])
            loss.backward()
            optimizer.step()
        schedule.step()
    return model.eval()


def trained_model(data: DigitsSplit, seed: int = 0) -> DigitsCNN:
    """A DigitsCNN initialised under ``seed`` and trained on ``data`` (about 4 s on one core)."""
    torch.manual_seed(seed)
    return train(DigitsCNN(), data, seed=seed)


def calibration_batches(data: DigitsSplit, batches: int = 4, batch_size: int = 128) -> list[torch.Tensor]:
    """The first training images, in batches, for the observers."""
    return [data.train_x[i * batch_size:(i + 1) * batch_size] for i in range(batches)]


def quantize_eager(model: DigitsCNN, data: DigitsSplit, engine: str = "fbgemm") -> QuantizedDigits:
    """Eager-mode post-training quantization of a copy: fuse conv+ReLU, ``engine``'s default qconfig, calibrate, convert."""
    torch.backends.quantized.engine = engine
    wrapped = QuantizedDigits(copy.deepcopy(model)).eval()
    torch.ao.quantization.fuse_modules(wrapped, FUSE_PAIRS, inplace=True)
    wrapped.qconfig = torch.ao.quantization.get_default_qconfig(engine)
    torch.ao.quantization.prepare(wrapped, inplace=True)
    with torch.no_grad():
        for x in calibration_batches(data):
            wrapped(x)
    return torch.ao.quantization.convert(wrapped, inplace=True)


def quantize_fx(model: DigitsCNN, data: DigitsSplit, engine: str = "fbgemm") -> torch.fx.GraphModule:
    """FX graph-mode post-training quantization of a copy (``prepare_fx`` / ``convert_fx``, ``engine``'s qconfig mapping)."""
    from torch.ao.quantization import get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

    torch.backends.quantized.engine = engine
    example = (data.train_x[:1],)
    prepared = prepare_fx(copy.deepcopy(model).eval(), get_default_qconfig_mapping(engine), example)
    with torch.no_grad():
        for x in calibration_batches(data):
            prepared(x)
    return convert_fx(prepared)


def accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    """Fraction of samples whose largest logit is the label."""
    return float((torch.as_tensor(logits).argmax(1) == labels).float().mean())

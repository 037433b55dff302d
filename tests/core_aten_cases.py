"""Every op of PyTorch's Core ATen opset (the ops tagged ``torch.Tag.core``), with what qnnpy does with it: a
sample call for each op it converts (and for the other aten ops it converts as they are), or why it does not (tests/test_core_aten_ops.py runs the samples;
scripts/core_aten_table.py writes docs/core_aten_ops.md from this table and that run).

A sample is one call of the op on example values: its tensor arguments are graph inputs (``constant``: indices
of those given as constants of the model instead, the way parameters and buffers reach an op). ``sample_graph``
builds the PT2E-style graph of a sample: the op's output, and a quantize -> dequantize of one more input, so
that the graph is a quantized model (the op itself computes on its exact inputs, in float or on integers).
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  registers the quantized_decomposed ops
import torch.fx

_aten = torch.ops.aten
_qd = torch.ops.quantized_decomposed


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def f(*shape: int, lo: float = -2.0, hi: float = 2.0, seed: int = 0) -> torch.Tensor:
    """A float32 tensor uniform in [lo, hi)."""
    return torch.rand(shape, generator=_generator(seed)) * (hi - lo) + lo


def i64(*shape: int, lo: int = -5, hi: int = 6, seed: int = 0) -> torch.Tensor:
    return torch.randint(lo, hi, shape, generator=_generator(seed))


def b(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.rand(shape, generator=_generator(seed)) > 0.5


@dataclass
class Sample:
    """One call of an aten op overload: ``op(*args, **kwargs)``; ``part`` takes one output of an op with several."""

    op: Any
    args: tuple
    kwargs: dict = field(default_factory=dict)
    constant: tuple[int, ...] = ()
    part: int | None = None
    values_undefined: bool = False  # empty and empty_strided: only the shape and dtype are defined

    @property
    def name(self) -> str:
        return str(self.op).removeprefix("aten.")


# op -> samples: what the converters take.
SAMPLES: dict[Any, list[Sample]] = {}


def _add(op: Any, *args: Any, constant: tuple[int, ...] = (), part: int | None = None, values_undefined: bool = False,
         **kwargs: Any) -> None:
    SAMPLES.setdefault(op, []).append(Sample(op, args, kwargs, constant, part, values_undefined))


# --- element-wise, one input -------------------------------------------------------
for _name in ("abs", "neg", "sign", "exp", "expm1", "sin", "cos", "tan", "atan", "tanh", "sinh", "cosh", "asinh",
              "erf", "sigmoid", "relu", "ceil", "floor", "round", "trunc", "isnan", "isinf", "logical_not"):
    _add(getattr(_aten, _name).default, f(2, 3, 4, lo=-3, hi=3))
for _name in ("log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal"):
    _add(getattr(_aten, _name).default, f(2, 3, 4, lo=0.1, hi=4))
for _name in ("asin", "acos", "atanh"):
    _add(getattr(_aten, _name).default, f(2, 3, 4, lo=-0.9, hi=0.9))
_add(_aten.acosh.default, f(2, 3, 4, lo=1.1, hi=4))
for _name in ("abs", "neg", "sign", "relu"):
    _add(getattr(_aten, _name).default, i64(3, 5))
_add(_aten.bitwise_not.default, i64(3, 5))
_add(_aten.bitwise_not.default, b(3, 5))
_add(_aten.logical_not.default, i64(3, 5))
_add(_aten.gelu.default, f(2, 8, lo=-4, hi=4))
_add(_aten.gelu.default, f(2, 8, lo=-4, hi=4), approximate="tanh")
_add(_aten.elu.default, f(2, 8, lo=-4, hi=4), 1.3, 1.0, 1.0)
_add(_aten.leaky_relu.default, f(2, 8, lo=-4, hi=4), 0.2)
_add(_aten.hardtanh.default, f(2, 8, lo=-4, hi=4), -1.0, 2.0)
_add(_aten.clamp.default, f(2, 8, lo=-4, hi=4), -1.5, 2.5)
_add(_aten.clamp.default, i64(2, 8), None, 2)
_add(_aten.clamp.Tensor, f(2, 8, lo=-4, hi=4), f(8, lo=-2, hi=0, seed=1), f(2, 1, lo=0, hi=2, seed=2))
_add(_aten._to_copy.default, f(2, 8, lo=-40, hi=40), dtype=torch.int64)
_add(_aten._to_copy.default, i64(2, 8), dtype=torch.float32)
_add(_aten._to_copy.default, f(2, 8), dtype=torch.bool)
_add(_aten.clone.default, f(2, 3))
_add(_aten.alias.default, f(2, 3))
_add(_aten.copy.default, f(2, 3), i64(3, seed=1))

# --- element-wise, two inputs --------------------------------------------------------
for _name in ("add", "sub", "mul"):
    _add(getattr(_aten, _name).Tensor, f(2, 3, 4), f(3, 1, seed=1))
    _add(getattr(_aten, _name).Tensor, i64(2, 3), i64(3, seed=1))
    _add(getattr(_aten, _name).Scalar, f(2, 3, 4), 0.75)
_add(_aten.add.Tensor, f(2, 3), f(2, 3, seed=1), alpha=2.5)
_add(_aten.add.Tensor, f(2, 3), i64(2, 3, seed=1))
_add(_aten.add.Tensor, f(4, 3), f(3, seed=1), constant=(1,))
_add(_aten.sub.Tensor, f(2, 3), f(2, 3, seed=1), alpha=0.5)
_add(_aten.div.Tensor, f(2, 3, 4), f(4, lo=0.5, hi=3, seed=1))
_add(_aten.div.Tensor, i64(2, 5), i64(5, lo=1, hi=4, seed=1))
_add(_aten.div.Scalar, f(2, 3, 4), 3.0)
_add(_aten.div.Tensor_mode, f(2, 8, lo=-9, hi=9), f(8, lo=0.5, hi=3, seed=1), rounding_mode="floor")
_add(_aten.div.Tensor_mode, f(2, 8, lo=-9, hi=9), f(8, lo=-3, hi=-0.5, seed=1), rounding_mode="trunc")
_add(_aten.div.Tensor_mode, i64(2, 8, lo=-9, hi=9), i64(8, lo=1, hi=4, seed=1), rounding_mode="floor")
_add(_aten.div.Scalar_mode, f(2, 8, lo=-9, hi=9), 2.5, rounding_mode="floor")
_add(_aten.pow.Tensor_Tensor, f(2, 8, lo=0.1, hi=3), f(8, lo=-2, hi=2, seed=1))
_add(_aten.pow.Tensor_Scalar, f(2, 8, lo=-3, hi=3), 2)
_add(_aten.pow.Tensor_Scalar, f(2, 8, lo=0.1, hi=3), 0.5)
_add(_aten.pow.Scalar, 2.0, f(2, 8, lo=-2, hi=2))
_add(_aten.pow.Tensor_Scalar, i64(2, 8, lo=-3, hi=4), 3)
for _name in ("maximum", "minimum", "atan2"):
    _add(getattr(_aten, _name).default, f(2, 8), f(8, seed=1))
_add(_aten.maximum.default, i64(2, 8), i64(2, 8, seed=1))
for _name in ("fmod", "remainder"):
    _add(getattr(_aten, _name).Tensor, f(2, 8, lo=-9, hi=9), f(8, lo=0.5, hi=3, seed=1))
    _add(getattr(_aten, _name).Scalar, f(2, 8, lo=-9, hi=9), -2.5)
    _add(getattr(_aten, _name).Tensor, i64(2, 8, lo=-9, hi=9), i64(8, lo=1, hi=4, seed=1))
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    _add(getattr(_aten, _name).Tensor, f(3, 4).round(), f(4, seed=1).round())
    _add(getattr(_aten, _name).Scalar, i64(3, 4), 1)
for _name in ("logical_and", "logical_or", "logical_xor"):
    _add(getattr(_aten, _name).default, b(3, 4), b(3, 4, seed=1))
    _add(getattr(_aten, _name).default, f(3, 4).round(), i64(4, seed=1))
for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    _add(getattr(_aten, _name).Tensor, i64(3, 4, lo=0, hi=64), i64(4, lo=0, hi=64, seed=1))
    _add(getattr(_aten, _name).Tensor, b(3, 4), b(3, 4, seed=1))
    _add(getattr(_aten, _name).Scalar, i64(3, 4, lo=0, hi=64), 12)
_add(_aten.where.self, b(3, 4), f(3, 4), f(4, seed=1))
_add(_aten.where.self, b(3, 4), i64(3, 4), i64(1, seed=1))
_add(_aten.where.self, b(1, 4), f(3, 4), f(3, 1, seed=1), constant=(0,))

# --- reductions ----------------------------------------------------------------------
_add(_aten.sum.dim_IntList, f(2, 3, 4), [1, 2])
_add(_aten.sum.dim_IntList, f(2, 3, 4), [-1], True)
_add(_aten.sum.dim_IntList, b(2, 3, 4), None)
_add(_aten.sum.dim_IntList, i64(2, 3, 4), [0])
_add(_aten.mean.dim, f(2, 3, 4), [0, 2], True)
_add(_aten.mean.default, f(2, 3, 4))
_add(_aten.amax.default, f(2, 3, 4), [1])
_add(_aten.amin.default, i64(2, 3, 4), [0, 2], True)
_add(_aten.prod.default, f(2, 3, lo=0.5, hi=1.5))
_add(_aten.prod.dim_int, i64(2, 3, 4, lo=-2, hi=3), 1, True)
_add(_aten.var.correction, f(2, 3, 8), [2], correction=1, keepdim=True)
_add(_aten.var.correction, f(2, 3, 8), None, correction=0)
_add(_aten.var.dim, f(2, 3, 8), [1, 2], False)
_add(_aten.any.default, b(2, 3))
_add(_aten.any.dim, f(2, 3).round(), 1)
_add(_aten.any.dims, i64(2, 3, 4, lo=0, hi=2), [0, 2], True)
_add(_aten.argmax.default, f(2, 3, 8), 2)
_add(_aten.argmax.default, f(2, 3, 8))
_add(_aten.argmin.default, i64(2, 3, 8), 1, True)
_add(_aten.max.dim, f(2, 3, 8), 2, part=0)
_add(_aten.max.dim, f(2, 3, 8), 2, part=1)
_add(_aten.min.dim, f(2, 3, 8), 1, True, part=0)
_add(_aten.min.dim, f(2, 3, 8), 1, True, part=1)
_add(_aten.cumsum.default, f(2, 3, 8), 2)
_add(_aten.cumsum.default, b(2, 3, 8), 1)
_add(_aten._softmax.default, f(2, 3, 8, lo=-5, hi=5), 1, False)
_add(_aten._log_softmax.default, f(2, 3, 8, lo=-5, hi=5), -1, False)

# --- data movement -------------------------------------------------------------------
_add(_aten.view.default, f(2, 3, 4), [6, 4])
_add(_aten.view.default, b(2, 3, 4), [2, 12])
_add(_aten.permute.default, f(2, 3, 4), [2, 0, 1])
_add(_aten.permute.default, i64(2, 3, 4), [1, 2, 0])
_add(_aten.squeeze.dim, f(2, 1, 4), 1)
_add(_aten.squeeze.dims, f(1, 3, 1, 4), [0, 2])
_add(_aten.unsqueeze.default, f(2, 3), 1)
_add(_aten.expand.default, f(3, 1), [2, 3, 4])
_add(_aten.expand.default, b(1, 4), [3, 4])
_add(_aten.slice.Tensor, f(2, 9, 4), 1, 1, 8, 3)
_add(_aten.slice.Tensor, f(2, 9, 4), -1, -3, None)
_add(_aten.slice.Tensor, i64(6, 4), 0, 2, 100)
_add(_aten.select.int, f(2, 5, 4), 1, -2)
_add(_aten.cat.default, [f(2, 3), f(2, 5, seed=1)], 1)
_add(_aten.cat.default, [f(2, 3), i64(4, 3, seed=1)], 0)
_add(_aten.cat.default, [f(2, 3), f(1, 3, seed=1)], 0, constant=(1,))
_add(_aten.split_with_sizes.default, f(2, 9), [2, 3, 4], 1, part=1)
_add(_aten.flip.default, f(2, 3, 4), [0, 2])
_add(_aten.constant_pad_nd.default, f(1, 2, 3, 4), [1, 2, 0, 3], 0.5)
_add(_aten.constant_pad_nd.default, i64(3, 4), [2, 1], 7)
_add(_aten.reflection_pad1d.default, f(1, 2, 6), [2, 3])
_add(_aten.reflection_pad2d.default, f(1, 2, 5, 6), [1, 2, 3, 1])
_add(_aten.reflection_pad3d.default, f(1, 1, 3, 4, 5), [1, 1, 2, 0, 1, 2])
_add(_aten.replication_pad2d.default, f(1, 2, 5, 6), [2, 0, 1, 3])
_add(_aten.replication_pad3d.default, f(1, 1, 3, 4, 5), [1, 2, 0, 1, 2, 1])
_add(_aten.repeat.default, f(2, 3), [2, 1, 3])
_add(_aten.index_select.default, f(4, 5, 3), 1, i64(6, lo=0, hi=5, seed=1))
_add(_aten.gather.default, f(3, 5), 1, i64(3, 4, lo=0, hi=5, seed=1))
_add(_aten.index.Tensor, f(4, 5, 3), [None, i64(2, 3, lo=-5, hi=5, seed=1)])
_add(_aten.index.Tensor, f(4, 5, 3), [i64(6, lo=0, hi=4, seed=1), i64(6, lo=0, hi=5, seed=2)])
_add(_aten.index.Tensor, f(10, 3), [i64(2, 4, lo=0, hi=10, seed=1)], constant=(1,))
_add(_aten.embedding.default, f(10, 4), i64(2, 3, lo=0, hi=10, seed=1), constant=(0,))

# --- layers --------------------------------------------------------------------------
_add(_aten.mm.default, f(3, 4), f(4, 5, seed=1))
_add(_aten.bmm.default, f(2, 3, 4), f(2, 4, 5, seed=1))
_add(_aten.addmm.default, f(5), f(3, 4, seed=1), f(4, 5, seed=2))
_add(_aten.addmm.default, f(3, 5), f(3, 4, seed=1), f(4, 5, seed=2), beta=0.5, alpha=2.0)
_add(_aten.convolution.default, f(1, 4, 7, 7), f(6, 2, 3, 3, seed=1), f(6, seed=2), [2, 1], [1, 0], [1, 2], False,
     [0, 0], 2, constant=(1, 2))
_add(_aten.convolution.default, f(1, 3, 9), f(4, 3, 3, seed=1), None, [2], [1], [1], False, [0], 1, constant=(1,))
_add(_aten.native_layer_norm.default, f(2, 3, 8), [8], f(8, seed=1), f(8, seed=2), 1e-5, constant=(1, 2), part=0)
_add(_aten.native_layer_norm.default, f(2, 3, 8), [3, 8], None, None, 1e-5, part=0)
_add(_aten._native_batch_norm_legit_no_training.default, f(2, 3, 4, 4), f(3, seed=1), f(3, seed=2),
     f(3, seed=3), f(3, lo=0.5, hi=2, seed=4), 0.1, 1e-5, constant=(1, 2, 3, 4), part=0)
_add(_aten.native_group_norm.default, f(2, 6, 4, 4), f(6, seed=1), f(6, seed=2), 2, 6, 16, 3, 1e-5,
     constant=(1, 2), part=0)
# Statistics of the input: instance norm's decomposition (its batch folded into the channels), and running ones.
_add(_aten._native_batch_norm_legit.no_stats, f(1, 6, 4, 4), f(6, seed=1), f(6, seed=2), True, 0.1, 1e-5,
     constant=(1, 2), part=0)
_add(_aten._native_batch_norm_legit.default, f(2, 3, 4, 4), f(3, seed=1), f(3, seed=2), f(3, seed=3),
     f(3, lo=0.5, hi=2, seed=4), False, 0.1, 1e-5, constant=(1, 2, 3, 4), part=0)
_add(_aten.instance_norm.default, f(2, 3, 5, 5), f(3, seed=1), f(3, seed=2), None, None, True, 0.1, 1e-5, False,
     constant=(1, 2))
# Sampling points past the borders (|grid| up to 1.4) under every padding mode, bilinear and nearest, both corner
# conventions; the grid an input (RAFT's flow) or a constant.
for _mode, _padding, _align in ((0, 0, False), (0, 1, True), (0, 2, False), (0, 2, True), (1, 0, True), (1, 2, False)):
    _add(_aten.grid_sampler_2d.default, f(2, 3, 6, 7), f(2, 5, 4, 2, lo=-1.4, hi=1.4, seed=_mode + 2 * _padding),
         _mode, _padding, _align)
_add(_aten.grid_sampler_2d.default, f(1, 2, 5, 5), f(1, 3, 3, 2, lo=-1, hi=1, seed=9), 0, 0, False, constant=(1,))
_add(_aten.grid_sampler.default, f(1, 2, 5, 5), f(1, 3, 3, 2, lo=-1.2, hi=1.2, seed=10), 1, 1, False)
_add(_aten.max_pool2d_with_indices.default, f(1, 2, 7, 7), [3, 3], [2, 2], [1, 1], [1, 1], True, part=0)
_add(_aten.max_pool2d_with_indices.default, f(1, 2, 9, 9), [2, 2], [1, 1], [0, 0], [2, 2], False, part=0)
_add(_aten.avg_pool2d.default, f(1, 2, 7, 7), [3, 3], [2, 2], [1, 1], True, False)
_add(_aten.avg_pool2d.default, f(1, 2, 7, 7), [2, 3], [2, 1], [1, 0], False, True, 4)
_add(_aten._adaptive_avg_pool2d.default, f(1, 2, 7, 9), [3, 4])
_add(_aten.avg_pool1d.default, f(1, 2, 9), [3], [2], [1], True, False)
_add(_aten.adaptive_avg_pool1d.default, f(1, 2, 9), [4])
_add(_aten.upsample_nearest2d.vec, f(1, 2, 3, 5), [7, 9], None)
_add(_aten.upsample_nearest2d.vec, f(1, 2, 3, 5), None, [2.0, 1.5])
_add(_aten.upsample_bilinear2d.vec, f(1, 2, 3, 5), [7, 9], False, None)
_add(_aten.upsample_bilinear2d.vec, f(1, 2, 3, 5), [7, 9], True, None)
_add(_aten.upsample_bilinear2d.vec, f(1, 2, 3, 5), None, False, [2.0, 1.5])

# --- scatters and orderings -------------------------------------------------------------
_add(_aten.scatter.src, f(3, 5), 1, i64(3, 2, lo=0, hi=5, seed=1), f(3, 4, seed=2))
_add(_aten.scatter.value, i64(3, 5), 0, i64(2, 5, lo=0, hi=3, seed=1), 7)
_add(_aten.scatter_add.default, f(4, 3), 0, i64(6, 3, lo=0, hi=4, seed=1), f(6, 3, seed=2))
_add(_aten.scatter_reduce.two, f(4, 3), 0, i64(6, 3, lo=0, hi=4, seed=1), f(6, 3, seed=2), "amax", include_self=False)
_add(_aten.scatter_reduce.two, f(4, 3), 0, i64(6, 3, lo=0, hi=4, seed=1), f(6, 3, seed=2), "mean")
_add(_aten.scatter_reduce.two, i64(4, 3), 1, i64(4, 5, lo=0, hi=3, seed=1), i64(4, 5, seed=2), "prod", include_self=False)
_add(_aten.index_put.default, f(4, 5, 3), [None, i64(2, 2, lo=-5, hi=5, seed=1)], f(2, 1, 3, seed=2))
_add(_aten.index_put.default, f(4, 5, 3), [i64(3, lo=0, hi=4, seed=1), i64(3, lo=0, hi=5, seed=2)], f(3, 3, seed=3),
     True)
_add(_aten.index_put.default, f(4, 5), [b(4, 5, seed=1)], f(1, seed=2))
_add(_aten.slice_scatter.default, f(3, 8, 2), f(3, 3, 2, seed=1), 1, 1, 8, 3)
_add(_aten.select_scatter.default, i64(3, 4), i64(4, seed=1), 0, -1)
_add(_aten.sort.default, f(2, 3, 6), -1, True, part=0)
_add(_aten.sort.default, i64(2, 7, lo=0, hi=4), 1, False, part=1)
_add(_aten.sort.stable, f(5, 3), stable=True, dim=0, part=1)
_add(_aten.topk.default, f(2, 9), 3, 1, True, True, part=0)
_add(_aten.topk.default, f(2, 9, 2), 4, 1, False, True, part=1)

# --- ops outside the Core ATen opset that exported graphs hold and qnnpy converts as they are ---
_add(_aten.silu.default, f(2, 8, lo=-5, hi=5))
_add(_aten.hardsigmoid.default, f(2, 8, lo=-5, hi=5))
_add(_aten.hardswish.default, f(2, 8, lo=-5, hi=5))
_add(_aten.round.decimals, f(2, 8), decimals=0)
_add(_aten.sum.default, f(2, 3, 4))
_add(_aten.var.default, f(2, 3, 4), False)
_add(_aten.var_mean.correction, f(2, 3, 8), [2], correction=1, keepdim=True, part=0)
_add(_aten.var_mean.correction, f(2, 3, 8), [2], correction=1, keepdim=True, part=1)
_add(_aten.var_mean.dim, f(2, 3, 8), [1, 2], False, part=0)
_add(_aten.var_mean.dim, f(2, 3, 8), [1, 2], False, part=1)
_add(_aten.softmax.int, f(2, 3, 8, lo=-5, hi=5), -1)
_add(_aten.reshape.default, f(2, 3, 4), [4, -1])
_add(_aten._unsafe_view.default, f(2, 3, 4), [6, 4])
_add(_aten.flatten.using_ints, f(2, 3, 4, 5), 1, 2)
_add(_aten.unflatten.int, f(2, 12), 1, [3, 4])
_add(_aten.squeeze.default, f(1, 3, 1, 4))
_add(_aten.transpose.int, f(2, 3, 4), 0, 2)
_add(_aten.t.default, f(3, 4))
_add(_aten.contiguous.default, f(2, 3))
_add(_aten.detach.default, f(2, 3))
_add(_aten.lift_fresh_copy.default, f(2, 3))
_add(_aten.dropout.default, f(2, 3), 0.1, False)
_add(_aten.feature_dropout.default, f(2, 3, 4), 0.2, False)
_add(_aten.pad.default, f(1, 2, 5, 6), [1, 2, 2, 1], "reflect")
_add(_aten.pad.default, f(1, 2, 5, 6), [2, 1, 3, 3], "circular")
_add(_aten.pad.default, f(1, 2, 5), [1, 2], "constant", -1.0)
_add(_aten.replication_pad1d.default, f(1, 2, 6), [2, 3])
_add(_aten.linear.default, f(2, 3, 8), f(5, 8, seed=1), f(5, seed=2), constant=(1, 2))
_add(_aten.linear.default, f(2, 8), f(5, 8, seed=1))
_add(_aten.matmul.default, f(2, 1, 3, 4), f(2, 4, 5, seed=1))
_add(_aten.matmul.default, f(3, 4), f(4, seed=1))
_add(_aten.matmul.default, f(4), f(2, 4, 5, seed=1))
_add(_aten.scaled_dot_product_attention.default, f(1, 2, 3, 8), f(1, 2, 5, 8, seed=1), f(1, 2, 5, 4, seed=2))
_add(_aten.scaled_dot_product_attention.default, f(2, 4, 3, 8), f(2, 2, 5, 8, seed=1), f(2, 2, 5, 8, seed=2),
     b(1, 1, 3, 5, seed=3), scale=0.5, enable_gqa=True)
_add(_aten.scaled_dot_product_attention.default, f(1, 2, 4, 8), f(1, 2, 4, 8, seed=1), f(1, 2, 4, 8, seed=2),
     f(1, 1, 1, 4, seed=3), is_causal=False)
_add(_aten.scaled_dot_product_attention.default, f(1, 2, 4, 8), f(1, 2, 6, 8, seed=1), f(1, 2, 6, 8, seed=2),
     is_causal=True)
_add(_aten.conv2d.default, f(1, 3, 7, 7), f(4, 3, 3, 3, seed=1), f(4, seed=2), [1, 2], [1, 1], constant=(1, 2))
_add(_aten.conv3d.default, f(2, 4, 5, 6, 7), f(6, 2, 3, 3, 2, seed=1), f(6, seed=2), [2, 1, 2], [1, 1, 0], [1, 2, 1], 2,
     constant=(1, 2))
_add(_aten._convolution.default, f(1, 3, 4, 5, 5), f(4, 3, 1, 3, 3, seed=1), None, [1, 1, 1], [0, 1, 1], [1, 1, 1], False,
     [0, 0, 0], 1, False, False, True, True, constant=(1,))
_add(_aten.conv1d.default, f(1, 4, 9), f(6, 2, 3, seed=1), None, [1], [2], [1], 2, constant=(1,))
_add(_aten._convolution.default, f(1, 3, 6, 6), f(4, 3, 3, 3, seed=1), f(4, seed=2), [1, 1], [1, 1], [1, 1], False,
     [0, 0], 1, False, False, True, True, constant=(1, 2))
_add(_aten.layer_norm.default, f(2, 3, 8), [8], f(8, seed=1), None, 1e-5, constant=(1,))
_add(_aten.batch_norm.default, f(2, 3, 5), f(3, seed=1), None, f(3, seed=3), f(3, lo=0.5, hi=2, seed=4), False,
     0.1, 1e-3, False, constant=(1, 2, 3))
_add(_aten.native_batch_norm.default, f(2, 3, 4, 4), None, f(3, seed=2), f(3, seed=3), f(3, lo=0.5, hi=2, seed=4),
     False, 0.1, 1e-5, constant=(1, 2, 3), part=0)
_add(_aten.group_norm.default, f(2, 6, 5), 3, f(6, seed=1), f(6, seed=2), 1e-5, constant=(1, 2))
_add(_aten.max_pool2d.default, f(1, 2, 7, 7), [3, 3], [2, 2], [1, 1], [1, 1], False)
_add(_aten.adaptive_avg_pool2d.default, f(1, 2, 7, 9), [2, 3])
_add(_aten.upsample_nearest2d.default, f(1, 2, 3, 5), [6, 10], 2.0, 2.0)
_add(_aten.upsample_bilinear2d.default, f(1, 2, 3, 5), [7, 9], False)
_add(_aten.max_pool3d_with_indices.default, f(1, 2, 5, 7, 6), [2, 3, 3], [2, 2, 1], [1, 1, 0], [1, 1, 2], True, part=0)
_add(_aten.max_pool3d_with_indices.default, f(2, 3, 4, 4, 4), [2, 2, 2], [], part=0)
_add(_aten.avg_pool3d.default, f(1, 2, 5, 7, 6), [3, 3, 2], [2, 2, 2], [1, 1, 1], True, False)
_add(_aten.avg_pool3d.default, f(1, 2, 5, 7, 6), [3, 2, 2], [2, 2, 1], [1, 0, 1], False, True, 5)
_add(_aten._adaptive_avg_pool3d.default, f(1, 2, 5, 7, 9), [2, 3, 4])
_add(_aten.adaptive_avg_pool3d.default, f(1, 2, 5, 7, 9), [1, 3, 2])
_add(_aten.upsample_trilinear3d.vec, f(1, 2, 3, 4, 5), [5, 7, 6], False, None)
_add(_aten.upsample_trilinear3d.vec, f(1, 2, 3, 4, 5), None, True, [2.0, 1.5, 0.8])
_add(_aten.upsample_trilinear3d.default, f(1, 2, 3, 4, 5), [6, 4, 9], False, 2.0, 1.0, 1.8)
_add(_aten.diagonal.default, f(3, 4, 5))
_add(_aten.diagonal.default, f(3, 4, 5), 2, 0, 2)
_add(_aten.diagonal.default, f(3, 4, 5), -1, 2, 1)
_add(_aten.masked_scatter.default, f(2, 3, 4), b(3, 4, seed=1), f(30, seed=2))
_add(_aten._cdist_forward.default, f(2, 5, 3), f(2, 4, 3, seed=1), 2.0, None)
_add(_aten._cdist_forward.default, f(30, 4), f(7, 4, seed=1), 2.0, None)
_add(_aten._cdist_forward.default, f(5, 3), f(4, 3, seed=1), 1.0, None)
_add(_aten._cdist_forward.default, f(5, 3), f(4, 3, seed=1), 3.0, None)
_add(_aten._cdist_forward.default, f(5, 3), f(4, 3, seed=1), float("inf"), None)
_add(_aten._cdist_forward.default, i64(5, 3).float(), i64(4, 3, seed=1).float(), 0.0, None)
_add(_aten._pdist_forward.default, f(6, 4), 2.0)
_add(_aten._pdist_forward.default, f(6, 4), 1.5)
_add(_aten._embedding_bag.default, f(10, 4), torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 2, 2, 5]), constant=(0,),
     part=0)
_add(_aten._embedding_bag.default, f(10, 4), torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 3, 3, 8]), False, 1,
     False, None, True, 4, constant=(0,), part=0)
_add(_aten._embedding_bag.default, f(10, 4), torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 2, 2, 5]), False, 2,
     constant=(0,), part=0)
_add(_aten._embedding_bag.default, f(10, 4), torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 5]), False, 0,
     False, f(8, seed=3), constant=(0,), part=0)
_add(_aten.col2im.default, f(2, 3 * 4, 12), [4, 5], [2, 2], [1, 1], [0, 0], [1, 1])
_add(_aten.col2im.default, f(1, 2 * 6, 16), [7, 8], [2, 3], [2, 1], [1, 2], [2, 3])

# --- values computed from constants alone (folded into constants of the module) --------
_add(_aten.arange.start_step, 2, 14, 3)
_add(_aten.full.default, [2, 3], 1.5)
_add(_aten.scalar_tensor.default, 2.5)
_add(_aten.full_like.default, f(2, 3), 7.0)
_add(_aten.fill.Scalar, f(2, 3), 3.0)
_add(_aten.empty.memory_format, [2, 3], values_undefined=True)
_add(_aten.empty_strided.default, [2, 3], [3, 1], values_undefined=True)

# Core ATen ops qnnpy does not convert, and why: op name (without "aten.") -> reason.
_TRAINING = "training only (backward or batch statistics)"
_RANDOM = "random sampling: its value changes from run to run"
_SYMBOLIC = "reads a symbolic size or stride; qnnpy's modules have static shapes, fixed by the example inputs"
NOT_CONVERTED: dict[str, str] = {
    **{name: _TRAINING for name in (
        "_adaptive_avg_pool2d_backward.default", "avg_pool2d_backward.default", "convolution_backward.default",
        "embedding_dense_backward.default", "max_pool2d_with_indices_backward.default",
        "native_group_norm_backward.default", "native_layer_norm_backward.default")},
    **{name: _RANDOM for name in ("rand.default", "randn.default", "randperm.default", "native_dropout.default")},
    **{name: _SYMBOLIC for name in ("sym_numel.default", "sym_size.int", "sym_storage_offset.default", "sym_stride.int",
                                    "sym_is_contiguous.default")},
    "resize_.default": "resizes a tensor's storage in place (functional graphs have none)",
    "_local_scalar_dense.default": "reads a tensor's value into Python (data-dependent control flow)",
    "nonzero.default": "its output's shape depends on the input values",
    "atan2.out": "an out= variant (functional graphs have none; atan2.default converts)",
    "as_strided.default": "a view over raw strides of the storage: qnnpy's tensors have no storage layout to view",
    "_fft_r2c.default": "complex values (qnnpy's tensors are real)",
    "_fft_c2r.default": "complex values (qnnpy's tensors are real)",
}


def core_ops() -> list[Any]:
    """Every op overload of aten tagged ``core`` (of all ops the dispatcher holds, not only those Python touched
    so far), by name."""
    found = set()
    for qualified in torch._C._dispatch_get_all_op_names():
        if not qualified.startswith("aten::"):
            continue
        name, _, overload = qualified.removeprefix("aten::").partition(".")
        op = getattr(getattr(_aten, name, None), overload or "default", None)
        if op is not None and torch.Tag.core in op.tags:
            found.add(op)
    return sorted(found, key=str)


def op_by_name(name: str) -> Any:
    """The aten op overload named ``name`` ("add.Tensor")."""
    packet, _, overload = name.partition(".")
    return getattr(getattr(_aten, packet), overload)


def all_samples() -> list[Sample]:
    return [s for samples in SAMPLES.values() for s in samples]


def _tensor_slots(args: Any) -> list[tuple[tuple[int, ...], torch.Tensor]]:
    """(position path, tensor) of every tensor in the arguments, lists included."""
    slots = []
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            slots.append(((i,), a))
        elif isinstance(a, (list, tuple)):
            slots += [((i, j), t) for j, t in enumerate(a) if isinstance(t, torch.Tensor)]
    return slots


def add_sample(graph: torch.fx.Graph, holder: torch.nn.Module, sample: Sample, prefix: str) -> tuple[torch.fx.Node, list[torch.Tensor]]:
    """Add the sample's call to ``graph``; returns its output node and the example values of the inputs it added."""
    args = [list(a) if isinstance(a, (list, tuple)) else a for a in sample.args]
    examples = []
    for k, (path, tensor) in enumerate(_tensor_slots(sample.args)):
        if k in sample.constant:
            setattr(holder, f"{prefix}_c{k}", tensor)
            node = graph.get_attr(f"{prefix}_c{k}")
        else:
            node = graph.placeholder(f"{prefix}_x{k}")
            examples.append(tensor)
        if len(path) == 1:
            args[path[0]] = node
        else:
            args[path[0]][path[1]] = node
    out = graph.call_function(sample.op, tuple(args), dict(sample.kwargs))
    if sample.part is not None:
        out = graph.call_function(operator.getitem, (out, sample.part))
    return out, examples


def sample_graph(samples: list[Sample]) -> tuple[torch.fx.GraphModule, tuple[torch.Tensor, ...]]:
    """A graph of the samples' calls, their outputs first, then a dequantize of a quantized extra input (which makes
    the graph a PT2E-style quantized model); and its example inputs."""
    graph, holder = torch.fx.Graph(), torch.nn.Module()
    examples: list[torch.Tensor] = []
    outputs = []
    for i, sample in enumerate(samples):
        out, inputs = add_sample(graph, holder, sample, f"s{i}")
        outputs.append(out)
        examples += inputs
    marker = graph.placeholder("marker")
    q = graph.call_function(_qd.quantize_per_tensor.default, (marker, 0.05, 128, 0, 255, torch.uint8))
    outputs.append(graph.call_function(_qd.dequantize_per_tensor.default, (q, 0.05, 128, 0, 255, torch.uint8)))
    graph.output(tuple(outputs))
    return torch.fx.GraphModule(holder, graph), (*examples, f(4, seed=9))

"""Agreement between a PyTorch model and its converted module: per layer in the integer runtime
(:func:`compare`), and of the final output when TVM runs the module (:func:`compare_tvm`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import math

import numpy as np
import torch

from qnnpy import _core
from qnnpy.capture.pt2e_capture import is_pt2e_graph
from qnnpy.convert.converter import capture, from_torch
from qnnpy.convert.symbolic_dim import DynamicDim, resized
from qnnpy.module import QDQModule
from qnnpy.profiles import current_engine, default_profile, shown_profiles
from qnnpy.quantized_types import is_tensor


PT2E_REFERENCE = "PT2E reference"


def reference_name(model: torch.nn.Module) -> str:
    """What PyTorch runs ``model`` with, for a report: ``PT2E reference`` for a PT2E graph (float ops between
    quantize and dequantize, whatever the quantized engine), else the quantized engine in use."""
    return PT2E_REFERENCE if is_pt2e_graph(model) else current_engine()


def reference_text(reference: str) -> str:
    """``reference`` (a :func:`reference_name`) in a sentence: "PyTorch's x86 engine", "PyTorch's PT2E
    reference (float ops between quantize and dequantize)"."""
    if reference == PT2E_REFERENCE:
        return "PyTorch's PT2E reference (float ops between quantize and dequantize)"
    return f"PyTorch's {reference} engine" if reference else "PyTorch"


@dataclass
class LayerAgreement:
    """How one quantized tensor of the runtime compares with PyTorch's, over all inputs."""

    name: str        # IR value name
    source: str      # module path / node in the PyTorch model
    op: str
    identical: int   # bit-identical elements
    total: int
    max_lsb: int     # largest |difference| in quantization steps (float layers: in float32 ulps)
    # Float layers: largest |difference| over the largest |PyTorch value| of the tensor (0 for quantized ones).
    max_relative: float = 0.0

    @property
    def fraction(self) -> float:
        return self.identical / self.total if self.total else 1.0


@dataclass
class ComparisonReport:
    """Agreement per profile: one row per compared tensor, in execution order.

    ``reference_inputs``: each layer computed from PyTorch's values of its inputs (its own
    arithmetic alone) rather than from the runtime's previous outputs (compounded agreement).
    ``engine``: what PyTorch ran: its quantized engine, or ``"PT2E reference"`` for a PT2E graph.
    ``float_outputs``: per profile, the model outputs that float ops compute (a PT2E model's float head),
    compared end to end; shown in the table with their largest difference relative to the output's range,
    and not counted by ``all_identical``, ``first_divergence`` or ``final`` (float32 summed in another order
    than PyTorch's is rarely bit-identical).
    """

    layers: dict[str, list[LayerAgreement]]
    inputs: int
    reference_inputs: bool = False
    engine: str = ""
    float_outputs: dict[str, list[LayerAgreement]] = field(default_factory=dict)

    def final(self, profile: str) -> LayerAgreement:
        """The last compared tensor (the model's quantized output; with reference_inputs, possibly a float op's)."""
        return self.layers[profile][-1]

    def all_identical(self, profile: str) -> bool:
        """Whether every compared tensor is bit-identical under ``profile``."""
        return all(r.identical == r.total for r in self.layers[profile])

    def first_divergence(self, profile: str) -> LayerAgreement | None:
        """The first tensor that differs under ``profile``, or None."""
        return next((r for r in self.layers[profile] if r.identical != r.total), None)

    def table(self, max_name: int = 32) -> str:
        """A text table, one row per layer and one column per profile: the percentage of values
        bit-identical to PyTorch's (two decimals, never rounded up to 100.00%), then in brackets the
        largest difference in quantization steps where there is one (for float ops compared with
        ``reference_inputs`` and float outputs: the largest difference relative to the tensor's largest
        value)."""
        profiles = list(self.layers)
        columns = {p: self.layers[p] + self.float_outputs.get(p, []) for p in profiles}
        rows = columns[profiles[0]]
        approximate = _approximate_float_ops()
        names = [_shortened(r.source, max_name) for r in rows]
        cells = [[_cell(columns[p][i], rows[i].op in approximate) for p in profiles] for i in range(len(rows))]
        name_width = max([len("layer"), *map(len, names)]) + 2
        op_width = max([len("op"), *(len(r.op) for r in rows)]) + 2
        widths = [max([len(p), *(len(c[j]) for c in cells)]) + 2 for j, p in enumerate(profiles)]
        fed = "; each layer fed PyTorch's inputs" if self.reference_inputs else ""
        relative = "; float ops: relative to the tensor's range" if any(r.op in approximate for r in rows) else ""
        lines = [f"{self.inputs} input(s){fed}; % of values bit-identical to {reference_text(self.engine)} "
                 f"[max difference in steps{relative}]",
                 f"{'layer':<{name_width}}{'op':<{op_width}}" + "".join(f"{p:>{w}}" for p, w in zip(profiles, widths))]
        for name, row, row_cells in zip(names, rows, cells):
            lines.append(f"{name:<{name_width}}{row.op:<{op_width}}"
                         + "".join(f"{c:>{w}}" for c, w in zip(row_cells, widths)))
        return "\n".join(lines)


def _shortened(text: str, width: int) -> str:
    """``text``, or its last ``width`` characters after "..." when longer (the end names the layer)."""
    return text if len(text) <= width else "..." + text[-(width - 3):]


def _cell(layer: LayerAgreement, approximate: bool) -> str:
    """``99.87% [1]``: identical values in percent, rounded down, and the largest difference when not 0."""
    percent = math.floor(layer.fraction * 10000) / 100
    text = f"{percent:.2f}%"
    if approximate:
        return f"{text} [{layer.max_relative:.0e}]"
    return text if layer.max_lsb == 0 else f"{text} [{layer.max_lsb}]"


def _ordered_float_bits(a: np.ndarray) -> np.ndarray:
    """float32 values as integers in the order of the floats, one apart per ulp (-0 and +0 both 0)."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.int32).astype(np.int64)
    return np.where(bits < 0, np.int64(-2**31) - bits, bits)


def _difference(ours: np.ndarray, theirs: torch.Tensor) -> np.ndarray:
    """|ours - theirs| in quantization steps; for a float tensor (a float op's output) in float32 ulps."""
    if not theirs.is_floating_point() and not theirs.is_quantized:  # int64 / bool values: exact or not
        return np.abs(ours.astype(np.int64) - theirs.detach().numpy().astype(np.int64))
    if not theirs.is_quantized:
        return np.abs(_ordered_float_bits(ours) - _ordered_float_bits(theirs.detach().numpy()))
    return np.abs(ours.astype(np.int64) - theirs.int_repr().numpy().astype(np.int64))


def _approximate_float_ops() -> set[str]:
    """Float ops whose output follows PyTorch's only to float rounding (not ``bit_exact_float_output``)."""
    return {op for op in _core.op_names()
            if _core.op_info(op)["kind"] == "float" and not _core.op_info(op)["bit_exact_float_output"]}


def _compared_ops(reference_inputs: bool) -> set[str]:
    """The ops whose outputs compare() checks: every op with integer output and the float ops whose output
    equals PyTorch's bit for bit (the op table's ``bit_exact_float_output``, compared in ulps); with
    ``reference_inputs`` also the other float ops (PT2E float islands, float32 summed in another order than
    PyTorch's), whose agreement is then their own and reported relative to the tensor's range. Never the
    float values of a dequantize."""
    ops = {op for op in _core.op_names() if _core.op_info(op)["kind"] not in ("dequantize", "float")
           or _core.op_info(op)["bit_exact_float_output"]}
    return ops | _approximate_float_ops() if reference_inputs else ops


def _reference_feed(module: QDQModule, values: dict[str, Any]) -> dict[str, np.ndarray]:
    """PyTorch's value of every IR value a PyTorch node computed, as the runtime holds it: the integers of a
    quantized tensor, float32 of a float one (values whose dtype or shape differ, e.g. a view qnnpy
    reshapes, are computed by the runtime)."""
    feed = {}
    for info in module.graph.values():
        node = module.torch_nodes.get(info["name"])
        theirs = values.get(node) if node is not None else None
        if not is_tensor(theirs):
            continue
        array = theirs.detach().int_repr().numpy() if theirs.is_quantized else theirs.detach().numpy()
        if str(array.dtype) == info["dtype"] and tuple(array.shape) == tuple(info["shape"]):
            feed[info["name"]] = np.asarray(array, order="C")
    return feed


def _arguments(x: torch.Tensor | Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """One input of the model as the tuple of its arguments."""
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _example_for(module: QDQModule, x: torch.Tensor | Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """``x`` as example inputs of the module's own shapes: a batch of another size (a dynamic-batch
    module) is cut or filled with copies of its first sample."""
    example = []
    for tensor, shape in zip(_arguments(x), module.input_shapes):
        shape = tuple(shape)
        if tuple(tensor.shape) != shape and tensor.dim() == len(shape) >= 1 and tuple(tensor.shape[1:]) == shape[1:]:
            tensor = tensor[:1].expand(shape[0], *shape[1:]).contiguous()
        example.append(tensor)
    return tuple(example)


def linked_module(model: torch.nn.Module, module: QDQModule, example: torch.Tensor | Sequence[torch.Tensor]) -> QDQModule:
    """``module`` linked to ``model``'s tensors (what :func:`compare` needs): ``model`` is converted again on
    ``example`` (one input of the model) and must give the same module, the same nodes and the same params;
    otherwise a ``ValueError`` says that ``module`` is not the conversion of ``model``."""
    symbolic = module.dynamic_dim
    if symbolic is None:
        fresh = from_torch(model, _example_for(module, example), dynamic_batch=module.dynamic_batch)
    else:
        axes: list[int | None] = [None] * len(module.input_shapes)
        for index, axis in symbolic["input_axes"]:
            axes[index] = axis
        spec = DynamicDim(tuple(axes), symbolic["max"], symbolic["name"])
        fresh = from_torch(model, resized(_arguments(example), axes, symbolic["example"]), dynamic_dim=spec)
    ours, theirs = module.params, fresh.params
    same = (fresh.nodes() == module.nodes() and list(ours) == list(theirs)
            and all(ours[k].dtype == theirs[k].dtype and np.array_equal(ours[k], theirs[k]) for k in ours))
    if not same:
        raise ValueError("the module is not the conversion of this model (converting the model again gives other "
                         "nodes or params): convert the model again, or pass the model it was converted from")
    return QDQModule(module.graph, fresh.torch_nodes)


def compare(
    model: torch.nn.Module,
    module: QDQModule,
    inputs: Sequence[torch.Tensor | tuple[torch.Tensor, ...]],
    profiles: Sequence[str] | None = None,
    isa: str | None = None,
    reference_inputs: bool = False,
) -> ComparisonReport:
    """Run ``model`` (PyTorch, current engine) and ``module`` (integer runtime, each of ``profiles``:
    by default int32_bias, fbgemm, fixed_point, qnnpack and the default profile) on every input and
    compare every quantized tensor bit by bit. Each input is a tensor, or a
    tuple of tensors for a model with several inputs (e.g. token ids and position ids).

    The module must be the conversion of ``model`` by :func:`qnnpy.from_torch` (it knows which
    FX node computed each tensor); a module loaded from disk is linked to ``model`` by converting
    ``model`` again on the first input, and refused with a ``ValueError`` when that gives another
    module. PyTorch's intermediate tensors are recorded by running the traced model node by node.

    By default each layer of the runtime computes from the runtime's own previous outputs,
    so a one-step difference early on can move later layers (the end-to-end agreement).
    ``reference_inputs=True`` feeds every layer PyTorch's values of its inputs (each tensor a
    PyTorch node computed is replaced by PyTorch's after the runtime computed it), so each
    layer's own arithmetic is measured alone; the float ops of PT2E float islands are then
    compared too, with ``LayerAgreement.max_relative`` their largest difference relative to
    the tensor's largest PyTorch value (they are rarely bit-identical, so ``all_identical`` and
    ``first_divergence`` then count them).
    """
    if not inputs:
        raise ValueError("compare needs at least one input")
    profiles = shown_profiles() if profiles is None else profiles
    if not module.torch_nodes:  # e.g. loaded from disk: linked by converting the model again
        module = linked_module(model, module, inputs[0])
    # Tensors computed by a PyTorch node, not those qnnpy adds (e.g. a slice ahead of a dequantize).
    compared_ops = _compared_ops(reference_inputs)
    nodes = [n for n in module.nodes() if n["op"] in compared_ops and n["output"] in module.torch_nodes]
    outputs = {module.graph.value(v)["name"] for v in module.graph.outputs}
    float_outputs = [n for n in module.nodes() if n["op"] in _approximate_float_ops() and n not in nodes
                     and n["output"] in outputs and n["output"] in module.torch_nodes]
    stats = {p: {n["output"]: [0, 0, 0, 0.0] for n in nodes + float_outputs} for p in profiles}
    for x in inputs:
        args = _arguments(x)
        captured = capture(model, args)
        feed = _reference_feed(module, captured.values) if reference_inputs else None
        for profile in profiles:
            result = module.run(*(a.numpy() for a in args), profile=profile, isa=isa, capture=True, feed=feed)
            for n in nodes + float_outputs:
                ours, theirs = result.intermediates[n["output"]], captured.values[module.torch_nodes[n["output"]]]
                diff = _difference(ours, theirs)
                s = stats[profile][n["output"]]
                s[0] += int((diff == 0).sum())
                s[1] += diff.size
                s[2] = max(s[2], int(diff.max()))
                if not theirs.is_quantized:
                    s[3] = max(s[3], _relative_difference(ours, theirs.detach().numpy()))
    def agreements(profile: str, compared: list[dict]) -> list[LayerAgreement]:
        return [LayerAgreement(n["output"], n["source"], n["op"], *stats[profile][n["output"]]) for n in compared]

    return ComparisonReport({p: agreements(p, nodes) for p in profiles}, len(inputs), reference_inputs,
                            reference_name(model), {p: agreements(p, float_outputs) for p in profiles})


def _relative_difference(ours: np.ndarray, theirs: np.ndarray) -> float:
    """max |ours - theirs| / max |theirs| over the finite values of theirs (0 when both are all zeros). Equal
    infinities (an attention mask's -inf) and NaN against NaN count as equal; a NaN against a number as inf."""
    a, b = ours.astype(np.float64), theirs.astype(np.float64)
    with np.errstate(invalid="ignore"):
        differ = (a != b) & ~(np.isnan(a) & np.isnan(b))
        worst = float(np.nan_to_num(np.abs(a - b)[differ], nan=np.inf, posinf=np.inf).max(initial=0.0))
    finite = np.abs(b[np.isfinite(b)])
    scale = float(finite.max(initial=0.0))
    return worst / scale if scale else worst


@dataclass
class TVMAgreement:
    """How TVM's final output compares with PyTorch's, over all inputs, in steps of the module's output scale."""

    engine: str      # what PyTorch ran: its quantized engine, or "PT2E reference" (comparison.reference_name)
    samples: int     # rows of 2-D (classification) outputs; 0 for outputs of another rank
    same_top1: int   # of those rows, how many have the same arg max
    identical: int   # output values less than half a step apart (a float output: equal values)
    total: int
    max_lsb: int     # largest |difference| in quantization steps (a float output: in float32 ulps)
    form: str = ""   # the runner's form ("kernels", "integer", "qdq") and profile, when it says
    # A float output (a PT2E float head): the largest |difference| over the largest |PyTorch value|.
    max_relative: float | None = None

    def summary(self) -> str:
        """One line: top-1 agreement (2-D outputs), identical values and the largest difference."""
        top1 = f"top-1 agrees on {self.same_top1}/{self.samples} sample(s); " if self.samples else ""
        form = f" ({self.form})" if self.form else ""
        reference = "PyTorch " + (self.engine or "")
        if self.max_relative is None:
            return (f"TVM{form} vs {reference.strip()}: {top1}final output {self.identical}/{self.total} "
                    f"values identical ({self.identical / self.total:.4%}), max {self.max_lsb} LSB")
        return (f"TVM{form} vs {reference.strip()}: {top1}final float output {self.identical}/{self.total} values "
                f"identical ({self.identical / self.total:.4%}), max difference {self.max_relative:.1e} of its range")


def compare_tvm(
    model: torch.nn.Module,
    module: QDQModule,
    inputs: Sequence[torch.Tensor],
    runner: Callable[[np.ndarray], Any] | None = None,
) -> TVMAgreement:
    """Run ``model`` (PyTorch, current engine) and ``module`` compiled by TVM on every input and
    compare their first outputs in quantization steps (LSB) of the module's output.

    ``module`` must be the conversion of ``model``: it is checked by converting ``model`` again
    (a ``ValueError`` otherwise, as :func:`compare` does). ``runner`` is the compiled module,
    ``qnnpy.tvm_bridge.build(module, ...)``; when not given, it is built for this CPU in the default
    form with the profile that equals the current engine (bit-exact with PyTorch where the
    runtime is). The float ``"qdq"`` form computes in float32, so values next to a rounding tie
    may land a step apart. A float output (a PT2E model's float head) is compared value by value: how many
    are equal and the largest difference relative to the largest PyTorch value (``max_relative``).
    """
    if not inputs:
        raise ValueError("compare_tvm needs at least one input")
    linked_module(model, module, inputs[0])
    if runner is None:
        from qnnpy import tvm_bridge

        runner = tvm_bridge.build(module, profile=default_profile())
    scale, _ = module.output_qparams()[0]
    samples = same_top1 = identical = total = worst = 0
    relative = 0.0
    for x in inputs:
        got = np.asarray(runner(x.numpy()), dtype=np.float64)
        with torch.no_grad():
            ref = model(x).numpy().astype(np.float64)
        if scale is None:
            steps = _difference(got.astype(np.float32), torch.from_numpy(ref.astype(np.float32)))
            relative = max(relative, _relative_difference(got, ref))
        else:
            steps = np.rint(np.abs(got - ref) / scale)
        identical += int((steps == 0).sum())
        total += steps.size
        worst = max(worst, int(steps.max()))
        if ref.ndim == 2:
            same_top1 += int((got.argmax(1) == ref.argmax(1)).sum())
            samples += ref.shape[0]
    form = getattr(runner, "form", "")
    if form and hasattr(runner, "profile"):
        form += f" form, profile {runner.profile}"
    return TVMAgreement(reference_name(model), samples, same_top1, identical, total, worst, form,
                        relative if scale is None else None)

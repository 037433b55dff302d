"""Walks a captured graph and converts each op through the converter table."""
from __future__ import annotations

import warnings
from typing import Any, Sequence

import torch
import torch.fx
import torch.utils._pytree as pytree

from qnnpy.capture.aten_targets import is_random, target_name
from qnnpy.capture.float_decomposition import decompose_float_ops
from qnnpy.capture.fx_capture import CapturedGraph, FxTracingError, capture_fx
from qnnpy.capture.pt2e_capture import capture_pt2e, is_exported_module, is_pt2e_graph
from qnnpy.capture.torchao_capture import capture_torchao, refuse_exported_torchao, torchao_layers
from qnnpy.capture.torchscript_capture import capture_torchscript
from qnnpy.convert.attention import ATTENTION, converts_whole, fold_repeated_kv
from qnnpy.convert.context import ConversionContext, op_name
from qnnpy.convert.dynamic_ops import is_dynamic_quantized_op, refuse_unsupported_dynamic
from qnnpy.convert.input_shapes import check_model_runs
from qnnpy.convert.embedding_ops import WEIGHT_ONLY_QUANTIZED
from qnnpy.convert.ops import CONVERTERS, converts_in_float, has_integer_form
from qnnpy.convert.symbolic_dim import DynamicDim, convert_symbolic
from qnnpy.convert.torchao_ops import TORCHAO_CONVERTERS, check_torchao_layers
from qnnpy.errors import ConversionError, UnsupportedOpsError
from qnnpy.module import QDQModule
from qnnpy.quantized_types import is_quantized, is_tensor


def _table_key(gm: torch.fx.GraphModule, node: torch.fx.Node) -> Any:
    if node.op == "call_module":
        return type(gm.get_submodule(node.target))
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    return node.target


def _outputs(arg: Any) -> list[tuple[str, torch.fx.Node]]:
    """The model's outputs in order, each with its path in the output structure ("out", "1.logits"); None
    entries (an optional output the model left out) are skipped."""
    leaves, _ = pytree.tree_flatten_with_path(arg)
    outputs = []
    for path, leaf in leaves:
        if leaf is None:
            continue
        if not isinstance(leaf, torch.fx.Node):
            raise ConversionError(f"model output {leaf!r:.60} is not a tensor")
        outputs.append((_path_name(path), leaf))
    return outputs


def _path_name(path: tuple) -> str:
    """A pytree key path as a dotted name: ("out",), (1, "logits") -> "out", "1.logits"."""
    return ".".join(str(getattr(k, "key", getattr(k, "idx", getattr(k, "name", k)))) for k in path)


def _has_names(arg: Any) -> bool:
    """Whether the output structure holds a dict (its keys name the outputs)."""
    return isinstance(arg, dict) or (isinstance(arg, (tuple, list)) and any(_has_names(a) for a in arg))


def _input_dtype(name: str, example: torch.Tensor) -> str:
    """The graph input's dtype: float32 for a float example, int64 / int32 indices, bool masks."""
    if example.is_floating_point():
        return "float32"
    if example.dtype in (torch.int64, torch.int32, torch.bool):
        return str(example.dtype).removeprefix("torch.")
    raise ConversionError(f"input '{name}' is {example.dtype}: inputs must be float, int64 / int32 indices or bool masks")


# Why an op has no converter, by its name: what no static integer module can express.
_DATA_DEPENDENT = {"nonzero", "masked_select", "unique", "_unique2", "unique_consecutive", "_local_scalar_dense", "item",
                   "nonzero_static", "bincount", "repeat_interleave"}


def _why_unsupported(ctx: ConversionContext, node: torch.fx.Node) -> str:
    name = target_name(node)
    if is_random(node):
        return "random sampling: its value changes from run to run"
    if name in _DATA_DEPENDENT:
        return "its output's shape or value depends on the input values (a static module cannot express it)"
    if name.endswith("_backward") or name == "native_dropout":
        return "training only"
    if ctx.example(node).is_quantized:
        return "no integer form in qnnpy"
    return "no float form in qnnpy (docs/core_aten_ops.md lists the ops that have one)"


def _float_model_error(captured: CapturedGraph) -> ConversionError:
    return ConversionError(
        f"{captured.kind} computes no quantized tensor: it is a float model. Quantize it first: PT2E "
        "(torch.export.export, then torchao's prepare_pt2e / calibrate / convert_pt2e, PyTorch's current flow), "
        "eager mode (torch.ao.quantization prepare / calibrate / convert), FX (prepare_fx / convert_fx), or "
        "torch.ao.quantization.quantize_dynamic for its linears.")


def convert_captured(captured: CapturedGraph) -> QDQModule:
    """Convert a captured model; every op that cannot be converted is reported at once."""
    gm = captured.module
    keys = [_table_key(gm, n) for n in gm.graph.nodes if n.op.startswith("call_")]
    dynamic = any(is_dynamic_quantized_op(k) for k in keys)
    weight_only = any(k in WEIGHT_ONLY_QUANTIZED or k in TORCHAO_CONVERTERS for k in keys)
    if not dynamic and not weight_only and not any(is_quantized(v) for v in captured.values.values()):
        raise _float_model_error(captured)
    ctx = ConversionContext(captured)
    problems: list[tuple[str, str]] = []
    failed: set[str] = set()
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            example = ctx.example(node)
            ctx.env[node.name] = ctx.graph.add_input(node.target, list(example.shape), _input_dtype(node.target, example))
            continue
        if node.op == "output":
            if not problems:
                _mark_outputs(ctx, node, captured.output_names)
            continue
        if node.op == "get_attr" or not is_tensor(ctx.example(node)):
            if any(a.name in failed for a in node.all_input_nodes):
                failed.add(node.name)  # a tuple of unconverted values (chunk of an unsupported op's output)
            continue  # a constant (packed params, sizes, scales): converted where a converter uses it as a value
        converter = CONVERTERS.get(_table_key(gm, node))
        if converter is None:
            problems.append((ctx.source(node), f"{op_name(gm, node)}: {_why_unsupported(ctx, node)}"))
        if converter is None or any(a.name in failed for a in node.all_input_nodes):
            failed.add(node.name)  # downstream ops are still checked for converters, not converted
            continue
        try:
            ctx.env[node.name] = converter(ctx, node)
        except ConversionError as e:
            problems.append((ctx.source(node), str(e)))
            failed.add(node.name)
        except Exception as e:  # noqa: BLE001  (a converter's own failure, reported with the op it met)
            problems.append((ctx.source(node), f"{op_name(gm, node)}: {type(e).__name__} while converting: {e}"))
            failed.add(node.name)
    if problems:
        raise UnsupportedOpsError(problems)
    torch_nodes = {ctx.graph.value(vid)["name"]: name for name, vid in ctx.env.items()}
    return QDQModule(ctx.graph, torch_nodes)


def _mark_outputs(ctx: ConversionContext, node: torch.fx.Node, names: list[str] | None) -> None:
    """Mark the model's outputs; those of a dict / dataclass output take their keys as value names."""
    outputs = _outputs(node.args[0])
    if names is None and _has_names(node.args[0]):
        names = [path for path, _ in outputs]
    for i, (_, out) in enumerate(outputs):
        vid = ctx.value(out, node)
        if names is not None:
            vid = _named(ctx, vid, names[i], out)
        ctx.graph.mark_output(vid)


def _named(ctx: ConversionContext, vid: int, name: str, out: torch.fx.Node) -> int:
    """The output value ``vid`` named ``name``: renamed when a node computed it, else (a graph input or a value
    that is also another output) a copy under that name."""
    info = ctx.graph.value(vid)
    if vid in ctx.graph.inputs or vid in ctx.graph.outputs:
        op = "reshape" if info["scale"] is not None else "float_reshape"
        qparams = {"out_scale": info["scale"], "out_zero_point": info["zero_point"]} if info["scale"] is not None else {}
        return ctx.graph.add_node(op, [vid], ctx.source(out), name, info["dtype"], ints={"shape": list(info["shape"])},
                                  **qparams)
    ctx.graph.rename_value(vid, name)
    return vid


def from_torch(model: torch.nn.Module | torch.export.ExportedProgram,
               example_inputs: Sequence[torch.Tensor] | torch.Tensor | None = None,
               dynamic_batch: bool = False, dynamic_dim: DynamicDim | None = None) -> QDQModule:
    """Convert a quantized PyTorch model to a canonical QDQ module.

    ``model``, in eval mode, is one of:

    - an eager-mode model after ``torch.ao.quantization.convert``;
    - an FX model after ``convert_fx`` (a ``torch.fx.GraphModule``);
    - a TorchScript module (``torch.jit.ScriptModule``) of such a model, traced or
      scripted, e.g. as returned by ``torch.jit.load``. Its forward graph is inlined
      and its ``quantized::`` / ``aten::`` ops go through the same converters;
      code that branches on shapes is specialised to the example inputs;
    - a PT2E model: the GraphModule ``convert_pt2e`` returns (``fold_quantize`` True or
      False) for a model captured with ``torch.export.export(model, args, strict=True).module()``
      and quantized with torchao's ``prepare_pt2e`` (e.g. ``X86InductorQuantizer``), or a
      ``torch.export.ExportedProgram`` of one. Each ``dequantize -> aten op -> quantize``
      island becomes the canonical integer op; ops the quantizer left in float become
      float ops (``float_conv2d``, ``float_add``, ...), run in float32.

    - a model quantized by torchao's ``quantize_`` (``Int8Tensor`` / ``IntxUnpackedToInt8Tensor``
      weights: W8A8 dynamic, int8 / int4 weight-only, 8da4w), Hugging Face decoder LMs included: captured
      with ``torch.export`` around each quantized linear (a warning says so), each becoming an
      ``affine_linear`` node (docs/torchao.md).

    ``example_inputs`` are the float inputs of ``forward``; they fix the static
    shapes of the module and provide the quantization parameters of every
    intermediate tensor.

    ``dynamic_batch=True`` makes dim 0 of the inputs (and of every tensor) a batch
    of any size: the Relax module takes a symbolic batch, ``module.run`` and TVM's
    float form (``tvm_bridge.build(..., form="qdq")``) any batch size. The graph is
    checked to keep the batch as dim 0 everywhere; a model that reshapes or
    reduces across it is refused. Static quantization treats the samples of a
    batch independently, so a batch's results equal its samples' run one by one;
    dynamic quantization (``dynamic_linear``) chooses its input qparams over the
    whole batch, as PyTorch does.

    ``dynamic_dim`` (:class:`~qnnpy.DynamicDim`) makes one axis of some inputs -- a sequence
    length -- symbolic up to a bound: ``from_torch(bert, (ids,), dynamic_dim=DynamicDim(axes=(1,),
    max=128))``. The model is converted at three sizes and generalized; a model whose computation
    is not the same at every size is refused, naming the node. ``module.run`` and the qdq form take
    any size up to the bound. Not combined with ``dynamic_batch``.

    Raises :class:`~qnnpy.errors.ConversionError` for a float model or bad
    input, and :class:`~qnnpy.errors.UnsupportedOpsError` listing every op
    without a converter.
    """
    if isinstance(model, torch.export.ExportedProgram):
        model = model.module()
    if not isinstance(model, torch.nn.Module):
        raise ConversionError(f"from_torch needs a torch.nn.Module, got {type(model).__name__}")
    if example_inputs is None:
        raise ConversionError(
            f"from_torch({type(model).__name__}) needs example_inputs: the float tensors forward() takes, "
            "e.g. (torch.randn(1, 3, 224, 224),)"
        )
    if is_exported_module(model) and not is_pt2e_graph(model):
        refuse_exported_torchao(model)
        raise ConversionError(
            f"{type(model).__name__} is a torch.export program without quantize / dequantize ops: a float model. "
            "Quantize it first (torchao's prepare_pt2e / calibrate / convert_pt2e)."
        )
    _refuse_unconverted(model)
    # A frozen ScriptModule has no flag (torch.jit.freeze needs eval mode); a graph from torch.export has its ops
    # fixed at export (its flag says nothing), so a PT2E graph with nothing quantized meets the float-model error.
    if getattr(model, "training", False) and not is_pt2e_graph(model) and not _from_export(model):
        raise ConversionError(f"{type(model).__name__} is in training mode; call model.eval() before converting")
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    refuse_unsupported_dynamic(model)
    if dynamic_dim is not None:
        if dynamic_batch:
            raise ConversionError("dynamic_batch and dynamic_dim cannot be combined yet: choose one symbolic axis")
        return convert_symbolic(lambda xs: convert_captured(_captured(model, xs)), tuple(example_inputs), dynamic_dim,
                                type(model).__name__)
    module = convert_captured(_captured(model, tuple(example_inputs)))
    if dynamic_batch:
        try:
            module.graph.set_dynamic_batch(True)
        except ValueError as e:
            raise ConversionError(f"{type(model).__name__} cannot take a dynamic batch: {e}") from e
    return module


def _captured(model: torch.nn.Module, example_inputs: tuple[torch.Tensor, ...]) -> Any:
    """``capture(model, example_inputs)``; when capture fails because the model does not run on these
    inputs, a ``ConversionError`` naming the input the model expects instead of PyTorch's own message."""
    try:
        return capture(model, example_inputs)
    except ConversionError:
        raise
    except Exception:
        shapes = " and ".join(str(tuple(x.shape)) for x in example_inputs if isinstance(x, torch.Tensor))
        try:
            check_model_runs(model, example_inputs, f"example inputs of shape {shapes}")
        except ValueError as e:
            raise ConversionError(str(e)) from e.__cause__
        raise


def _from_export(model: torch.nn.Module) -> bool:
    """Whether ``model`` is a GraphModule torch.export made (its placeholders carry example values), as
    prepare_pt2e / convert_pt2e return it."""
    return isinstance(model, torch.fx.GraphModule) and any(
        "val" in n.meta for n in model.graph.nodes if n.op == "placeholder")


def _refuse_unconverted(model: torch.nn.Module) -> None:
    """A model still holding observers or fake-quantize modules was prepared (PTQ or QAT) but not converted.
    Known by their base classes' names: torch.ao.quantization's and torchao's (PT2E) have the same ones."""
    if isinstance(model, torch.jit.ScriptModule):
        return
    bases = {"ObserverBase", "FakeQuantizeBase"}
    paths = [path for path, m in model.named_modules() if any(c.__name__ in bases for c in type(m).__mro__)]
    if paths:
        raise ConversionError(
            f"{type(model).__name__} holds {len(paths)} observer or fake-quantize module(s) ({paths[0]}, ...): it was "
            "prepared for quantization but not converted. Convert it first (torch.ao.quantization.convert, "
            "convert_fx or torchao's convert_pt2e)."
        )


def capture(model: torch.nn.Module, example_inputs: tuple[torch.Tensor, ...]) -> CapturedGraph:
    """The model's graph with every node's output on ``example_inputs`` (FX, TorchScript or PT2E front end), its
    float ops without a converter decomposed into aten ops and its constants folded. An eager model torch.fx
    cannot trace (data-dependent Python, ``**kwargs``: Hugging Face models) is traced with
    ``torch.jit.trace(strict=False)`` on the example inputs instead, with a warning saying why."""
    return decomposed(_front_end(model, example_inputs))


def decomposed(captured: CapturedGraph) -> CapturedGraph:
    """The captured graph with its float ops without a converter decomposed into aten ops and its constants
    folded; attention reads grouped-query heads in place (convert/attention.py)."""
    gm = captured.module
    fold_repeated_kv(captured)

    def convertible(node: torch.fx.Node) -> bool:
        if node.target is ATTENTION:
            return converts_whole(node, captured.values)
        return converts_in_float(_table_key(gm, node))

    return decompose_float_ops(captured, convertible)


def _front_end(model: torch.nn.Module, example_inputs: tuple[torch.Tensor, ...]) -> CapturedGraph:
    layers = torchao_layers(model)
    if layers:
        check_torchao_layers(layers)
        return capture_torchao(model, example_inputs)
    if isinstance(model, torch.jit.ScriptModule):
        return capture_torchscript(model, example_inputs, known_ops=CONVERTERS)
    if is_pt2e_graph(model):
        return capture_pt2e(model, example_inputs, has_integer_form)
    try:
        return capture_fx(model, example_inputs)
    except FxTracingError as fx_error:
        warnings.warn(f"{fx_error}; tracing {type(model).__name__} with torch.jit.trace(strict=False) on the example "
                      "inputs instead (its control flow is fixed to what those inputs take)", stacklevel=3)
        wrapped = _TensorOutputs(model)
        try:
            with torch.no_grad(), warnings.catch_warnings():
                # PyTorch's "torch.jit.trace is deprecated": the warning above already says which capture ran.
                warnings.filterwarnings("ignore", message=r".*torch\.jit\.trace.* is deprecated", category=FutureWarning)
                traced = torch.jit.trace(wrapped, example_inputs, strict=False, check_trace=False)
        except Exception as e:
            raise ConversionError(f"{fx_error}; torch.jit.trace failed too: {type(e).__name__}: {e}") from e
        captured = capture_torchscript(traced, example_inputs, known_ops=CONVERTERS)
        captured.kind = type(model).__name__
        captured.output_names = wrapped.names
        return captured


class _TensorOutputs(torch.nn.Module):
    """``model`` returning the tensors of its output structure (a Hugging Face ``ModelOutput``, a dataclass, a dict
    of tuples...) as a flat tuple, which torch.jit.trace takes; ``names`` records each one's path in the structure
    after a call ("last_hidden_state", "past_key_values.0.0"), None for a plain tensor output."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model
        self.names: list[str] | None = None

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.model(*inputs)
        if isinstance(out, torch.Tensor):
            return (out,)
        leaves = [(path, leaf) for path, leaf in pytree.tree_flatten_with_path(out)[0] if isinstance(leaf, torch.Tensor)]
        self.names = [_path_name(path) for path, _ in leaves]
        return tuple(leaf for _, leaf in leaves)

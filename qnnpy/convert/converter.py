"""Walks a captured graph and converts each op through the converter table."""
from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.fx

from qnnpy.capture.fx_capture import CapturedGraph, capture_fx
from qnnpy.capture.pt2e_capture import capture_pt2e, is_exported_module, is_pt2e_graph
from qnnpy.capture.torchscript_capture import capture_torchscript
from qnnpy.convert.context import ConversionContext, op_name
from qnnpy.convert.dynamic_ops import is_dynamic_quantized_op, refuse_unsupported_dynamic
from qnnpy.convert.embedding_ops import WEIGHT_ONLY_QUANTIZED
from qnnpy.convert.ops import CONVERTERS
from qnnpy.errors import ConversionError, UnsupportedOpsError
from qnnpy.module import QDQModule


def _table_key(gm: torch.fx.GraphModule, node: torch.fx.Node) -> Any:
    if node.op == "call_module":
        return type(gm.get_submodule(node.target))
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    return node.target


def _is_tensor(v: Any) -> bool:
    return isinstance(v, torch.Tensor)


def _outputs(arg: Any) -> list[torch.fx.Node]:
    if isinstance(arg, torch.fx.Node):
        return [arg]
    if isinstance(arg, (tuple, list)):
        return [n for a in arg for n in _outputs(a)]
    raise ConversionError(f"model output {arg!r:.60} is not a tensor")


def _input_dtype(name: str, example: torch.Tensor) -> str:
    """The graph input's dtype: float32 for a float example, int64 / int32 for indices (embeddings)."""
    if example.is_floating_point():
        return "float32"
    if example.dtype in (torch.int64, torch.int32):
        return str(example.dtype).removeprefix("torch.")
    raise ConversionError(f"input '{name}' is {example.dtype}: inputs must be float, or int64 / int32 indices")


def convert_captured(captured: CapturedGraph) -> QDQModule:
    """Convert a captured model; every unsupported op is reported at once."""
    ctx = ConversionContext(captured)
    gm = captured.module
    keys = [_table_key(gm, n) for n in gm.graph.nodes if n.op.startswith("call_")]
    dynamic = any(is_dynamic_quantized_op(k) for k in keys)
    weight_only = any(k in WEIGHT_ONLY_QUANTIZED for k in keys)
    if not dynamic and not weight_only and not any(_is_tensor(v) and v.is_quantized for v in captured.values.values()):
        raise ConversionError(
            f"{type(gm).__name__} computes no quantized tensor: it is a float model. Quantize it first "
            "(torch.ao.quantization prepare/calibrate/convert, or prepare_fx/convert_fx)."
        )
    unsupported: list[tuple[str, str]] = []
    failed: set[str] = set()
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            example = ctx.example(node)
            ctx.env[node.name] = ctx.graph.add_input(node.target, list(example.shape), _input_dtype(node.target, example))
            continue
        if node.op == "output":
            if not unsupported:
                for out in _outputs(node.args[0]):
                    ctx.graph.mark_output(ctx.value(out, node))
            continue
        if node.op == "get_attr" or not _is_tensor(ctx.example(node)):
            if any(a.name in failed for a in node.all_input_nodes):
                failed.add(node.name)  # a tuple of unconverted values (chunk of an unsupported op's output)
            continue  # a constant (packed params, sizes, scales): converters read it from the example values
        converter = CONVERTERS.get(_table_key(gm, node))
        if converter is None:
            kind = "" if ctx.example(node).is_quantized else " (float op: not part of a quantized region)"
            unsupported.append((ctx.source(node), op_name(gm, node) + kind))
        if converter is None or any(a.name in failed for a in node.all_input_nodes):
            failed.add(node.name)  # downstream ops are still checked for converters, not converted
            continue
        try:
            ctx.env[node.name] = converter(ctx, node)
        except ConversionError:
            raise
        except ValueError as e:  # the core's checks of a node (shapes, qparams), naming its op and source
            raise ConversionError(str(e)) from e
    if unsupported:
        raise UnsupportedOpsError(unsupported)
    torch_nodes = {ctx.graph.value(vid)["name"]: name for name, vid in ctx.env.items()}
    return QDQModule(ctx.graph, torch_nodes)


def from_torch(model: torch.nn.Module | torch.export.ExportedProgram,
               example_inputs: Sequence[torch.Tensor] | torch.Tensor | None = None,
               dynamic_batch: bool = False) -> QDQModule:
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
        raise ConversionError(
            f"{type(model).__name__} is a torch.export program without quantize / dequantize ops: a float model. "
            "Quantize it first (torchao's prepare_pt2e / calibrate / convert_pt2e)."
        )
    _refuse_unconverted(model)
    if getattr(model, "training", False) and not is_pt2e_graph(model):  # a frozen ScriptModule has no flag: torch.jit.freeze needs eval mode
        raise ConversionError(f"{type(model).__name__} is in training mode; call model.eval() before converting")
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    refuse_unsupported_dynamic(model)
    module = convert_captured(capture(model, tuple(example_inputs)))
    if dynamic_batch:
        try:
            module.graph.set_dynamic_batch(True)
        except ValueError as e:
            raise ConversionError(f"{type(model).__name__} cannot take a dynamic batch: {e}") from e
    return module


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
    """The model's graph with every node's output on ``example_inputs`` (FX, TorchScript or PT2E front end)."""
    if isinstance(model, torch.jit.ScriptModule):
        return capture_torchscript(model, example_inputs, known_ops=CONVERTERS)
    if is_pt2e_graph(model):
        return capture_pt2e(model, example_inputs)
    return capture_fx(model, example_inputs)

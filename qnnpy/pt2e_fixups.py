"""Fix-ups of a ``torch.export`` graph to apply before torchao's ``prepare_pt2e``, where one of PyTorch's
quantizers fails on a graph qnnpy would convert (docs/convert.md says which quantizer fails where)."""
from __future__ import annotations

import torch
import torch.fx

# The ops whose number operands the XNNPACK quantizer turns into float32 tensors (torchao's _convert_scalars_to_attrs).
_SCALAR_TO_TENSOR_OPS = (torch.ops.aten.add.Tensor, torch.ops.aten.mul.Tensor)


def integer_scalars_as_tensors(model: torch.fx.GraphModule) -> int:
    """Make the Python-number operands of integer adds and multiplies (a decoder's position ids,
    ``arange(n) + offset``) integer tensor constants of the result's dtype; returns how many it replaced.

    The XNNPACK quantizer's ``transform_for_annotation`` replaces every number operand of ``add`` / ``mul`` by a
    float32 tensor, also where the other operand holds integers: the position ids become float and the prepared
    model stops in ``aten.embedding`` during calibration ("Expected tensor for argument #1 'indices' to have one of
    the following scalar types: Long, Int"). An operand that is already a tensor is left as it is, and the
    integer arithmetic keeps its dtype. Apply it to ``torch.export.export(...).module()`` before ``prepare_pt2e``."""
    replaced = 0
    for node in list(model.graph.nodes):
        value = node.meta.get("val")
        if node.op != "call_function" or node.target not in _SCALAR_TO_TENSOR_OPS or not isinstance(value, torch.Tensor) \
                or value.is_floating_point() or value.dtype == torch.bool:
            continue
        args = list(node.args)
        for i, arg in enumerate(args):
            if isinstance(arg, bool) or not isinstance(arg, (int, float)):
                continue
            constant = torch.tensor(arg, dtype=value.dtype)
            name = f"_integer_operand_{replaced}"
            while hasattr(model, name):
                name += "_"
            model.register_buffer(name, constant)
            with model.graph.inserting_before(node):
                args[i] = model.graph.get_attr(name)
            fake_mode = getattr(value, "fake_mode", None)
            args[i].meta["val"] = fake_mode.from_tensor(constant, static_shapes=True) if fake_mode else constant
            replaced += 1
        node.args = tuple(args)
    model.recompile()
    return replaced


def additions_of_zero_removed(model: torch.fx.GraphModule) -> int:
    """Replace each ``x + 0``, ``0 + x`` and ``x - 0`` of a float tensor ``x`` and the number 0 by ``x``; returns how
    many it removed. timm's MobileOne blocks (FastViT) start a sum at the number 0, and ``X86InductorQuantizer``
    asserts on a conv followed by an add whose other operand is no graph node (``_get_input_idx_for_binary_node``).
    The result is the same but for the sign of a zero (-0.0 + 0 is +0.0), which quantizes alike."""
    removed = 0
    for node in list(model.graph.nodes):
        if node.op != "call_function" or len(node.args) != 2 or node.kwargs.get("alpha", 1) != 1:
            continue
        x, zero = node.args
        if node.target == torch.ops.aten.add.Tensor and not isinstance(x, torch.fx.Node):
            x, zero = zero, x
        elif node.target != torch.ops.aten.sub.Tensor and node.target != torch.ops.aten.add.Tensor:
            continue
        if not isinstance(x, torch.fx.Node) or isinstance(zero, (torch.fx.Node, bool)) or zero != 0:
            continue
        before, after = x.meta.get("val"), node.meta.get("val")
        if isinstance(before, torch.Tensor) and isinstance(after, torch.Tensor) and before.is_floating_point() \
                and before.dtype == after.dtype and before.shape == after.shape:
            node.replace_all_uses_with(x)
            model.graph.erase_node(node)
            removed += 1
    model.recompile()
    return removed

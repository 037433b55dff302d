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


def dead_code_removed(model: torch.fx.GraphModule) -> int:
    """Remove the ops whose results nothing reads, in-place ops included where nothing reads the tensor they write
    afterwards; returns how many it removed.

    ``torch.export`` keeps what a model computes and drops (RAFT's upsampling masks of every flow update but the last
    one, when only the last flow is returned; a BERT's pooler when only the hidden states are). ``prepare_pt2e``'s
    own clean-up removes the pure ops of it but keeps in-place ones (``relu_`` of torchvision's
    ``Conv2dNormActivation``), and ``X86InductorQuantizer`` then fails with ``IndexError`` in
    ``_get_output_nodes_of_partitions`` on the conv -> relu pattern whose ReLU has no user. An in-place op is removed
    only where the tensor it writes is an intermediate value of the graph (no input, parameter or buffer, no view) that
    no op reads after it, so the graph computes the same."""
    removed = 0
    while True:
        order = {node: i for i, node in enumerate(model.graph.nodes)}
        dead = [node for node in reversed(list(order)) if node.op == "call_function" and not node.users
                and (not node.is_impure() or _unobserved_write(node, order))]
        if not dead:
            break
        for node in dead:
            model.graph.erase_node(node)
        removed += len(dead)
    model.recompile()
    return removed


def _unobserved_write(node: torch.fx.Node, order: dict[torch.fx.Node, int]) -> bool:
    """Whether ``node`` is an in-place op whose written tensor nothing can read after it."""
    schema = getattr(node.target, "_schema", None)
    if schema is None or not schema.arguments or not node.args:
        return False
    writes = [i for i, a in enumerate(schema.arguments) if a.alias_info is not None and a.alias_info.is_write]
    if writes != [0] or not isinstance(node.args[0], torch.fx.Node):
        return False
    written = node.args[0]
    value = written.meta.get("val")
    if written.op != "call_function" or not isinstance(value, torch.Tensor) or value._is_view():
        return False
    return all(order[user] < order[node] and not _is_view(user) for user in written.users if user is not node)


def _is_view(node: torch.fx.Node) -> bool:
    value = node.meta.get("val")
    return isinstance(value, torch.Tensor) and value._is_view()

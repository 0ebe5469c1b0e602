"""Static-shape rewrites of boolean-mask selections (TPU202).

`x[m]` has one row per true entry of `m`: a data-dependent shape. When the selection is only
reduced, or only fed to a loss that reduces it, the same value comes from the whole tensor
with the unselected entries neutralised, and every shape stays static:

    x[m].sum()                      torch.where(m, x, 0).sum()
    x[m].mean()                     torch.where(m, x, 0).sum() / m.sum()
    x[m].max() / .min()             torch.where(m, x, -torch.inf).max() / (..., torch.inf).min()
    x[m].numel(), len(x[m])         m.sum()
    (a[m] - b[m]).abs().mean()      torch.where(m, (a - b).abs(), 0).sum() / m.sum()
    F.cross_entropy(z[m], y[m])     F.cross_entropy(z.movedim(-1, 1), torch.where(m, y, -100))
    x[m] = 0                        x.masked_fill_(m, 0)
    x[m] = y[m] * 2                 x.copy_(torch.where(m, y * 2, x))
    p = p[m]; t = t[m]              (removed)
    loss = F.mse_loss(p, t)         loss = torch.where(m, F.mse_loss(p, t, reduction="none"), 0)
                                           .sum() / m.sum()

The pieces: `regions` (selections and the elementwise expressions around them),
`masks` (how the mask is written, widened where its shape is not provable),
`purity` (what may be evaluated twice), `losses` (the loss forms). Every
function returns a FixSpec, or None when no exact form applies; the conditions of each form are
on TPU202's rule page and in the fix's title.
"""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.values import HOST, NUMBER
from tpulint.datatypes.diagnostics import Applicability
from tpulint.rule_api.rule import FixSpec

from ..shared.tensors import Bindings, is_number_literal, pure_reference
from .bound import bound_fix
from .consumers import _imports, _title, consumer_fix
from .expressions import atom, bare, complete_parents, expression, torch_alias
from .masks import _short, mask_form
from .purity import is_pure
from .regions import (
    Leaves,
    Region,
    Selection,
    guarded_leaves,
    operand,
    region_around,
    selection_of,
    unselected,
)
from .shapes import zero_dim

# --- reads ------------------------------------------------------------------------------


def read_fix(
    ctx: FileContext,
    bindings: Bindings,
    node: cst.Subscript,
    mask: cst.BaseExpression,
    *,
    proven: bool,
) -> FixSpec | None:
    """The rewrite of a selection `x[m]` that is only reduced, fed to a loss, written back
    through the same mask, or bound to a local that is only used so; None when the selection
    itself is needed."""
    complete_parents(ctx, node)
    selection = selection_of(node)
    if selection is None or selection.mask is not mask:
        return None
    leaves = Leaves(ctx, bindings, selection)
    region = region_around(leaves, node)
    parent = ctx.parent(region.top)
    if isinstance(parent, cst.Assign) and parent.value is region.top and len(parent.targets) == 1:
        target = parent.targets[0].target
        written = selection_of(target)
        if written is not None:
            # `x[m] = y[m] * 2`: the read is part of the write's rewrite.
            if bare(ctx, written.mask).strip() == bare(ctx, mask).strip():
                return write_fix(ctx, bindings, target, written.mask, proven=False)  # type: ignore[arg-type]
            return None
        if isinstance(target, cst.Name):
            return bound_fix(ctx, bindings, leaves, parent)
        return None
    return consumer_fix(ctx, bindings, leaves, region, proven=proven)


# --- writes ------------------------------------------------------------------------------


def _per_row_value(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """Module state (`self.mask_token`, possibly converted with `.to(...)`/`.type_as(...)`):
    a value of fixed shape that broadcasts over the selected rows, never one value per
    selected element."""
    while (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in ("to", "type_as", "type", "detach")
    ):
        node = node.func.value
    root = node
    while isinstance(root, cst.Attribute):
        root = root.value
    return isinstance(node, cst.Attribute) and isinstance(root, cst.Name) and root.value == "self"


def _scalar_expression(ctx: FileContext, bindings: Bindings, node: cst.BaseExpression) -> bool:
    """A value `masked_fill_` takes: numbers, parameters and module attributes
    (`ignore_index`, `self.eps`: they hold numbers unless the title's condition fails, and
    then `masked_fill_` raises), locals holding one value (`w = labels.mean()`), and
    arithmetic of those (`1 - one_weight`). A local bound to a tensor of unknown shape is
    not: it may hold one value per selected row, which only indexing can write."""
    if is_number_literal(node, ctx) or (isinstance(node, cst.Attribute) and pure_reference(node)):
        return True
    if isinstance(node, cst.Name):
        binding = bindings.lookup(node.value)
        if binding is None:
            return True  # a parameter or a global: the title states the condition
        return zero_dim(ctx, node, bindings)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        return _scalar_expression(ctx, bindings, node.expression)
    if isinstance(node, cst.BinaryOperation) and isinstance(
        node.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)
    ):
        return _scalar_expression(ctx, bindings, node.left) and _scalar_expression(
            ctx, bindings, node.right
        )
    return False


def write_fix(
    ctx: FileContext,
    bindings: Bindings,
    node: cst.Subscript,
    mask: cst.BaseExpression,
    *,
    proven: bool,
) -> FixSpec | None:
    """`x[m] = v` as `x.masked_fill_(m, v)` (a number, or a name holding one) or
    `x.copy_(torch.where(m, e, x))` (an elementwise expression `e` over selections by the
    same mask, or a per-row value held by the module)."""
    complete_parents(ctx, node)
    target = ctx.parent(node)
    assign = ctx.parent(target) if target is not None else None
    selection = selection_of(node)
    if (
        selection is None
        or not isinstance(assign, cst.Assign)
        or len(assign.targets) != 1
        or assign.targets[0] is not target
    ):
        return None
    base = selection.base
    if not (pure_reference(base) or is_pure(ctx, base)):
        return None
    value = assign.value
    number = is_number_literal(value, ctx)
    if number or (_scalar_expression(ctx, bindings, value) and not _per_row_value(ctx, value)):
        form = mask_form(ctx, bindings, selection, [base], proven)
        if form.reads_base_again and not is_pure(ctx, mask):
            return None
        call = f"{atom(ctx, base)}.masked_fill_({form.where}, {bare(ctx, value)})"
        safe = proven and number and form.plain
        conditions = [] if safe else [form.condition]
        if not number and ctx.value_kind(value) not in (HOST, NUMBER):
            conditions.append(f"`{_short(ctx, value)}` is a number or a 0-dim tensor")
        return FixSpec(
            Applicability.SAFE if safe else Applicability.UNSAFE,
            _title("Use `masked_fill_`", conditions),
            [(assign, cst.Expr(expression(call)))],
        )
    torch_name, needs_import = torch_alias(ctx)
    if _per_row_value(ctx, value):
        if not is_pure(ctx, mask):
            return None
        form = mask_form(ctx, bindings, selection, [base], False)
        call = (
            f"{atom(ctx, base)}.copy_({torch_name}.where({form.where}, {bare(ctx, value)},"
            f" {bare(ctx, base)}))"
        )
        conditions = [form.condition, f"`{bare(ctx, value).strip()}` broadcasts over a row"]
        return FixSpec(
            Applicability.UNSAFE,
            _title("Write with `torch.where`", conditions),
            [(assign, cst.Expr(expression(call)))],
            add_imports=_imports(needs_import),
        )
    leaves = Leaves(ctx, bindings, selection)
    found: dict[int, tuple[cst.CSTNode, cst.BaseExpression]] = {}
    if not operand(leaves, value, found) or not found:
        return None
    region = Region(value, found)
    if not is_pure(ctx, mask) or not all(is_pure(ctx, b) for b in region.bases):
        return None
    form = mask_form(ctx, bindings, selection, [base, *region.bases], False)
    body = unselected(ctx, region, form.where, guarded_leaves(ctx, bindings, region, mask))
    call = f"{atom(ctx, base)}.copy_({torch_name}.where({form.where}, {body}, {bare(ctx, base)}))"
    conditions = [form.condition, "the other operands are finite where the mask is false"]
    return FixSpec(
        Applicability.UNSAFE,
        _title("Write with `torch.where`", conditions),
        [(assign, cst.Expr(expression(call)))],
        add_imports=_imports(needs_import),
    )


__all__ = ["Selection", "consumer_fix", "read_fix", "write_fix"]

"""What consumes a selection whole, and its static-shape form (TPU202): a reduction
(`.sum()`, `.mean()`, `.max()`, `len(...)`, ...) or a loss (`losses`).

Used by `masked` (a selection used in place) and `bound` (a selection bound to
a local, used later).
"""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.datatypes.diagnostics import Applicability
from tpulint.rule_api.rule import FixSpec, ImportSpec

from ..shared.tensors import Bindings
from .expressions import expression, fits, torch_alias
from .losses import loss_fix
from .masks import MaskForm, mask_form
from .purity import is_pure
from .regions import Leaves, Region, guarded_leaves, unselected

_REDUCTIONS = {
    "sum": "sum",
    "mean": "mean",
    "max": "max",
    "min": "min",
    "amax": "max",
    "amin": "min",
    "numel": "numel",
}


def _reduction(ctx: FileContext, top: cst.BaseExpression) -> tuple[cst.BaseExpression, str] | None:
    """The reduction that consumes `top` whole: (the node to replace, its kind)."""
    parent = ctx.parent(top)
    if isinstance(parent, cst.Attribute) and parent.value is top:
        grand = ctx.parent(parent)
        if isinstance(grand, cst.Call) and grand.func is parent:
            kind = _REDUCTIONS.get(parent.attr.value)
            if kind is not None and not grand.args:
                return grand, kind
            if parent.attr.value == "size" and _only_zero(grand.args):
                return grand, "rows"
            return None
        if (
            parent.attr.value == "shape"
            and isinstance(grand, cst.Subscript)
            and _index_is_zero(grand)
        ):
            return grand, "rows"
        return None
    if isinstance(parent, cst.Arg) and parent.keyword is None and not parent.star:
        call = ctx.parent(parent)
        if not isinstance(call, cst.Call) or len(call.args) != 1:
            return None
        if isinstance(call.func, cst.Name) and call.func.value == "len":
            return (call, "rows") if "len" not in ctx.aliases.bindings else None
        qualified = ctx.qualify(call.func) or ""
        if qualified.startswith("torch.") and qualified.count(".") == 1:
            kind = _REDUCTIONS.get(qualified[len("torch.") :])
            if kind is not None:
                return call, kind
    return None


def _only_zero(args: tuple[cst.Arg, ...] | list[cst.Arg]) -> bool:
    return (
        len(args) == 1
        and args[0].keyword is None
        and isinstance(args[0].value, cst.Integer)
        and args[0].value.value == "0"
    )


def _index_is_zero(node: cst.Subscript) -> bool:
    if len(node.slice) != 1:
        return False
    piece = node.slice[0].slice
    return (
        isinstance(piece, cst.Index)
        and isinstance(piece.value, cst.Integer)
        and piece.value.value == "0"
    )


def _imports(needed: bool) -> tuple[ImportSpec, ...]:
    return (ImportSpec("torch"),) if needed else ()


def _title(title: str, conditions: list[str]) -> str:
    return title + (f" (assumes {'; '.join(conditions)})" if conditions else "")


def consumer_fix(
    ctx: FileContext, bindings: Bindings, leaves: Leaves, region: Region, *, proven: bool = False
) -> FixSpec | None:
    """The rewrite of whatever consumes a region whole: a reduction or a loss."""
    reduction = _reduction(ctx, region.top)
    if reduction is not None:
        return _reduction_fix(ctx, bindings, leaves, region, reduction, proven)
    return loss_fix(ctx, bindings, leaves, region)


def _reduction_fix(
    ctx: FileContext,
    bindings: Bindings,
    leaves: Leaves,
    region: Region,
    reduction: tuple[cst.BaseExpression, str],
    proven: bool,
) -> FixSpec | None:
    outer, kind = reduction
    selection = leaves.like
    mask = selection.mask
    form = mask_form(ctx, bindings, selection, region.bases, proven and region.simple)
    torch_name, needs_import = torch_alias(ctx)
    # The mask is read more than once by every form but the plain sum and max/min.
    if (kind in ("mean", "numel") or form.reads_base_again or leaves.locals) and not is_pure(
        ctx, mask
    ):
        return None
    if form.reads_base_again and not all(is_pure(ctx, b) for b in region.bases):
        return None
    where = form.where
    body = unselected(ctx, region, where, guarded_leaves(ctx, bindings, region, mask))
    if kind == "sum":
        text = f"{torch_name}.where({where}, {body}, 0).sum()"
        title = "Use a masked sum: `torch.where(m, x, 0).sum()`"
    elif kind == "mean":
        text = f"{torch_name}.where({where}, {body}, 0).sum() / {form.count}"
        title = "Use a masked mean: the masked sum over the mask's count"
    elif kind in ("max", "min"):
        fill = f"-{torch_name}.inf" if kind == "max" else f"{torch_name}.inf"
        text = f"{torch_name}.where({where}, {body}, {fill}).{kind}()"
        shown = fill.replace(torch_name, "torch")
        title = f"Use a masked {kind}: `torch.where(m, x, {shown}).{kind}()`"
    elif kind == "numel":
        text, title, needs_import = form.count, "Count the mask instead of the selection", False
    else:  # rows: len(x[m]), x[m].shape[0], x[m].size(0)
        rows = form.rows
        if rows is None:
            return None
        text, title, needs_import = rows, "Count the mask instead of the selection", False
    # Safe (applied by `fix --apply`) only for the exact forms of the first release: a plain
    # sum or mean of `x[m]` whose mask is provably elementwise of `x`.
    safe = proven and region.simple and kind in ("sum", "mean") and form.plain
    conditions = [] if safe else _read_conditions(kind, form, region)
    return FixSpec(
        Applicability.SAFE if safe else Applicability.UNSAFE,
        _title(title, conditions),
        [(outer, fits(ctx, outer, expression(text)))],
        add_imports=_imports(needs_import),
    )


def _read_conditions(kind: str, form: MaskForm, region: Region) -> list[str]:
    conditions = [form.condition]
    if kind in ("max", "min"):
        conditions.append("a non-empty selection (an empty one raised; this gives ±inf)")
    if kind in ("numel", "rows"):
        conditions.append("the count is used as a number (it is now a tensor)")
    if not region.simple:
        conditions.append("the other operands are finite where the mask is false")
    return conditions

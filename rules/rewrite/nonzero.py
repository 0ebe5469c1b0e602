"""Rewrites of data-dependent-shape ops used only to index or count (TPU201).

    len(m.nonzero()), torch.nonzero(m).size(0)     torch.count_nonzero(m)
    x[m.nonzero(as_tuple=True)], x[torch.where(m)] x[m]            (a bool m; else x[m != 0])
    idx = m.nonzero(as_tuple=True) ... x[idx]       idx = m
    len(torch.unique(y))  (with a class count C)    (F.one_hot(y.flatten().long(), C).sum(0) > 0)
                                                    .sum()

Indexing with a boolean mask selects the same elements, in the same (row-major) order, as
indexing with the tuple of its nonzero indices, so the second form is exact; it is still a
selection (TPU202), whose reductions TPU202 rewrites in turn. Counting needs no indices at
all.
"""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.datatypes.diagnostics import Applicability
from tpulint.rule_api.rule import FixSpec, ImportSpec

from ..shared.tensors import Bindings, keyword, mask_kind, positional
from .expressions import atom, bare, complete_parents, expression, fits, torch_alias


def _subject(ctx: FileContext, call: cst.Call) -> tuple[cst.BaseExpression, bool] | None:
    """(the tensor, as_tuple) of `t.nonzero(...)`, `torch.nonzero(t, ...)`, `torch.argwhere(t)`,
    `t.argwhere()`, one-argument `torch.where(t)` (a tuple); None for other calls or other
    arguments."""
    qualified = ctx.qualify(call.func) or ""
    args = positional(call)
    as_tuple = keyword(call, "as_tuple")
    flag = False
    if as_tuple is not None:
        if not (isinstance(as_tuple.value, cst.Name) and as_tuple.value.value in ("True", "False")):
            return None
        flag = as_tuple.value.value == "True"
    if qualified in ("torch.nonzero", "torch.argwhere"):
        if len(args) != 1 or len(call.args) != 1 + (as_tuple is not None):
            return None
        return args[0].value, flag
    if qualified == "torch.where":
        if len(call.args) != 1 or len(args) != 1:
            return None
        return args[0].value, True
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("nonzero", "argwhere"):
        if args or len(call.args) != (as_tuple is not None):
            return None
        return call.func.value, flag
    return None


def _count_use(ctx: FileContext, call: cst.Call) -> cst.BaseExpression | None:
    """`len(call)`, `call.shape[0]`, `call.size(0)` around the call: the node to replace."""
    parent = ctx.parent(call)
    if isinstance(parent, cst.Arg) and parent.keyword is None:
        outer = ctx.parent(parent)
        if (
            isinstance(outer, cst.Call)
            and isinstance(outer.func, cst.Name)
            and outer.func.value == "len"
            and len(outer.args) == 1
            and "len" not in ctx.aliases.bindings
        ):
            return outer
        return None
    if isinstance(parent, cst.Attribute) and parent.value is call:
        grand = ctx.parent(parent)
        if parent.attr.value == "shape" and isinstance(grand, cst.Subscript) and _zero_index(grand):
            return grand
        if (
            parent.attr.value == "size"
            and isinstance(grand, cst.Call)
            and grand.func is parent
            and len(grand.args) == 1
            and isinstance(grand.args[0].value, cst.Integer)
            and grand.args[0].value.value == "0"
        ):
            return grand
    return None


def _zero_index(node: cst.Subscript) -> bool:
    if len(node.slice) != 1:
        return False
    piece = node.slice[0].slice
    return (
        isinstance(piece, cst.Index)
        and isinstance(piece.value, cst.Integer)
        and (piece.value.value == "0")
    )


def _as_mask(ctx: FileContext, bindings: Bindings, subject: cst.BaseExpression) -> str:
    """The subject as a boolean mask: itself when it is one, else `subject != 0`."""
    if mask_kind(ctx, subject, bindings) in ("comparison", "operator", "call"):
        return bare(ctx, subject)
    return f"{atom(ctx, subject)} != 0"


def nonzero_fix(ctx: FileContext, bindings: Bindings, call: cst.Call) -> FixSpec | None:
    found = _subject(ctx, call)
    if found is None:
        return None
    subject, as_tuple = found
    torch_name, needs_import = torch_alias(ctx)
    counted = _count_use(ctx, call)
    if counted is not None and not as_tuple:
        # Rows of nonzero() are the nonzero elements; count them directly.
        return FixSpec(
            Applicability.UNSAFE,
            "Count with `torch.count_nonzero` (assumes the count is used as a number: it is now"
            " a tensor)",
            [
                (
                    counted,
                    fits(
                        ctx,
                        counted,
                        expression(f"{torch_name}.count_nonzero({bare(ctx, subject)})"),
                    ),
                )
            ],
            add_imports=(ImportSpec("torch"),) if needs_import else (),
        )
    if not as_tuple:
        return None
    mask = _as_mask(ctx, bindings, subject)
    parent = ctx.parent(call)
    # x[m.nonzero(as_tuple=True)] -> x[m]
    if isinstance(parent, cst.Index):
        element = ctx.parent(parent)
        subscript = ctx.parent(element) if element is not None else None
        if isinstance(subscript, cst.Subscript) and len(subscript.slice) == 1:
            return FixSpec(
                Applicability.UNSAFE,
                "Index with the mask itself (the same elements in the same order; then TPU202's"
                " rewrites apply)",
                [(call, expression(mask))],
            )
        return None
    # idx = m.nonzero(as_tuple=True), with every later use of idx an index `x[idx]`
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        target = parent.targets[0].target
        if isinstance(target, cst.Name) and _only_indexes(ctx, target.value, parent):
            return FixSpec(
                Applicability.UNSAFE,
                f"Keep the mask: every use of `{target.value}` is an index (the same elements in"
                " the same order; then TPU202's rewrites apply)",
                [(call, expression(mask))],
            )
    return None


def _only_indexes(ctx: FileContext, name: str, assign: cst.Assign) -> bool:
    """Whether every read of `name` in the function after `assign` is a whole index `x[name]`
    (and there is at least one), with no rebinding of it in between."""
    from ..shared.matchers import walk

    info = ctx.function
    if info is None:
        return False
    uses = 0
    seen_assign = False
    parents: dict[int, cst.CSTNode] = {}
    for node in walk(info.node):
        for child in _children(node):
            parents[id(child)] = node
    inside = {id(n) for n in walk(assign)}
    for node in _in_order(info.node):
        if node is assign:
            seen_assign = True
        if id(node) in inside:
            continue
        if not seen_assign or not isinstance(node, cst.Name) or node.value != name:
            continue
        holder = parents.get(id(node))
        if isinstance(holder, cst.AssignTarget) or (
            isinstance(holder, (cst.AugAssign, cst.For)) and holder.target is node
        ):
            return False
        index = holder
        element = parents.get(id(index)) if index is not None else None
        subscript = parents.get(id(element)) if element is not None else None
        if not (
            isinstance(index, cst.Index)
            and isinstance(subscript, cst.Subscript)
            and len(subscript.slice) == 1
        ):
            return False
        uses += 1
    return uses > 0 and not any(isinstance(n, (cst.Global, cst.Nonlocal)) for n in walk(info.node))


def _children(node: cst.CSTNode) -> list[cst.CSTNode]:
    from tpulint.analysis.walker import iter_children

    return list(iter_children(node))


def _in_order(root: cst.CSTNode):
    """Nodes in source order (pre-order, children left to right)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(_children(node)))


# --- torch.unique for counts --------------------------------------------------------------

_CLASS_COUNT_NAMES = ("num_classes", "n_classes", "num_class", "nclasses")


def _class_count(ctx: FileContext, bindings: Bindings) -> str | None:
    """An expression for the number of classes, when the code names one: a local or
    parameter `num_classes`, or `self.num_classes` assigned in the class."""
    for name in _CLASS_COUNT_NAMES:
        if bindings.lookup(name) is not None or bindings.is_param(name):
            return name
    klass = ctx.klass
    if klass is None:
        return None
    from ..shared.matchers import walk

    for node in walk(klass.node):
        if (
            isinstance(node, cst.AssignTarget)
            and isinstance(node.target, cst.Attribute)
            and isinstance(node.target.value, cst.Name)
            and node.target.value.value == "self"
            and node.target.attr.value in _CLASS_COUNT_NAMES
        ):
            return f"self.{node.target.attr.value}"
    return None


def unique_count_fix(ctx: FileContext, bindings: Bindings, call: cst.Call) -> FixSpec | None:
    """`len(torch.unique(y))` (the number of distinct values) as a sum over one-hot counts,
    when the number of classes is known."""
    qualified = ctx.qualify(call.func) or ""
    args = positional(call)
    if qualified == "torch.unique" and len(call.args) == 1 and args:
        subject = args[0].value
    elif (
        isinstance(call.func, cst.Attribute) and call.func.attr.value == "unique" and not call.args
    ):
        subject = call.func.value
    else:
        return None
    counted = _count_use(ctx, call)
    if counted is None:
        return None
    classes = _class_count(ctx, bindings)
    if classes is None:
        return None
    torch_name, needs_import = torch_alias(ctx)
    from .losses import _functional_prefix

    one_hot = f"{_functional_prefix(ctx, torch_name)}.one_hot"
    text = f"({one_hot}({atom(ctx, subject)}.flatten().long(), {classes}).sum(0) > 0).sum()"
    return FixSpec(
        Applicability.UNSAFE,
        f"Count the classes present with one-hot sums over all `{classes}` classes (assumes the"
        f" values are class indices in [0, {classes}); the count is now a tensor)",
        [(counted, fits(ctx, counted, expression(text)))],
        add_imports=(ImportSpec("torch"),) if needs_import else (),
    )


def shape_op_fix(ctx: FileContext, bindings: Bindings, call: cst.Call, op: str) -> FixSpec | None:
    """The rewrite for a TPU201 finding, if its use allows one."""
    complete_parents(ctx, call)
    if op in ("nonzero", "argwhere", "where"):
        return nonzero_fix(ctx, bindings, call)
    if op == "unique":
        return unique_count_fix(ctx, bindings, call)
    return None


__all__ = ["nonzero_fix", "shape_op_fix", "unique_count_fix"]

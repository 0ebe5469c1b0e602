"""Selections by a mask and the elementwise expressions around them.

A *selection* is `x[m]` (also `x[m, :]`, `x[:, m]`, `x[..., m]`: full slices around one
mask index). A *region* is the largest elementwise expression around a selection whose tensor
operands are selections by the same mask, numbers, or static tensors that broadcast the same
way against the selection and against the whole tensor (`(pred[valid] - target[valid]).abs()`,
`torch.log(p[m] + 1e-8)`, `margin - sim[m]`). A region reduced as a whole, or fed to a loss,
can be computed on the whole tensors and reduced over the mask instead.

Locals bound to a selection (`y_pred = y_pred[mask]`) are leaves too, when the rewrite of a
group of statements substitutes them (`bound.bound_fix`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.values import HOST, NUMBER

from ..shared.tensors import Bindings, is_number_literal, mask_kind, method_name, positional
from .expressions import bare, expression, torch_alias
from .shapes import (
    _ELEMENTWISE_BINARY,
    _ELEMENTWISE_FUNCTIONS,
    _ELEMENTWISE_METHODS,
    zero_dim,
)

# Methods of a tensor taking one other tensor, elementwise: `a.eq(b)`, `a.sub(b)`.
_BINARY_METHODS = frozenset(
    {"eq", "ne", "lt", "le", "gt", "ge", "add", "sub", "mul", "div", "maximum", "minimum"}
)


def _full_slice(element: cst.SubscriptElement) -> bool:
    piece = element.slice
    return (
        isinstance(piece, cst.Slice)
        and piece.lower is None
        and piece.upper is None
        and piece.step is None
    )


def _ellipsis(element: cst.SubscriptElement) -> bool:
    piece = element.slice
    return isinstance(piece, cst.Index) and isinstance(piece.value, cst.Ellipsis)


@dataclass(frozen=True)
class Selection:
    """`base[mask]` with full slices around it: `leading` full slices before the mask, or
    `trailing` (an ellipsis before it: `x[..., m]`, the mask lines up with the last
    dimensions)."""

    node: cst.Subscript
    base: cst.BaseExpression
    mask: cst.BaseExpression
    leading: int = 0
    trailing: bool = False

    @property
    def plain(self) -> bool:
        return self.leading == 0 and not self.trailing


def selection_of(node: cst.CSTNode) -> Selection | None:
    if not isinstance(node, cst.Subscript):
        return None
    elements = list(node.slice)
    masks = [
        i
        for i, e in enumerate(elements)
        if isinstance(e.slice, cst.Index) and not _ellipsis(e) and e.slice.star is None
    ]
    if len(masks) != 1:
        return None
    position = masks[0]
    before, after = elements[:position], elements[position + 1 :]
    mask = elements[position].slice.value  # type: ignore[union-attr]
    if isinstance(mask, (cst.Integer, cst.SimpleString)) or (
        isinstance(mask, cst.Name) and mask.value == "None"
    ):
        return None
    if len(before) == 1 and _ellipsis(before[0]):
        if after:
            return None
        return Selection(node, node.value, mask, trailing=True)
    if not all(_full_slice(e) for e in before):
        return None
    if not all(_full_slice(e) or _ellipsis(e) for e in after):
        return None
    return Selection(node, node.value, mask, leading=len(before))


def same_selection(ctx: FileContext, a: Selection, b: Selection) -> bool:
    return (
        a.leading == b.leading
        and a.trailing == b.trailing
        and bare(ctx, a.mask).strip() == bare(ctx, b.mask).strip()
    )


@dataclass
class Leaves:
    """What counts as "selected by the mask" in an expression: subscripts with the same
    mask and slices as `like`, and, through `locals`, reads of locals bound to such
    selections (mapped to the expression that replaces them)."""

    ctx: FileContext
    bindings: Bindings
    like: Selection
    locals: Callable[[cst.Name], cst.BaseExpression | None] | None = None

    def replacement(self, node: cst.CSTNode) -> cst.BaseExpression | None:
        """What `node` becomes outside the selection, if it is a leaf."""
        selection = selection_of(node)
        if selection is not None:
            if same_selection(self.ctx, selection, self.like):
                return selection.base
            return None
        if isinstance(node, cst.Name) and self.locals is not None:
            return self.locals(node)
        return None

    def static(self, node: cst.BaseExpression) -> bool:
        """An operand that broadcasts the same way against the selected rows and against
        the whole tensor: a number, a Python value, module state (`self.margin`, a
        parameter), or a local holding one value (`t = x.mean()`). A tensor parameter or
        local of unknown shape is not: it may already hold selected rows (a loss over the
        masked tokens only), which would not line up with the whole tensor."""
        if scalar(self.ctx, node):
            return True
        if isinstance(node, cst.Attribute):
            return _static_reference(node) and _rooted_at_self(node)
        if isinstance(node, cst.Name):
            return zero_dim(self.ctx, node, self.bindings)
        return False

    def _contains_selection(self, node: cst.CSTNode) -> bool:
        from ..shared.matchers import walk

        for inner in walk(node):
            selection = selection_of(inner)
            if selection is not None and mask_kind(self.ctx, selection.mask, self.bindings):
                return True
        return False


def _rooted_at_self(node: cst.BaseExpression) -> bool:
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name) and node.value == "self"


def _static_reference(node: cst.BaseExpression) -> bool:
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def scalar(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """A Python number, or a name or attribute that holds one (`self.margin`)."""
    if is_number_literal(node, ctx):
        return True
    return isinstance(node, (cst.Name, cst.Attribute)) and ctx.value_kind(node) in (HOST, NUMBER)


def dtype_like(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """`torch.float32`, `x.dtype`, `x.device`: arguments of conversions."""
    if isinstance(node, cst.Attribute) and node.attr.value in ("dtype", "device"):
        return True
    qualified = ctx.qualify(node) or ""
    return qualified.startswith("torch.") and qualified.count(".") == 1


def elementwise_inputs(ctx: FileContext, node: cst.Call) -> list[cst.BaseExpression] | None:
    """The tensor operands of an elementwise call (`t.abs()`, `torch.clamp(t, min=0)`,
    `torch.maximum(a, b)`, `a.eq(b)`), whose other arguments are numbers or dtypes; None
    for other calls."""
    args = positional(node)
    if not all(
        scalar(ctx, a.value) or dtype_like(ctx, a.value) for a in node.args if a.keyword is not None
    ):
        return None
    qualified = ctx.qualify(node.func)
    if qualified is not None and qualified.startswith("torch."):
        name = qualified[len("torch.") :]
        if name in _ELEMENTWISE_FUNCTIONS and args:
            if all(scalar(ctx, a.value) for a in args[1:]):
                return [args[0].value]
            return None
        if name in _ELEMENTWISE_BINARY and len(args) == 2:
            return [args[0].value, args[1].value]
        return None
    method = method_name(node)
    if method is None:
        return None
    receiver = node.func.value  # type: ignore[union-attr]
    if method in _BINARY_METHODS and len(args) == 1 and len(node.args) == 1:
        if scalar(ctx, args[0].value):
            return [receiver]
        return [receiver, args[0].value]
    if (
        method in _ELEMENTWISE_METHODS
        and method != "masked_fill"
        and all(scalar(ctx, a.value) or dtype_like(ctx, a.value) for a in args)
    ):
        return [receiver]
    return None


@dataclass
class Region:
    """An elementwise expression (`top`) whose selected operands are `leaves` (by identity:
    the node and what it becomes outside the selection)."""

    top: cst.BaseExpression
    leaves: dict[int, tuple[cst.CSTNode, cst.BaseExpression]]

    @property
    def simple(self) -> bool:
        """The region is a single leaf: nothing is computed outside the selection."""
        return len(self.leaves) == 1 and id(self.top) in self.leaves

    @property
    def bases(self) -> list[cst.BaseExpression]:
        """The leaves' unselected forms, in source order (the first one is what a widened
        mask is shaped after, so every finding of one region builds the same rewrite)."""
        order: dict[int, int] = {}
        stack: list[cst.CSTNode] = [self.top]
        from tpulint.analysis.walker import iter_children

        while stack:
            node = stack.pop()
            order[id(node)] = len(order)
            stack.extend(reversed(list(iter_children(node))))
        ranked = sorted(self.leaves.items(), key=lambda item: order.get(item[0], len(order)))
        return [replacement for _, (_node, replacement) in ranked]


def operand(
    leaves: Leaves, node: cst.BaseExpression, out: dict[int, tuple[cst.CSTNode, cst.BaseExpression]]
) -> bool:
    """Whether `node` is static, a leaf, or an elementwise expression of those with at least
    the leaves collected into `out`."""
    ctx = leaves.ctx
    replacement = leaves.replacement(node)
    if replacement is not None:
        out[id(node)] = (node, replacement)
        return True
    if selection_of(node) is not None:
        return False  # a selection by another mask
    if leaves.static(node):
        return True
    if isinstance(node, cst.UnaryOperation) and not isinstance(node.operator, cst.Not):
        return operand(leaves, node.expression, out)
    if isinstance(node, cst.BinaryOperation) and not isinstance(node.operator, cst.MatrixMultiply):
        return operand(leaves, node.left, out) and operand(leaves, node.right, out)
    if isinstance(node, cst.Call):
        inputs = elementwise_inputs(ctx, node)
        return inputs is not None and all(operand(leaves, value, out) for value in inputs)
    return False


def region_around(leaves: Leaves, start: cst.BaseExpression) -> Region:
    """The largest region containing the leaf `start`, climbing through its parents."""
    ctx = leaves.ctx
    replacement = leaves.replacement(start)
    if replacement is None:
        raise ValueError("region_around: the start is not a leaf")
    found = {id(start): (start, replacement)}
    top: cst.BaseExpression = start
    while True:
        grown = _grow(leaves, top, ctx.parent(top), found)
        if grown is None:
            return Region(top, found)
        top = grown


def _grow(
    leaves: Leaves,
    current: cst.BaseExpression,
    parent: cst.CSTNode | None,
    found: dict[int, tuple[cst.CSTNode, cst.BaseExpression]],
) -> cst.BaseExpression | None:
    ctx = leaves.ctx
    extra: dict[int, tuple[cst.CSTNode, cst.BaseExpression]] = {}
    grown: cst.BaseExpression | None = None
    if isinstance(parent, cst.UnaryOperation) and not isinstance(parent.operator, cst.Not):
        grown = parent
    elif isinstance(parent, cst.BinaryOperation) and not isinstance(
        parent.operator, cst.MatrixMultiply
    ):
        other = parent.right if parent.left is current else parent.left
        if operand(leaves, other, extra):
            grown = parent
    elif isinstance(parent, cst.Attribute) and parent.value is current:
        call = ctx.parent(parent)
        if isinstance(call, cst.Call) and call.func is parent:
            inputs = elementwise_inputs(ctx, call)
            if inputs is not None and all(
                value is current or operand(leaves, value, extra) for value in inputs
            ):
                grown = call
    elif isinstance(parent, cst.Arg) and parent.keyword is None and not parent.star:
        call = ctx.parent(parent)
        if isinstance(call, cst.Call):
            inputs = elementwise_inputs(ctx, call)
            if (
                inputs is not None
                and any(value is current for value in inputs)
                and all(value is current or operand(leaves, value, extra) for value in inputs)
            ):
                grown = call
    if grown is not None:
        found.update(extra)
    return grown


class _Unselect(cst.CSTTransformer):
    """Replaces each leaf (by identity) with its replacement."""

    def __init__(self, replacements: dict[int, cst.BaseExpression]) -> None:
        super().__init__()
        self._replacements = replacements

    def on_visit(self, node: cst.CSTNode) -> bool:
        return id(node) not in self._replacements

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        new = self._replacements.get(id(original_node))
        if new is None:
            return updated_node
        if original_node.lpar:
            new = new.with_changes(lpar=original_node.lpar, rpar=original_node.rpar)
        elif not isinstance(new, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
            new = new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return new


def unselected(
    ctx: FileContext, region: Region, guard: str | None = None, guarded: set[int] = frozenset()
) -> str:
    """The region's source with every leaf replaced by its unselected form; the leaves in
    `guarded` become `torch.where(guard, x, 1)`, finite where the mask is false."""
    replacements: dict[int, cst.BaseExpression] = {}
    torch_name, _ = torch_alias(ctx)
    for key, (_node, replacement) in region.leaves.items():
        if guard is not None and key in guarded:
            replacements[key] = expression(
                f"{torch_name}.where({guard}, {bare(ctx, replacement)}, 1)"
            )
        else:
            replacements[key] = replacement
    new = region.top.visit(_Unselect(replacements))
    assert isinstance(new, cst.BaseExpression)
    if new.lpar:  # it becomes an argument: its own parentheses are not needed
        new = new.with_changes(lpar=[], rpar=[])
    return ctx.module.code_for_node(new)


# Where an operand outside the mask would make the expression infinite or NaN: divisors,
# logarithms, roots, reciprocals.
_UNSAFE_INPUT_FUNCTIONS = frozenset(
    {"log", "log1p", "log2", "log10", "sqrt", "rsqrt", "reciprocal", "acos", "asin", "atanh"}
)


def guarded_leaves(
    ctx: FileContext, bindings: Bindings, region: Region, mask: cst.BaseExpression
) -> set[int]:
    """The leaves of a region that must be kept finite outside the mask: those in a
    divisor, a logarithm, a root or a reciprocal (`hist[m] / counts[m]` with `m = counts >
    0`), and those the mask tests for NaN or infinity (`t[~torch.isnan(t)]`). Outside the
    mask their values only feed the unselected branch, but a NaN or an infinity there
    would reach the gradients through the outer `torch.where`."""
    if region.simple:
        return set()
    tested = _nan_tested(ctx, bindings, mask)
    found: set[int] = set()
    for key, (node, replacement) in region.leaves.items():
        if bare(ctx, replacement).strip() in tested or _in_danger(ctx, node, region.top):
            found.add(key)
    return found


def _in_danger(ctx: FileContext, node: cst.CSTNode, top: cst.CSTNode) -> bool:
    child = node
    while child is not top:
        parent = ctx.parent(child)
        if parent is None:
            return False
        if isinstance(parent, cst.BinaryOperation):
            divides = isinstance(parent.operator, (cst.Divide, cst.FloorDivide, cst.Modulo))
            if divides and parent.right is child:
                return True
            if isinstance(parent.operator, cst.Power) and parent.left is child:
                exponent = parent.right
                if not (isinstance(exponent, cst.Integer) and int(exponent.value) >= 0):
                    return True
        if (
            isinstance(parent, cst.Attribute)
            and parent.value is child
            and parent.attr.value in _UNSAFE_INPUT_FUNCTIONS
        ):
            return True
        if isinstance(parent, cst.Arg):
            call = ctx.parent(parent)
            qualified = ctx.qualify(call.func) if isinstance(call, cst.Call) else None
            if qualified and qualified.rsplit(".", 1)[-1] in _UNSAFE_INPUT_FUNCTIONS:
                return True
        child = parent
    return False


def _nan_tested(ctx: FileContext, bindings: Bindings, mask: cst.BaseExpression) -> set[str]:
    """Code of the tensors the mask tests with isnan/isinf/isfinite or `x != x` (looking
    through locals the mask is built from)."""
    from ..shared.matchers import walk

    found: set[str] = set()
    pending: list[cst.CSTNode] = [mask]
    seen = 0
    while pending and seen < 8:
        seen += 1
        root = pending.pop()
        for node in walk(root):
            if isinstance(node, cst.Name):
                binding = bindings.lookup(node.value)
                if binding is not None and binding.value is not None:
                    pending.append(binding.value)
            _tested_by(ctx, node, found)
    return found


def _tested_by(ctx: FileContext, node: cst.CSTNode, found: set[str]) -> None:
    """Add the tensor `node` tests for NaN or infinity (`torch.isnan(t)`, `t != t`)."""
    if isinstance(node, cst.Call):
        name = (ctx.qualify(node.func) or "").rsplit(".", 1)[-1]
        method = method_name(node)
        if name in ("isnan", "isinf", "isfinite", "isneginf", "isposinf") and node.args:
            found.add(bare(ctx, node.args[0].value).strip())
        elif method in ("isnan", "isinf", "isfinite") and not node.args:
            found.add(bare(ctx, node.func.value).strip())  # type: ignore[union-attr]
    elif isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
        left, right = node.left, node.comparisons[0].comparator
        if isinstance(node.comparisons[0].operator, cst.NotEqual) and (
            bare(ctx, left).strip() == bare(ctx, right).strip()
        ):
            found.add(bare(ctx, left).strip())

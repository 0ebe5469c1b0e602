"""How a mask is written in a rewrite, given what is provable about its shape.

Indexing lines the mask up with the leading dimensions of `x` (after the full slices before
it), while `torch.where` and `masked_fill` broadcast it from the trailing ones. The short form
`torch.where(m, x, 0)` is therefore exact only when `m` has `x`'s shape (or, for `x[..., m]`,
when the mask is meant for the last dimensions anyway); otherwise the mask is widened to
`m.reshape(m.shape + (1,) * (x.dim() - m.dim()))`, exact for every mask indexing accepts,
and counts of selected elements are scaled by the size of the dimensions it does not cover.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from tpulint.analysis.context import FileContext

from ..shared.tensors import Bindings, is_number_literal, is_torch_tensor
from .expressions import atom, bare
from .regions import Selection, elementwise_inputs
from .shapes import same_shape, shape_key


def _broadcast_leaves(
    ctx: FileContext, node: cst.BaseExpression, bindings: Bindings, depth: int = 0
) -> list[cst.BaseExpression] | None:
    """The tensor operands of an elementwise (broadcasting) mask expression: `x >= t` ->
    [x, t]; None when some part is not elementwise."""
    if depth > 10:
        return None
    d = depth + 1
    if is_number_literal(node, ctx):
        return []
    if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
        left = _broadcast_leaves(ctx, node.left, bindings, d)
        right = _broadcast_leaves(ctx, node.comparisons[0].comparator, bindings, d)
        return None if left is None or right is None else left + right
    if isinstance(node, cst.UnaryOperation) and not isinstance(node.operator, cst.Not):
        return _broadcast_leaves(ctx, node.expression, bindings, d)
    if isinstance(node, cst.BinaryOperation) and not isinstance(node.operator, cst.MatrixMultiply):
        left = _broadcast_leaves(ctx, node.left, bindings, d)
        right = _broadcast_leaves(ctx, node.right, bindings, d)
        return None if left is None or right is None else left + right
    if isinstance(node, cst.Call):
        inputs = elementwise_inputs(ctx, node)
        if inputs is None:
            return [node]
        found: list[cst.BaseExpression] = []
        for value in inputs:
            leaves = _broadcast_leaves(ctx, value, bindings, d)
            if leaves is None:
                return None
            found += leaves
        return found
    if isinstance(node, cst.Name):
        binding = bindings.lookup(node.value)
        if binding is not None and binding.value is not None and binding.unpack_index is None:
            inner = _broadcast_leaves(ctx, binding.value, bindings, d)
            if inner is not None and all(
                _unchanged_since(bindings, leaf, binding.seq) for leaf in inner
            ):
                return [*inner, node]
        return [node]
    return [node]


def _unchanged_since(bindings: Bindings, node: cst.BaseExpression, seq: int) -> bool:
    """Whether the names read by `node` kept the binding they had at `seq`."""
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name) and bindings.last_seq(current.value) > seq:
            return False
        if isinstance(current, (cst.Attribute, cst.Subscript)):
            stack.append(current.value)
        elif isinstance(current, cst.Call):
            stack.append(current.func)
            stack.extend(a.value for a in current.args)
        elif isinstance(current, cst.BinaryOperation):
            stack += [current.left, current.right]
        elif isinstance(current, cst.UnaryOperation):
            stack.append(current.expression)
    return True


def mask_matches(
    ctx: FileContext, mask: cst.BaseExpression, base: cst.BaseExpression, bindings: Bindings
) -> bool:
    """Whether `mask` provably has `base`'s shape when `base[mask]` is valid: the same shape
    key, or an elementwise mask computed from `base` itself (broadcasting only adds
    dimensions, and indexing allows no more than `base` has: `x[x >= t]`)."""
    if same_shape(ctx, mask, base, bindings):
        return True
    leaves = _broadcast_leaves(ctx, mask, bindings)
    if not leaves:
        return False
    base_code = bare(ctx, base).strip()
    base_key = shape_key(ctx, base, bindings)
    for leaf in leaves:
        if bare(ctx, leaf).strip() == base_code:
            return True
        if (
            base_key is not None
            and base_key != "scalar"
            and shape_key(ctx, leaf, bindings) == base_key
        ):
            return True
    return False


@dataclass
class MaskForm:
    """The mask as the rewrites write it."""

    ctx: FileContext
    node: cst.BaseExpression
    base: cst.BaseExpression
    matches: bool  # provably the shape of `base`
    leading: int  # full slices before the mask in the selection
    trailing: bool  # `x[..., m]`
    # Selected values not known to be torch tensors (they may be numpy arrays).
    untyped: list[cst.BaseExpression]

    @property
    def where(self) -> str:
        """The mask inside `torch.where` / `masked_fill_` (broadcast over `base`)."""
        m = bare(self.ctx, self.node)
        if (self.matches and self.leading == 0) or self.trailing:
            return m
        m = atom(self.ctx, self.node)
        skipped = f" - {self.leading}" if self.leading else ""
        base = atom(self.ctx, self.base)
        return f"{m}.reshape({m}.shape + (1,) * ({base}.dim(){skipped} - {m}.dim()))"

    @property
    def plain(self) -> bool:
        return self.leading == 0 and not self.trailing

    @property
    def rows(self) -> str | None:
        """The number of selected rows (`len(x[m])`), when the mask starts at dimension 0."""
        return f"{atom(self.ctx, self.node)}.sum()" if self.plain else None

    @property
    def count(self) -> str:
        """The number of selected elements: `x[m].numel()`."""
        m = atom(self.ctx, self.node)
        if self.matches and self.plain:
            return f"{m}.sum()"
        return f"({m}.sum() * ({atom(self.ctx, self.base)}.numel() // {m}.numel()))"

    @property
    def reads_base_again(self) -> bool:
        """Whether the forms read `base` a second time (widening, scaled counts)."""
        return not (self.matches and self.plain)

    @property
    def condition(self) -> str:
        """What the rewrite assumes about the mask (and the selected values), for the fix
        title."""
        text = f"`{_short(self.ctx, self.node)}` is a bool mask"
        if self.untyped:
            names = ", ".join(f"`{_short(self.ctx, b)}`" for b in self.untyped[:2])
            what = "are torch tensors" if len(self.untyped) > 1 else "a torch tensor"
            text += f" and {names} {what}"
        return text


def _short(ctx: FileContext, node: cst.BaseExpression) -> str:
    text = " ".join(bare(ctx, node).split())
    return text if len(text) <= 30 else text[:29] + "…"


def mask_form(
    ctx: FileContext,
    bindings: Bindings,
    selection: Selection,
    bases: list[cst.BaseExpression],
    proven: bool = False,
) -> MaskForm:
    """The form of `selection`'s mask for a rewrite over `bases` (the selected tensors)."""
    mask = selection.mask
    # The selected tensors of one elementwise expression (or loss, or assignment) have the
    # same shape after selection, so one provable match is enough for all of them.
    matches = selection.plain and (
        proven or any(mask_matches(ctx, mask, b, bindings) for b in bases)
    )
    untyped: list[cst.BaseExpression] = []
    for base in bases:
        if not is_torch_tensor(ctx, base, bindings) and all(
            bare(ctx, base) != bare(ctx, other) for other in untyped
        ):
            untyped.append(base)
    return MaskForm(ctx, mask, bases[0], matches, selection.leading, selection.trailing, untyped)

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
    F.mse_loss(p[m], t[m])          torch.where(m, F.mse_loss(p, t, reduction="none"), 0).sum()
                                    / m.sum()
    x[m] = 0                        x.masked_fill_(m, 0)
    x[m] = y[m] * 2                 x.copy_(torch.where(m, y * 2, x))

`torch.where` and `masked_fill` broadcast the mask from the trailing dimensions while
indexing matches it from the leading ones, so the short forms need `m` to have the shape of
`x`. Where that is not provable (_rewrite_shapes), the mask is widened explicitly
(`m.reshape(m.shape + (1,) * (x.dim() - m.dim()))`) and counts are scaled by the trailing
size, which is exact for any mask indexing could take.

Every function here returns a FixSpec (or None when no exact form applies); the rule decides
nothing but whether it reports. The conditions of each form are on TPU202's rule page.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.values import HOST
from tpulint.diagnostics import Applicability
from tpulint.rule import FixSpec, ImportSpec

from ._rewrite_cst import atom, bare, code, expression, fits, torch_alias, widened_mask
from ._rewrite_shapes import (
    _ELEMENTWISE_BINARY,
    _ELEMENTWISE_FUNCTIONS,
    _ELEMENTWISE_METHODS,
    same_shape,
    shape_key,
)
from ._shape_helpers import (
    Bindings,
    is_number_literal,
    is_torch_tensor,
    method_name,
    positional,
    pure_reference,
)

# --- purity: what may be evaluated twice, or unconditionally -----------------------------

# Random or stateful torch functions: never duplicate or move them.
_IMPURE_FUNCTIONS = frozenset(
    {
        "rand",
        "randn",
        "randint",
        "randperm",
        "rand_like",
        "randn_like",
        "randint_like",
        "bernoulli",
        "multinomial",
        "normal",
        "poisson",
        "dropout",
        "nn.functional.dropout",
        "nn.functional.dropout1d",
        "nn.functional.dropout2d",
        "nn.functional.dropout3d",
        "nn.functional.alpha_dropout",
        "nn.functional.gumbel_softmax",
    }
)
_PURE_METHODS = _ELEMENTWISE_METHODS | frozenset(
    {
        "sum",
        "mean",
        "max",
        "min",
        "amax",
        "amin",
        "any",
        "all",
        "numel",
        "dim",
        "size",
        "view",
        "reshape",
        "flatten",
        "squeeze",
        "unsqueeze",
        "permute",
        "transpose",
        "movedim",
        "expand",
        "expand_as",
        "logical_and",
        "logical_or",
        "logical_xor",
        "argmax",
        "argmin",
        "softmax",
        "log_softmax",
        "norm",
    }
)


def is_pure(ctx: FileContext, node: cst.BaseExpression, depth: int = 0) -> bool:
    """Whether evaluating `node` twice gives the same value and does nothing else: names,
    attributes, numbers, operators, constant subscripts and calls of pure tensor methods or
    torch functions (no random draws, no module calls, no in-place methods)."""
    if depth > 12:
        return False
    d = depth + 1
    if isinstance(node, (cst.Name, cst.Integer, cst.Float, cst.SimpleString, cst.Ellipsis)):
        return True
    if isinstance(node, cst.Attribute):
        return is_pure(ctx, node.value, d)
    if isinstance(node, cst.UnaryOperation):
        return is_pure(ctx, node.expression, d)
    if isinstance(node, cst.BinaryOperation):
        return is_pure(ctx, node.left, d) and is_pure(ctx, node.right, d)
    if isinstance(node, cst.BooleanOperation):
        return is_pure(ctx, node.left, d) and is_pure(ctx, node.right, d)
    if isinstance(node, cst.Comparison):
        return is_pure(ctx, node.left, d) and all(
            is_pure(ctx, c.comparator, d) for c in node.comparisons
        )
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(is_pure(ctx, e.value, d) for e in node.elements)
    if isinstance(node, cst.Subscript):
        if not is_pure(ctx, node.value, d):
            return False
        for element in node.slice:
            piece = element.slice
            if isinstance(piece, cst.Index):
                if not is_pure(ctx, piece.value, d):
                    return False
            else:
                for bound in (piece.lower, piece.upper, piece.step):
                    if bound is not None and not is_pure(ctx, bound, d):
                        return False
        return True
    if isinstance(node, cst.Call):
        if not all(is_pure(ctx, a.value, d) for a in node.args):
            return False
        qualified = ctx.qualify(node.func)
        if qualified is not None and qualified.startswith("torch."):
            name = qualified[len("torch.") :]
            return name not in _IMPURE_FUNCTIONS and not name.endswith("_")
        method = method_name(node)
        if method is not None:
            return method in _PURE_METHODS and is_pure(ctx, node.func.value, d)  # type: ignore[union-attr]
        return False
    return False


# --- the elementwise region around a selection -------------------------------------------


def _same_mask(ctx: FileContext, a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    return bare(ctx, a).strip() == bare(ctx, b).strip()


def _selection_mask(node: cst.CSTNode) -> cst.BaseExpression | None:
    """`m` for a subscript `x[m]` with one index element."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        piece = node.slice[0].slice
        if isinstance(piece, cst.Index) and piece.star is None:
            return piece.value
    return None


def _scalar(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """A Python number, or a name or attribute that holds one (`self.margin`)."""
    if is_number_literal(node, ctx):
        return True
    return isinstance(node, (cst.Name, cst.Attribute)) and ctx.value_kind(node) is HOST


def _region_operand(
    ctx: FileContext, node: cst.BaseExpression, mask: cst.BaseExpression, out: list[cst.Subscript]
) -> bool:
    """Whether `node` is a number or an elementwise expression over selections by `mask`
    (collected into `out`)."""
    if _scalar(ctx, node):
        return True
    selected = _selection_mask(node)
    if selected is not None:
        if _same_mask(ctx, selected, mask):
            out.append(node)  # type: ignore[arg-type]
            return True
        return False
    if isinstance(node, cst.UnaryOperation) and not isinstance(node.operator, cst.Not):
        return _region_operand(ctx, node.expression, mask, out)
    if isinstance(node, cst.BinaryOperation) and not isinstance(node.operator, cst.MatrixMultiply):
        return _region_operand(ctx, node.left, mask, out) and _region_operand(
            ctx, node.right, mask, out
        )
    if isinstance(node, cst.Call):
        inner = _elementwise_call_input(ctx, node)
        if inner is None:
            return False
        return all(_region_operand(ctx, value, mask, out) for value in inner)
    return False


def _elementwise_call_input(ctx: FileContext, node: cst.Call) -> list[cst.BaseExpression] | None:
    """The tensor operands of an elementwise call (`t.abs()`, `torch.clamp(t, min=0)`,
    `torch.maximum(a, b)`), whose other arguments are numbers; None for other calls."""
    args = positional(node)
    others_scalar = all(
        _scalar(ctx, a.value) or _dtype_like(ctx, a.value)
        for a in node.args
        if a.keyword is not None
    )
    if not others_scalar:
        return None
    qualified = ctx.qualify(node.func)
    if qualified is not None and qualified.startswith("torch."):
        name = qualified[len("torch.") :]
        if name in _ELEMENTWISE_FUNCTIONS and args:
            if all(_scalar(ctx, a.value) for a in args[1:]):
                return [args[0].value]
            return None
        if name in _ELEMENTWISE_BINARY and len(args) == 2:
            return [args[0].value, args[1].value]
        return None
    method = method_name(node)
    if (
        method in _ELEMENTWISE_METHODS
        and method != "masked_fill"
        and all(_scalar(ctx, a.value) or _dtype_like(ctx, a.value) for a in args)
    ):
        return [node.func.value]  # type: ignore[union-attr]
    return None


def _dtype_like(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """`torch.float32`, `x.dtype`, `x.device`: arguments of conversions."""
    if isinstance(node, cst.Attribute) and node.attr.value in ("dtype", "device"):
        return True
    qualified = ctx.qualify(node) or ""
    return qualified.startswith("torch.") and qualified.count(".") == 1


@dataclass
class Region:
    """The largest elementwise expression around a selection whose every tensor operand is
    a selection by the same mask: `(pred[valid] - target[valid]).abs()`."""

    top: cst.BaseExpression
    selections: list[cst.Subscript]


def region_around(ctx: FileContext, node: cst.Subscript, mask: cst.BaseExpression) -> Region:
    top: cst.BaseExpression = node
    selections = [node]
    while True:
        parent = ctx.parent(top)
        grown = _grow(ctx, top, parent, mask)
        if grown is None:
            return Region(top, selections)
        top, extra = grown
        selections += [s for s in extra if all(s is not t for t in selections)]


def _grow(
    ctx: FileContext,
    current: cst.BaseExpression,
    parent: cst.CSTNode | None,
    mask: cst.BaseExpression,
) -> tuple[cst.BaseExpression, list[cst.Subscript]] | None:
    extra: list[cst.Subscript] = []
    if isinstance(parent, cst.UnaryOperation) and not isinstance(parent.operator, cst.Not):
        return parent, extra
    if isinstance(parent, cst.BinaryOperation) and not isinstance(
        parent.operator, cst.MatrixMultiply
    ):
        other = parent.right if parent.left is current else parent.left
        if _region_operand(ctx, other, mask, extra):
            return parent, extra
        return None
    if isinstance(parent, cst.Attribute) and parent.value is current:
        call = ctx.parent(parent)
        if isinstance(call, cst.Call) and call.func is parent:
            inputs = _elementwise_call_input(ctx, call)
            if inputs is not None and len(inputs) == 1:
                return call, extra
        return None
    if isinstance(parent, cst.Arg) and parent.keyword is None and not parent.star:
        call = ctx.parent(parent)
        if isinstance(call, cst.Call) and ctx.qualify(call.func):
            inputs = _elementwise_call_input(ctx, call)
            if inputs is None or all(i is not current for i in inputs):
                return None
            for value in inputs:
                if value is not current and not _region_operand(ctx, value, mask, extra):
                    return None
            return call, extra
    return None


class _Unselect(cst.CSTTransformer):
    """Replaces each selection `x[m]` (by identity) with `x`, or, for the guarded ones,
    with `torch.where(m, x, 1)`."""

    def __init__(
        self, selections: list[cst.Subscript], guarded: dict[int, cst.BaseExpression]
    ) -> None:
        super().__init__()
        self._ids = {id(s) for s in selections}
        self._guarded = guarded

    def on_visit(self, node: cst.CSTNode) -> bool:
        return id(node) not in self._ids

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        if id(original_node) in self._ids:
            value = self._guarded.get(id(original_node), original_node.value)
            if original_node.lpar:
                value = value.with_changes(lpar=original_node.lpar, rpar=original_node.rpar)
            return value
        return updated_node


def unselected(
    ctx: FileContext, region: Region, guard: str | None = None, guarded: set[int] = frozenset()
) -> str:
    """The region's source with every selection `x[m]` replaced by `x`; the selections in
    `guarded` become `torch.where(guard, x, 1)`, finite where the mask is false."""
    replacements: dict[int, cst.BaseExpression] = {}
    if guard is not None and guarded:
        torch_name, _ = torch_alias(ctx)
        for selection in region.selections:
            if id(selection) in guarded:
                replacements[id(selection)] = expression(
                    f"{torch_name}.where({guard}, {bare(ctx, selection.value)}, 1)"
                )
    new = region.top.visit(_Unselect(region.selections, replacements))
    assert isinstance(new, cst.BaseExpression)
    if new.lpar:  # it becomes an argument: its own parentheses are not needed
        new = new.with_changes(lpar=[], rpar=[])
    return ctx.module.code_for_node(new)


# Where an operand outside the mask would make the expression infinite or NaN: divisors,
# logarithms, roots, reciprocals.
_UNSAFE_INPUT_FUNCTIONS = frozenset(
    {"log", "log1p", "log2", "log10", "sqrt", "rsqrt", "reciprocal", "acos", "asin", "atanh"}
)


def guarded_selections(
    ctx: FileContext, bindings: Bindings, region: Region, mask: cst.BaseExpression
) -> set[int]:
    """The selections of a region that must be kept finite outside the mask: those in a
    divisor, a logarithm, a root or a reciprocal (`hist[m] / counts[m]` with `m = counts >
    0`), and those the mask tests for NaN or infinity (`t[~torch.isnan(t)]`). Outside the
    mask their values only feed the unselected branch, but a NaN or an infinity there
    would reach the gradients through the outer `torch.where`."""
    if region.top is region.selections[0]:
        return set()
    tested = _nan_tested(ctx, bindings, mask)
    found: set[int] = set()
    for selection in region.selections:
        if bare(ctx, selection.value).strip() in tested or _in_danger(ctx, selection, region.top):
            found.add(id(selection))
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
    from ._common import walk

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


# --- how the mask lines up with the selected tensors ------------------------------------


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
        inputs = _elementwise_call_input(ctx, node)
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
class _Mask:
    """The mask as the rewrites write it: `where` is its form inside `torch.where` (widened
    when its shape is not provably the tensor's), `count(base)` the number of selected
    elements of `base` as an expression."""

    ctx: FileContext
    node: cst.BaseExpression
    base: cst.BaseExpression
    matches: bool
    # Selected values not known to be torch tensors (they may be numpy arrays).
    untyped: list[cst.BaseExpression]

    @property
    def where(self) -> str:
        if self.matches:
            return bare(self.ctx, self.node)
        return widened_mask(self.ctx, self.node, self.base)

    @property
    def fill(self) -> str:
        return self.where

    @property
    def rows(self) -> str:
        """The number of selected rows: `len(x[m])`."""
        return f"{atom(self.ctx, self.node)}.sum()"

    @property
    def count(self) -> str:
        """The number of selected elements: `x[m].numel()`."""
        m = atom(self.ctx, self.node)
        if self.matches:
            return f"{m}.sum()"
        return f"({m}.sum() * ({atom(self.ctx, self.base)}.numel() // {m}.numel()))"

    @property
    def condition(self) -> str:
        """What the rewrite assumes about the mask (and the selected values), for the fix
        title."""
        text = f"`{bare(self.ctx, self.node).strip()}` is a bool mask"
        if self.untyped:
            names = ", ".join(f"`{_short(self.ctx, b)}`" for b in self.untyped[:2])
            text += (
                f" and {names} {'are torch tensors' if len(self.untyped) > 1 else 'a torch tensor'}"
            )
        return text


def _short(ctx: FileContext, node: cst.BaseExpression) -> str:
    text = " ".join(bare(ctx, node).split())
    return text if len(text) <= 30 else text[:29] + "…"


def _mask(
    ctx: FileContext,
    bindings: Bindings,
    mask: cst.BaseExpression,
    bases: list[cst.BaseExpression],
    proven: bool,
) -> _Mask:
    # The selected tensors of one elementwise expression (or loss, or assignment) have the
    # same shape after selection, so one provable match is enough for all of them.
    matches = proven or any(mask_matches(ctx, mask, b, bindings) for b in bases)
    untyped: list[cst.BaseExpression] = []
    for base in bases:
        if not is_torch_tensor(ctx, base, bindings) and all(
            bare(ctx, base) != bare(ctx, other) for other in untyped
        ):
            untyped.append(base)
    return _Mask(ctx, mask, bases[0], matches, untyped)


# --- reads: reductions and losses -------------------------------------------------------

_REDUCTION_METHODS = {
    "sum": "sum",
    "mean": "mean",
    "max": "max",
    "min": "min",
    "amax": "max",
    "amin": "min",
    "numel": "numel",
}
_REDUCTION_FUNCTIONS = {
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
            kind = _REDUCTION_METHODS.get(parent.attr.value)
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
            if "len" not in ctx.aliases.bindings:
                return call, "rows"
            return None
        qualified = ctx.qualify(call.func) or ""
        if qualified.startswith("torch.") and qualified.count(".") == 1:
            kind = _REDUCTION_FUNCTIONS.get(qualified[len("torch.") :])
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


def read_fix(
    ctx: FileContext,
    bindings: Bindings,
    node: cst.Subscript,
    mask: cst.BaseExpression,
    *,
    proven: bool,
) -> FixSpec | None:
    """The rewrite of a selection `x[m]` that is only reduced or fed to a loss; None when
    its use is something else (the selection itself is needed)."""
    if _selection_mask(node) is None:
        return None
    region = region_around(ctx, node, mask)
    bases = [s.value for s in region.selections]
    assign = ctx.parent(region.top)
    if isinstance(assign, cst.Assign) and assign.value is region.top and len(assign.targets) == 1:
        # `x[m] = y[m] * 2`: the read is part of the write's rewrite.
        target = assign.targets[0].target
        written = _selection_mask(target)
        if written is not None and _same_mask(ctx, written, mask):
            return write_fix(ctx, bindings, target, written, proven=False)  # type: ignore[arg-type]
        return None
    reduction = _reduction(ctx, region.top)
    if reduction is not None:
        return _reduction_fix(ctx, bindings, region, reduction, mask, bases, proven)
    from ._rewrites_losses import loss_fix

    return loss_fix(ctx, bindings, region, mask)


def _reduction_fix(
    ctx: FileContext,
    bindings: Bindings,
    region: Region,
    reduction: tuple[cst.BaseExpression, str],
    mask: cst.BaseExpression,
    bases: list[cst.BaseExpression],
    proven: bool,
) -> FixSpec | None:
    outer, kind = reduction
    simple = region.top is region.selections[0]
    info = _mask(ctx, bindings, mask, bases, proven and simple)
    torch_name, needs_import = torch_alias(ctx)
    body = unselected(ctx, region)
    # The mask is read more than once by every form but the plain sum and max/min.
    reads_mask_twice = kind in ("mean", "numel") or not info.matches
    if reads_mask_twice and not is_pure(ctx, mask):
        return None
    if not info.matches and not all(is_pure(ctx, b) for b in bases):
        return None
    where = info.where
    guarded = guarded_selections(ctx, bindings, region, mask)
    if guarded:
        body = unselected(ctx, region, where, guarded)
    if kind == "sum":
        text = f"{torch_name}.where({where}, {body}, 0).sum()"
        title = "Use a masked sum: `torch.where(m, x, 0).sum()`"
    elif kind == "mean":
        text = f"{torch_name}.where({where}, {body}, 0).sum() / {info.count}"
        title = "Use a masked mean: the masked sum over the mask's count"
    elif kind in ("max", "min"):
        fill = f"-{torch_name}.inf" if kind == "max" else f"{torch_name}.inf"
        text = f"{torch_name}.where({where}, {body}, {fill}).{kind}()"
        shown = fill.replace(torch_name, "torch")
        title = f"Use a masked {kind}: `torch.where(m, x, {shown}).{kind}()`"
    elif kind == "numel":
        text = info.count
        title = "Count the mask instead of the selection"
        needs_import = False
    else:  # rows: len(x[m]), x[m].shape[0], x[m].size(0)
        text = info.rows
        title = "Count the mask instead of the selection"
        needs_import = False
    # Safe (applied by `fix --apply`) only for the exact forms of the first release: a plain
    # sum or mean of `x[m]` whose mask is provably elementwise of `x`.
    safe = proven and simple and kind in ("sum", "mean")
    conditions = [] if safe else _read_conditions(ctx, kind, info, region)
    return FixSpec(
        Applicability.SAFE if safe else Applicability.UNSAFE,
        title + (f" (assumes {'; '.join(conditions)})" if conditions else ""),
        [(outer, fits(ctx, outer, expression(text)))],
        add_imports=_imports(needs_import and kind not in ("numel", "rows")),
    )


def _read_conditions(ctx: FileContext, kind: str, info: _Mask, region: Region) -> list[str]:
    conditions = [info.condition]
    if kind in ("max", "min"):
        conditions.append("a non-empty selection (an empty one raised; this gives ±inf)")
    if kind in ("numel", "rows"):
        conditions.append("the count is used as a number (it is now a tensor)")
    if region.top is not region.selections[0]:
        conditions.append("the expression is finite where the mask is false")
    return conditions


# --- writes ------------------------------------------------------------------------------


def write_fix(
    ctx: FileContext,
    bindings: Bindings,
    node: cst.Subscript,
    mask: cst.BaseExpression,
    *,
    proven: bool,
) -> FixSpec | None:
    """`x[m] = v` as `x.masked_fill_(m, v)` (a number) or `x.copy_(torch.where(m, e, x))`
    (an elementwise expression `e` over selections by the same mask)."""
    target = ctx.parent(node)
    assign = ctx.parent(target) if target is not None else None
    if (
        _selection_mask(node) is None
        or not isinstance(assign, cst.Assign)
        or len(assign.targets) != 1
        or assign.targets[0] is not target
    ):
        return None
    base = node.value
    if not (pure_reference(base) or is_pure(ctx, base)):
        return None
    value = assign.value
    selections: list[cst.Subscript] = []
    if is_number_literal(value, ctx) or (
        isinstance(value, (cst.Name, cst.Attribute)) and ctx.value_kind(value) is HOST
    ):
        info = _mask(ctx, bindings, mask, [base], proven)
        if not info.matches and not is_pure(ctx, mask):
            return None
        call = f"{atom(ctx, base)}.masked_fill_({info.fill}, {bare(ctx, value)})"
        safe = proven and is_number_literal(value, ctx)
        conditions = [] if safe else [info.condition]
        if not is_number_literal(value, ctx):
            conditions.append(f"`{bare(ctx, value).strip()}` is a number or a 0-dim tensor")
        return FixSpec(
            Applicability.SAFE if safe else Applicability.UNSAFE,
            "Use `masked_fill_`" + (f" (assumes {'; '.join(conditions)})" if conditions else ""),
            [(assign, cst.Expr(expression(call)))],
        )
    if not _region_operand(ctx, value, mask, selections) or not selections:
        return None
    if not is_pure(ctx, mask) or not all(is_pure(ctx, s.value) for s in selections):
        return None
    info = _mask(ctx, bindings, mask, [base, *(s.value for s in selections)], False)
    torch_name, needs_import = torch_alias(ctx)
    region = Region(value, selections)
    body = unselected(ctx, region, info.where, guarded_selections(ctx, bindings, region, mask))
    call = f"{atom(ctx, base)}.copy_({torch_name}.where({info.where}, {body}, {bare(ctx, base)}))"
    conditions = [info.condition, "the right-hand side is finite where the mask is false"]
    return FixSpec(
        Applicability.UNSAFE,
        f"Write with `torch.where` (assumes {'; '.join(conditions)})",
        [(assign, cst.Expr(expression(call)))],
        add_imports=_imports(needs_import),
    )


# --- shared with the loss rewrites ----------------------------------------------------


def mask_for(
    ctx: FileContext, bindings: Bindings, mask: cst.BaseExpression, bases: list[cst.BaseExpression]
) -> _Mask:
    return _mask(ctx, bindings, mask, bases, False)


__all__ = [
    "Region",
    "bare",
    "code",
    "is_pure",
    "mask_for",
    "mask_matches",
    "read_fix",
    "region_around",
    "unselected",
    "write_fix",
]

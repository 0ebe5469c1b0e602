"""Helpers shared by the host-sync (TPU1xx) and dynamic-shape (TPU2xx) rules.

- `Bindings`: what each local name was last assigned, in source order, per function, so a
  rule can look through `mask = x > 0` when it meets `y[mask]`.
- `mask_kind`: whether an index expression is a boolean mask (comparison, `~m`, `m & n`,
  `m * n` of masks, `.bool()`, `torch.isnan`, `torch.logical_and`, masks returned by helpers
  of the project, names bound to those, names that say "mask"); `mask_in_index` finds the
  mask element of a subscript; `elementwise_mask` proves a mask has its base's shape (the
  condition for rewrites that need no broadcasting).
- `shape_source` / `value_size`: where a number comes from (a tensor's shape, or a tensor's
  values), for the loop and size rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.values import CPU, DEVICE, ValueKind
from tpulint.analysis.walker import iter_children

# --- local bindings ---------------------------------------------------------------------


@dataclass
class Binding:
    value: cst.BaseExpression | None  # the assigned expression (None: a loop target, etc.)
    seq: int  # order of the assignment in the walk
    unpack_index: int | None = None  # `a, b = value`: the position of the name
    node: cst.CSTNode | None = None  # the assignment statement's small node


@dataclass
class _Scope:
    names: dict[str, Binding] = field(default_factory=dict)
    params: set[str] = field(default_factory=set)
    # Annotation nodes; their text is generated only when a rule asks (`annotation`).
    param_annotations: dict[str, cst.BaseExpression] = field(default_factory=dict)


class Bindings:
    """Last binding of each name, per function scope (closures see the enclosing ones)."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.scopes: list[_Scope] = [_Scope()]
        self.seq = 0

    def enter_function(self, node: cst.FunctionDef) -> None:
        scope = _Scope()
        params = node.params
        for param in [*params.posonly_params, *params.params, *params.kwonly_params]:
            scope.params.add(param.name.value)
            if param.annotation is not None:
                scope.param_annotations[param.name.value] = param.annotation.annotation
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                scope.params.add(star.name.value)
        self.scopes.append(scope)

    def leave_function(self) -> None:
        if len(self.scopes) > 1:
            self.scopes.pop()

    def bind(
        self, target: cst.BaseExpression, value: cst.BaseExpression | None, node: cst.CSTNode
    ) -> None:
        self.seq += 1
        scope = self.scopes[-1]
        if isinstance(target, cst.Name):
            scope.names[target.value] = Binding(value, self.seq, None, node)
            scope.params.discard(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for index, element in enumerate(target.elements):
                inner = element.value
                if isinstance(inner, cst.Name):
                    scope.names[inner.value] = Binding(value, self.seq, index, node)
                    scope.params.discard(inner.value)
                elif isinstance(inner, (cst.Tuple, cst.List, cst.StarredElement)):
                    self.bind(
                        inner if not isinstance(inner, cst.StarredElement) else inner.value,
                        None,
                        node,
                    )

    def lookup(self, name: str) -> Binding | None:
        for scope in reversed(self.scopes):
            binding = scope.names.get(name)
            if binding is not None:
                return binding
            if name in scope.params:
                return None
        return None

    def is_param(self, name: str) -> bool:
        for scope in reversed(self.scopes):
            if name in scope.names:
                return False
            if name in scope.params:
                return True
        return False

    def annotation(self, name: str) -> str | None:
        for scope in reversed(self.scopes):
            if name in scope.names:
                return None
            if name in scope.params:
                annotation = scope.param_annotations.get(name)
                if annotation is None:
                    return None
                return self.module.code_for_node(annotation).replace(" ", "")
        return None

    def last_seq(self, name: str) -> int:
        binding = self.lookup(name)
        return binding.seq if binding is not None else 0

    # Handlers a rule forwards to (rules call these from their own visit/leave methods).
    def on_assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            inner, value = target.target, node.value
            if (
                isinstance(inner, (cst.Tuple, cst.List))
                and isinstance(value, (cst.Tuple, cst.List))
                and len(inner.elements) == len(value.elements)
                and not any(
                    isinstance(e, cst.StarredElement) for e in (*inner.elements, *value.elements)
                )
            ):
                for t, v in zip(inner.elements, value.elements, strict=True):
                    self.bind(t.value, v.value, node)
                continue
            self.bind(inner, value, node)

    def on_ann_assign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.bind(node.target, node.value, node)

    def on_aug_assign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name):
            # `m &= other`: keep the original binding's meaning for masks, mark it changed.
            previous = self.lookup(node.target.value)
            value = (
                cst.BinaryOperation(
                    left=node.target,
                    operator=_AUG_TO_BIN.get(type(node.operator), cst.Add()),
                    right=node.value,
                )
                if previous is not None
                else None
            )
            self.bind(node.target, value, node)

    def on_for(self, node: cst.For) -> None:
        self.bind(node.target, None, node)


_AUG_TO_BIN = {
    cst.BitAndAssign: cst.BitAnd(),
    cst.BitOrAssign: cst.BitOr(),
    cst.BitXorAssign: cst.BitXor(),
    cst.AddAssign: cst.Add(),
    cst.MultiplyAssign: cst.Multiply(),
}


class TrackingRule:
    """Mixin: gives the rule `self.bindings` (rules list it before `Rule` in their bases).

    All tracking rules of a file share one Bindings, kept current by the first of them to
    be created (the owner); the others' handlers do nothing, so the work is done once."""

    ctx: FileContext

    @property
    def bindings(self) -> Bindings:
        return self._shared()[0]

    def _shared(self) -> tuple[Bindings, object]:
        shared = self.ctx.shared.get("shape_bindings")
        if shared is None:
            shared = self.ctx.shared["shape_bindings"] = (Bindings(self.ctx.module), self)
        return shared

    def _owned(self) -> Bindings | None:
        bindings, owner = self._shared()
        return bindings if owner is self else None

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if (bindings := self._owned()) is not None:
            bindings.enter_function(node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        if (bindings := self._owned()) is not None:
            bindings.leave_function()

    def leave_Assign(self, node: cst.Assign) -> None:
        if (bindings := self._owned()) is not None:
            bindings.on_assign(node)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        if (bindings := self._owned()) is not None:
            bindings.on_ann_assign(node)

    def leave_AugAssign(self, node: cst.AugAssign) -> None:
        if (bindings := self._owned()) is not None:
            bindings.on_aug_assign(node)

    def visit_For(self, node: cst.For) -> None:
        if (bindings := self._owned()) is not None:
            bindings.on_for(node)


# --- small matchers ---------------------------------------------------------------------


def method_name(node: cst.BaseExpression) -> str | None:
    """`m` for `<expr>.m(...)`."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        return node.func.attr.value
    return None


def receiver(node: cst.Call) -> cst.BaseExpression:
    assert isinstance(node.func, cst.Attribute)
    return node.func.value


def torch_name(ctx: FileContext, node: cst.Call) -> str | None:
    """`nonzero` for `torch.nonzero(...)` (through aliases), else None."""
    qualified = ctx.qualify(node.func)
    if qualified is None or not qualified.startswith("torch."):
        return None
    return qualified[len("torch.") :]


def positional(node: cst.Call) -> list[cst.Arg]:
    return [a for a in node.args if a.keyword is None and not a.star]


def keyword(node: cst.Call, name: str) -> cst.Arg | None:
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def is_number_literal(node: cst.BaseExpression, ctx: FileContext | None = None) -> bool:
    """A Python number written in the code: `0`, `-1e9`, `float("-inf")`, `math.inf`,
    `True`."""
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        return is_number_literal(node.expression, ctx)
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value in ("float", "int")
        and len(node.args) == 1
        and isinstance(node.args[0].value, cst.SimpleString)
    ):
        return True
    if ctx is not None and isinstance(node, cst.Attribute):
        qualified = ctx.qualify(node)
        if qualified in ("math.inf", "math.pi", "math.e", "math.nan", "numpy.inf", "numpy.nan"):
            return True
    return False


def same_code(ctx: FileContext, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    return ctx.module.code_for_node(a).strip() == ctx.module.code_for_node(b).strip()


def pure_reference(node: cst.BaseExpression) -> bool:
    """A name or attribute chain (`x`, `self.buf`, `out.logits`): reading it twice reads
    the same object."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def root_name(node: cst.BaseExpression) -> str | None:
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def is_self_attribute(node: cst.BaseExpression) -> bool:
    """`self.x` / `self.a.b`: module state (buffers, sub-modules, lists), not step inputs."""
    return root_name(node) == "self" and isinstance(node, (cst.Attribute, cst.Subscript))


# --- boolean masks ----------------------------------------------------------------------

_MASK_WORDS = frozenset({"mask", "masks", "msk", "keep", "valid", "sel", "selected", "selection"})
_STRONG_WORDS = frozenset({"mask", "masks", "msk"})
_NOT_MASK_WORDS = frozenset(
    {
        "idx",
        "idxs",
        "index",
        "indices",
        "ids",
        "id",
        "pos",
        "position",
        "positions",
        "len",
        "lens",
        "length",
        "lengths",
        "count",
        "counts",
        "num",
        "size",
        "sizes",
        "ratio",
        "prob",
        "probs",
        "probability",
        "value",
        "values",
        "token",
        "tokens",
        "fill",
        "shape",
        "dim",
        "rate",
        "type",
        "fn",
        "func",
        "threshold",
        "thresh",
        "weight",
        "weights",
        "sum",
        "mean",
        "fraction",
        "frac",
        "percent",
        "scale",
        "emb",
        "embedding",
        "embeddings",
        "list",
        "dict",
        "key",
        "keys",
        "name",
        "names",
        "mode",
        "strategy",
        "config",
        "cfg",
        "generator",
        "module",
        "layer",
        "kind",
        "width",
        "start",
        "end",
        "loss",
        "losses",
        "score",
        "scores",
        "logits",
        "feats",
        "features",
        "pred",
        "preds",
        "target",
        "targets",
        "min",
        "max",
        "steps",
        "step",
        "epochs",
        "path",
        "file",
        "dir",
        "str",
        "text",
        "labels",
        "label",
        "field",
        "fields",
        "col",
        "column",
        "columns",
        "attr",
        "param",
        "params",
        "arg",
        "args",
    }
)
_TORCH_MASK_FUNCTIONS = frozenset(
    {
        "isnan",
        "isinf",
        "isfinite",
        "isneginf",
        "isposinf",
        "isreal",
        "isin",
        "logical_and",
        "logical_or",
        "logical_not",
        "logical_xor",
        "eq",
        "ne",
        "gt",
        "lt",
        "ge",
        "le",
        "greater",
        "less",
        "greater_equal",
        "less_equal",
        "not_equal",
        "signbit",
        "isclose",
        "bernoulli_mask",
    }
)
_MASK_METHODS = frozenset(
    {
        "bool",
        "isnan",
        "isinf",
        "isfinite",
        "isneginf",
        "isposinf",
        "logical_not",
        "logical_and",
        "logical_or",
        "logical_xor",
        "eq",
        "ne",
        "gt",
        "lt",
        "ge",
        "le",
        "greater",
        "less",
        "greater_equal",
        "less_equal",
        "not_equal",
        "signbit",
        "isclose",
    }
)
# Methods and functions whose result is a mask when their input is one.
_MASK_PRESERVING = frozenset(
    {
        "view",
        "reshape",
        "flatten",
        "squeeze",
        "unsqueeze",
        "expand",
        "expand_as",
        "repeat",
        "contiguous",
        "detach",
        "to",
        "cuda",
        "clone",
        "t",
        "transpose",
        "permute",
        "view_as",
        "reshape_as",
        "tril",
        "triu",
        "diagonal",
        "roll",
        "flip",
        "narrow",
        "select",
        "logical_not",
        "type_as",
        "cpu",
        "xla",
        "repeat_interleave",
        "movedim",
        "swapaxes",
        "ravel",
    }
)
# Results that are integer index tensors (or floats), never boolean masks.
_INDEX_METHODS = frozenset(
    {
        "long",
        "int",
        "float",
        "half",
        "double",
        "bfloat16",
        "short",
        "byte",
        "argsort",
        "argmax",
        "argmin",
        "nonzero",
        "argwhere",
        "multinomial",
        "topk",
        "sort",
        "searchsorted",
        "bucketize",
        "sum",
        "cumsum",
        "numel",
        "size",
        "tolist",
        "item",
        "max",
        "min",
        "mean",
        "randperm",
        "arange",
        "nms",
        "batched_nms",
        "where",
        "unique",
        "indices",
        "type",
        "new_tensor",
        "squeeze_",
        "softmax",
        "sigmoid",
    }
)


def name_mask_strength(name: str) -> str | None:
    """ "strong" for `mask`, `loss_mask`, `masks`; "weak" for `keep`, `valid`, `is_target`;
    None for other names (and for `mask_idx`, `mask_ratio`...)."""
    tokens = [t for t in re.split(r"_+", name.lower()) if t]
    if not tokens:
        return None
    if any(t in _NOT_MASK_WORDS for t in tokens):
        return None
    last = tokens[-1]
    if last in _STRONG_WORDS or (
        last in ("t", "flat", "flatten", "flattened", "bool", "expanded")
        and any(t in _STRONG_WORDS for t in tokens)
    ):
        return "strong"
    if any(t in _STRONG_WORDS for t in tokens[:-1]):
        return "strong"
    if last in _MASK_WORDS or (tokens[0] in ("is", "keep", "valid") and len(tokens) > 1):
        return "weak"
    return None


def _index_results(ctx: FileContext, value: cst.BaseExpression | None) -> bool:
    """Whether an unpacked value is the results of a call that gives index tensors (or
    values and indices), never masks: `torch.nonzero(m, as_tuple=True)`, `torch.where(m)`,
    `x.sort()`, `x.topk(k)`."""
    if not isinstance(value, cst.Call):
        return False
    name = torch_name(ctx, value)
    last = name.rsplit(".", 1)[-1] if name is not None else method_name(value)
    return last in ("nonzero", "where", "argwhere", "sort", "topk", "max", "min", "unique")


def _is_bool_dtype(ctx: FileContext, node: cst.BaseExpression) -> bool:
    return ctx.qualify(node) == "torch.bool" or (
        isinstance(node, cst.Name) and node.value == "bool"
    )


def mask_kind(
    ctx: FileContext, node: cst.BaseExpression, bindings: Bindings, depth: int = 0
) -> str | None:
    """Why `node` is a boolean mask ("comparison", "operator", "call", "name"), or None."""
    if depth > 12:
        return None
    d = depth + 1
    if isinstance(node, cst.Comparison):
        if any(
            isinstance(t.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for t in node.comparisons
        ):
            return None
        operands = [node.left, *(t.comparator for t in node.comparisons)]
        kinds = [ctx.value_kind(operand) for operand in operands]
        if all(k.is_host for k in kinds):
            return None
        return "comparison"
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
        inner = node.expression
        if mask_kind(ctx, inner, bindings, d):
            return "operator"
        if (
            isinstance(inner, (cst.Name, cst.Attribute, cst.Subscript))
            and not ctx.value_kind(inner).is_host
        ):
            return "operator"
        return None
    if isinstance(node, cst.BinaryOperation) and isinstance(
        node.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)
    ):
        if mask_kind(ctx, node.left, bindings, d) or mask_kind(ctx, node.right, bindings, d):
            return "operator"
        return None
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        # `(t != 255) * (t < C)`: a product of masks is a mask (`&` spelled as `*`)
        if mask_kind(ctx, node.left, bindings, d) and mask_kind(ctx, node.right, bindings, d):
            return "operator"
        return None
    if isinstance(node, cst.Call):
        name = torch_name(ctx, node)
        if name is not None:
            last = name.rsplit(".", 1)[-1]
            if last in _TORCH_MASK_FUNCTIONS:
                return "call"
            dtype = keyword(node, "dtype")
            if dtype is not None and _is_bool_dtype(ctx, dtype.value):
                return "call"
            if last in ("any", "all") and (keyword(node, "dim") or len(positional(node)) > 1):
                return "call"
            if last in _MASK_PRESERVING and node.args:
                return mask_kind(ctx, node.args[0].value, bindings, d)
            return None
        value = ctx.call_value(node)
        if value is not None:
            # A helper of the project: its return value says whether it is a mask.
            return "helper" if value.mask and value.kind in ("device", "unknown") else None
        method = method_name(node)
        if method is None:
            return None
        if ctx.value_kind(receiver(node)).is_host:
            return None
        if method in _MASK_METHODS:
            return "call"
        if method in ("to", "type") and any(_is_bool_dtype(ctx, a.value) for a in node.args):
            return "call"
        if method in ("any", "all") and node.args:
            return "call"
        if method in _MASK_PRESERVING:
            return mask_kind(ctx, receiver(node), bindings, d)
        return None
    if isinstance(node, cst.Subscript):
        # mask[:, 0] is a mask; batch["mask"] is one by its key.
        if len(node.slice) == 1:
            index = node.slice[0].slice
            if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
                key = index.value.evaluated_value
                container = root_name(node.value) or ""
                if (
                    isinstance(key, str)
                    and name_mask_strength(key)
                    and not any(t in _NOT_MASK_WORDS for t in container.lower().split("_"))
                    and not _integer_index(ctx, node)
                ):
                    return "name"
                return None
        return mask_kind(ctx, node.value, bindings, d)
    if isinstance(node, cst.Name):
        binding = bindings.lookup(node.value)
        strength = name_mask_strength(node.value)
        if (
            binding is None
            and bindings.annotation(node.value) is None
            and ctx.string_constant(node)
        ):
            return None  # `batch[IMAGE_MASKS]` with `IMAGE_MASKS = "image_masks"`: a dict's key
        if binding is not None and binding.value is not None and binding.unpack_index is None:
            inner = mask_kind(ctx, binding.value, bindings, d)
            if inner == "name" and _integer_index(ctx, node):
                return None  # `lig_mask = batch["mask"]`, then `scatter_mean(x, lig_mask)`
            if inner:
                return inner
            if not_a_mask(ctx, binding.value) or _selected_by_mask(ctx, binding.value, bindings, d):
                return None
            if strength == "strong" and not _integer_index(ctx, node):
                return "name"
            return "operator" if _inverted_as_index(ctx, node) else None
        if binding is not None and binding.unpack_index is not None:
            if _index_results(ctx, binding.value):
                return None  # `rows, _ = torch.nonzero(m, as_tuple=True)`: index tensors
            if strength == "strong" and not _integer_index(ctx, node):
                return "name"
            return "operator" if _inverted_as_index(ctx, node) else None
        if ctx.value_kind(node).is_host and bindings.lookup(node.value) is None:
            # a parameter with a Python default, a module constant
            annotation = bindings.annotation(node.value)
            if annotation is None or "Tensor" not in annotation:
                return None
        annotation = bindings.annotation(node.value)
        if annotation is not None:
            if "BoolTensor" in annotation:
                return "name"
            if any(t in annotation for t in ("LongTensor", "IntTensor", "int", "float", "List")):
                return None
        if strength and not _integer_index(ctx, node):
            return "name"
        if _inverted_as_index(ctx, node):
            return "operator"  # `x[~valid]` beside `x[valid]`: `~` of a mask
        if binding is None and ctx.param_passed_mask(node.value):
            return "passed"  # every call from the step passes a boolean tensor
        return None
    if isinstance(node, cst.Attribute):
        if ctx.value_kind(node).is_host or ctx.enum_member(node) or ctx.string_constant(node):
            # (`batch[Key.valid_mask]` with `Key` an Enum or `Key.valid_mask = "valid"`: a
            # dict lookup by a member or a string constant)
            return None
        strong = name_mask_strength(node.attr.value) == "strong"
        if strong and not _integer_index(ctx, node):
            return "name"
        if _inverted_as_index(ctx, node):
            return "operator"  # `x[~self.labeled]` beside `x[self.labeled]`: `~` of a mask
        return None
    return None


def _selected_by_mask(
    ctx: FileContext, node: cst.BaseExpression, bindings: Bindings, depth: int
) -> bool:
    """Whether `node` selects from a tensor that is no mask by a boolean mask (`i[mask]` of
    an edge index's row, `torch.arange(n)[keep]`): the selected values (integer indices,
    say), not a mask, whatever the name they are bound to (`mask_i = i[mask]`)."""
    if not (isinstance(node, cst.Subscript) and len(node.slice) == 1):
        return False
    index = node.slice[0].slice
    return (
        isinstance(index, cst.Index)
        and mask_kind(ctx, node.value, bindings, depth) is None
        and mask_kind(ctx, index.value, bindings, depth) is not None
    )


_INVERTED_CACHE: dict[int, tuple[cst.CSTNode, frozenset[str]]] = {}


def _inverted_as_index(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """Whether the code indexes a tensor by `~<node>` too (`x[~self.labeled]` elsewhere in
    the file for `self.labeled`, `x[~valid]` in the same function for a local `valid`): the
    complement of a boolean mask selects the other rows, so `node` is that mask. (`~` of an
    integer index tensor would index from the end, which no selection of rows does.)"""
    text = _value_text(node)
    if text is None or "[" in text:
        return False
    root: cst.CSTNode | None = ctx.module
    if isinstance(node, cst.Name):
        root = ctx.current_function()
    elif not (isinstance(node.value, cst.Name) and node.value.value == "self"):
        return False
    if root is None:
        return False
    cached = _INVERTED_CACHE.get(id(root))
    if cached is None or cached[0] is not root:
        if len(_INVERTED_CACHE) > 64:
            _INVERTED_CACHE.clear()
        # One walk of the semantic nodes (tpulint.analysis.walker), not libcst's `visit`,
        # which rebuilds every node of the function or module it walks (about 5% of a cold
        # run on a large package, py-spy). No skipped field (whitespace, punctuation,
        # operators) can hold a subscript; the found texts are a set, so the order the
        # walk reads them in does not matter.
        found: set[str] = set()
        stack: list[cst.CSTNode] = [root]
        while stack:
            current = stack.pop()
            if type(current) is cst.SubscriptElement:
                index = current.slice
                if (
                    isinstance(index, cst.Index)
                    and isinstance(index.value, cst.UnaryOperation)
                    and isinstance(index.value.operator, cst.BitInvert)
                ):
                    inner = _value_text(index.value.expression)
                    if inner is not None:
                        found.add(inner)
            stack.extend(iter_children(current))
        cached = _INVERTED_CACHE[id(root)] = (root, frozenset(found))
    return text in cached[1] and not _integer_index(ctx, node)


def _integer_index(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """Whether the function uses the value `node` names (`m`, `self.m`, `d["m"]`) as an
    integer index (tpulint.analysis.index_uses): then a mask-like name is the node-to-graph
    map of a graph batch (int64), not a boolean mask."""
    text = _value_text(node)
    return text is not None and text in ctx.index_texts()


def _value_text(node: cst.BaseExpression) -> str | None:
    """`node` spelled as tpulint.analysis.index_uses.value_text spells it."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
        return f"{node.value.value}.{node.attr.value}"
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        index = node.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
            key = index.value.evaluated_value
            base = _value_text(node.value)
            if isinstance(key, str) and base is not None:
                return f"{base}[{key!r}]"
    return None


def not_a_mask(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """Expressions that are surely not boolean masks: numbers, slices' pieces, lists,
    integer index computations (`argsort`, `arange`, `.long()`), floats."""
    if isinstance(
        node,
        (
            cst.Integer,
            cst.Float,
            cst.SimpleString,
            cst.List,
            cst.Tuple,
            cst.ListComp,
            cst.Dict,
            cst.BinaryOperation,
        ),
    ):
        return not (
            isinstance(node, cst.BinaryOperation)
            and isinstance(node.operator, (cst.BitAnd, cst.BitOr, cst.BitXor))
        )
    if isinstance(node, cst.Call):
        name = torch_name(ctx, node)
        if name is not None:
            return name.rsplit(".", 1)[-1] in _INDEX_METHODS or name.endswith(
                ("tensor", "zeros", "ones", "full", "rand", "randn", "randint", "empty")
            )
        method = method_name(node)
        if method in _INDEX_METHODS:
            return True
        if isinstance(node.func, cst.Name) and node.func.value in (
            "nms",
            "batched_nms",
            "range",
            "list",
            "len",
            "int",
        ):
            return True
    return ctx.value_kind(node).is_host


def mask_in_index(
    ctx: FileContext, node: cst.Subscript, bindings: Bindings
) -> tuple[cst.BaseExpression, str] | None:
    """The boolean-mask element of a subscript (`x[m]`, `x[:, m]`), with its reason."""
    for element in node.slice:
        index = element.slice
        if not isinstance(index, cst.Index):
            continue  # a slice `a:b`
        value = index.value
        if isinstance(value, (cst.Integer, cst.Ellipsis, cst.SimpleString, cst.Slice)):
            continue
        if isinstance(value, cst.Name) and value.value == "None":
            continue
        reason = mask_kind(ctx, value, bindings)
        if reason:
            return value, reason
    return None


_MASK_PREDICATE_FUNCTIONS = frozenset(
    {"isnan", "isinf", "isfinite", "isneginf", "isposinf", "signbit"}
)


def elementwise_mask(
    ctx: FileContext,
    mask: cst.BaseExpression,
    base: cst.BaseExpression,
    bindings: Bindings,
    depth: int = 0,
) -> bool:
    """Whether `mask` is computed elementwise from `base` and Python numbers only, so it
    has exactly `base`'s shape (then `torch.where(mask, base, 0)` and
    `base.masked_fill(mask, v)` need no broadcasting): `x > 0`, `~torch.isnan(x)`,
    `(x > 0) & (x < 1)`, a local bound to one of those while `x` kept its value."""
    if depth > 8:
        return False
    d = depth + 1
    if isinstance(mask, cst.Comparison):
        if len(mask.comparisons) != 1:
            return False
        op = mask.comparisons[0].operator
        if isinstance(op, (cst.Is, cst.IsNot, cst.In, cst.NotIn)):
            return False
        left, right = mask.left, mask.comparisons[0].comparator
        if same_code(ctx, left, base) and same_code(ctx, right, base):
            return True  # `x != x`: the NaN test
        return (same_code(ctx, left, base) and is_number_literal(right, ctx)) or (
            same_code(ctx, right, base) and is_number_literal(left, ctx)
        )
    if isinstance(mask, cst.UnaryOperation) and isinstance(mask.operator, cst.BitInvert):
        return elementwise_mask(ctx, mask.expression, base, bindings, d)
    if isinstance(mask, cst.BinaryOperation) and isinstance(
        mask.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)
    ):
        return elementwise_mask(ctx, mask.left, base, bindings, d) and elementwise_mask(
            ctx, mask.right, base, bindings, d
        )
    if isinstance(mask, cst.Call):
        name = torch_name(ctx, mask)
        args = positional(mask)
        if name in _MASK_PREDICATE_FUNCTIONS and len(mask.args) == 1:
            return same_code(ctx, args[0].value, base) if args else False
        if name == "logical_not" and len(mask.args) == 1 and args:
            return elementwise_mask(ctx, args[0].value, base, bindings, d)
        if name in ("logical_and", "logical_or", "logical_xor") and len(mask.args) == 2:
            return all(elementwise_mask(ctx, a.value, base, bindings, d) for a in mask.args)
        method = method_name(mask)
        if method in _MASK_PREDICATE_FUNCTIONS and not mask.args:
            return same_code(ctx, receiver(mask), base)
        if method == "logical_not" and not mask.args:
            return elementwise_mask(ctx, receiver(mask), base, bindings, d)
        return False
    if isinstance(mask, cst.Name):
        binding = bindings.lookup(mask.value)
        if binding is None or binding.value is None or binding.unpack_index is not None:
            return False
        base_root = root_name(base)
        if base_root is None or bindings.last_seq(base_root) > binding.seq:
            return False  # `x` was rebound after the mask was computed
        return elementwise_mask(ctx, binding.value, base, bindings, d)
    return False


# --- where numbers come from ----------------------------------------------------------

_SHAPE_METHODS = frozenset({"size", "shape"})


def shape_source(
    ctx: FileContext, node: cst.BaseExpression, bindings: Bindings, depth: int = 0
) -> cst.BaseExpression | None:
    """The tensor whose shape gives the number `node`: `t.size(0)`, `t.shape[1]`, `len(t)`,
    `t.size()[0]`, a name bound to one of those or unpacked from `t.shape`."""
    if depth > 6:
        return None
    if isinstance(node, cst.Call):
        if (
            isinstance(node.func, cst.Name)
            and node.func.value == "len"
            and len(node.args) == 1
            and "len" not in ctx.aliases.bindings
        ):
            return node.args[0].value
        if method_name(node) == "size" and len(node.args) == 1:
            return receiver(node)
        func = node.func
        if isinstance(func, cst.Name) and func.value in ("int", "min", "max") and node.args:
            for arg in node.args:
                found = shape_source(ctx, arg.value, bindings, depth + 1)
                if found is not None:
                    return found
        return None
    if isinstance(node, cst.Subscript):
        base = node.value
        if isinstance(base, cst.Attribute) and base.attr.value == "shape":
            return base.value
        if isinstance(base, cst.Call) and method_name(base) == "size" and not base.args:
            return receiver(base)
        return None
    if isinstance(node, cst.BinaryOperation) and isinstance(
        node.operator, (cst.Add, cst.Subtract, cst.FloorDivide, cst.Multiply)
    ):
        return shape_source(ctx, node.left, bindings, depth + 1) or shape_source(
            ctx, node.right, bindings, depth + 1
        )
    if isinstance(node, cst.Name):
        binding = bindings.lookup(node.value)
        if binding is None or binding.value is None:
            return None
        value = binding.value
        if binding.unpack_index is not None:
            if isinstance(value, cst.Attribute) and value.attr.value == "shape":
                return value.value
            if isinstance(value, cst.Call) and method_name(value) == "size" and not value.args:
                return receiver(value)
            return None
        return shape_source(ctx, value, bindings, depth + 1)
    return None


_PASS_THROUGH = frozenset(
    {
        "item",
        "int",
        "long",
        "float",
        "tolist",
        "cpu",
        "detach",
        "to",
        "ceil",
        "floor",
        "round",
        "clone",
    }
)
# Tensor reductions whose result, used as a size, depends on the tensor's values.
# Python's builtins that reduce an iterable (or choose among their arguments).
_CHOOSING_BUILTINS = frozenset({"max", "min", "sum"})
_VALUE_REDUCTIONS = frozenset(
    {"max", "min", "sum", "amax", "amin", "count_nonzero", "argmax", "argmin", "prod"}
)


def value_size(
    ctx: FileContext, node: cst.BaseExpression, bindings: Bindings, depth: int = 0
) -> cst.BaseExpression | None:
    """The tensor-valued expression a number is read from (`lengths.max()` in
    `lengths.max().item()`, `int(mask.sum())`, a name bound to one), or None."""
    if depth > 6:
        return None
    d = depth + 1
    if isinstance(node, cst.Call):
        name = torch_name(ctx, node)
        if name in _VALUE_REDUCTIONS and node.args:
            # `torch.max(batch)`: the reduction's tensor is its first argument (not `torch`)
            arg = node.args[0].value
            kind = ctx.value_kind(arg)
            if kind is DEVICE or (kind.may_be_device and _tensorish(ctx, arg, bindings)):
                return node
            return None
        method = None if name is not None else method_name(node)
        if method in _PASS_THROUGH:
            return value_size(ctx, receiver(node), bindings, d)
        if method in _VALUE_REDUCTIONS:
            base = receiver(node)
            kind = ctx.value_kind(base)
            if kind in (DEVICE,) or (
                kind.may_be_device
                and not is_self_attribute(base)
                and _tensorish(ctx, base, bindings)
            ):
                return node
            return None
        if (
            isinstance(node.func, cst.Name)
            and node.func.value in ("int", "round", "float")
            and len(node.args) == 1
        ):
            return value_size(ctx, node.args[0].value, bindings, d)
        if (
            name is None
            and isinstance(node.func, cst.Name)
            and node.func.value in _CHOOSING_BUILTINS
            and bindings.lookup(node.func.value) is None
            and ctx.qualify(node.func) is None
        ):
            values = [a.value for a in node.args if not a.keyword and not a.star]
            if len(values) == 1:
                # `max(batch_ids) + 1` of one device tensor: Python iterates it, reading
                # every element on the host (a host list's max reads nothing)
                return node if ctx.value_kind(values[0]) is DEVICE else None
            # `max(lengths.max(), 1)`: the size read from any of the values
            for value in values:
                found = value_size(ctx, value, bindings, d)
                if found is not None:
                    return found
        return None
    if isinstance(node, cst.BinaryOperation) and isinstance(
        node.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide)
    ):
        return value_size(ctx, node.left, bindings, d) or value_size(ctx, node.right, bindings, d)
    if isinstance(node, cst.Name):
        binding = bindings.lookup(node.value)
        if binding is None or binding.value is None or binding.unpack_index is not None:
            return None
        return value_size(ctx, binding.value, bindings, d)
    if (
        isinstance(node, cst.Subscript)
        and len(node.slice) == 1
        and isinstance(node.slice[0].slice, cst.Index)
        and _number_index(ctx, node.slice[0].slice.value)
        and ctx.value_kind(node.value) is DEVICE
        and not _step_argument(ctx, node.value, bindings)
    ):
        # `ids_str[i]` of a device tensor used as a size or slice bound: `__index__` reads
        # the element on the host (one read per sample in a per-sample loop).
        return node
    return None


def _number_index(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """An integer literal, or a name holding a Python number (a `range` loop's index)."""
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.expression, cst.Integer):
        return True
    return isinstance(node, cst.Name) and ctx.value_kind(node) is ValueKind.NUMBER


def _step_argument(ctx: FileContext, node: cst.BaseExpression, bindings: Bindings) -> bool:
    """A parameter of an entry hook (the step's batch), an element of one, or a local bound
    to one: step data, which may hold Python lists of numbers as well as tensors."""
    for _ in range(8):
        if isinstance(node, cst.Name):
            binding = bindings.lookup(node.value)
            if binding is None or binding.value is None:
                break
            node = binding.value
        elif isinstance(node, (cst.Subscript, cst.Attribute)):
            node = node.value
        else:
            return False
    info = ctx.function
    if not isinstance(node, cst.Name) or info is None:
        return False
    if info.hot_reason != info.root_hook:
        return False  # a helper: what its callers pass (the project model's value)
    params = info.node.params
    return node.value in {
        p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
    }


def _tensorish(ctx: FileContext, node: cst.BaseExpression, bindings: Bindings) -> bool:
    """Whether an UNKNOWN value is, by its origin, very likely a torch tensor: a parameter
    or local of a hot function named like lengths/masks, or built by torch calls."""
    kind = ctx.value_kind(node)
    if kind is DEVICE:
        return True
    if kind.is_host or kind is CPU:
        return False
    if isinstance(node, cst.BinaryOperation):
        # `(sizes * repeats)` of a tensorish value and a number (or another such value)
        sides = (node.left, node.right)
        return any(_tensorish(ctx, side, bindings) for side in sides) and not any(
            ctx.value_kind(side) is CPU for side in sides
        )
    name = root_name(node)
    if name == "self":
        return False
    if is_torch_tensor(ctx, node, bindings):
        # `k = (torch.sum(masks, -1) * ratio).int()`: made by torch calls or torch-only
        # methods from a value that may be on the device
        return True
    if name is None:
        return False
    return bool(re.search(r"(len|length|lens|mask|dur|count|num|size|ids|idx|index)", name.lower()))


def kind_of(ctx: FileContext, node: cst.BaseExpression) -> ValueKind:
    return ctx.value_kind(node)


_TORCH_ONLY_METHODS = frozenset(
    {
        "detach",
        "float",
        "long",
        "int",
        "half",
        "bfloat16",
        "cuda",
        "to",
        "softmax",
        "sigmoid",
        "argmax",
        "squeeze",
        "unsqueeze",
        "view",
        "contiguous",
        "clone",
        "double",
        "bool",
        "permute",
        "masked_fill",
        "type_as",
        "new_zeros",
        "new_ones",
        "new_full",
        "sum",
        "max",
        "min",
        "mean",
        "argmin",
        "topk",
        "gather",
        "flatten",
        "exp",
        "log",
        "abs",
    }
)
_NUMPY_LIKE_METHODS = frozenset(
    {
        "sum",
        "max",
        "min",
        "mean",
        "argmax",
        "argmin",
        "flatten",
        "exp",
        "log",
        "abs",
        "squeeze",
        "view",
        "astype",
    }
)


def is_torch_tensor(
    ctx: FileContext, node: cst.BaseExpression, bindings: Bindings, depth: int = 0
) -> bool:
    """Whether an expression is surely a torch tensor (device unknown): the result of a
    torch function, of a torch-only method (`.detach()`, `.unsqueeze()`), a local bound
    to one, or an index into one."""
    if depth > 8:
        return False
    d = depth + 1
    kind = ctx.value_kind(node)
    if kind.is_host:
        return False
    if kind in (DEVICE, CPU):
        return True
    if isinstance(node, cst.Call):
        name = torch_name(ctx, node)
        if name is not None:
            return True
        method = method_name(node)
        if method is not None:
            if method in _TORCH_ONLY_METHODS and method not in _NUMPY_LIKE_METHODS:
                return True
            if method in _NUMPY_LIKE_METHODS:
                return is_torch_tensor(ctx, receiver(node), bindings, d)
        return False
    if isinstance(node, cst.Subscript):
        return is_torch_tensor(ctx, node.value, bindings, d)
    if isinstance(node, cst.BinaryOperation):
        return is_torch_tensor(ctx, node.left, bindings, d) or is_torch_tensor(
            ctx, node.right, bindings, d
        )
    if isinstance(node, cst.UnaryOperation):
        return is_torch_tensor(ctx, node.expression, bindings, d)
    if isinstance(node, cst.Attribute) and node.attr.value in ("T", "data", "values", "indices"):
        return is_torch_tensor(ctx, node.value, bindings, d)
    if isinstance(node, cst.Name):
        binding = bindings.lookup(node.value)
        if binding is None or binding.value is None:
            annotation = bindings.annotation(node.value)
            return annotation is not None and annotation.endswith("Tensor")
        value = binding.value
        if binding.unpack_index is not None:
            # `values, idx = torch.max(x, dim=1)`
            return isinstance(value, cst.Call) and torch_name(ctx, value) is not None
        return is_torch_tensor(ctx, value, bindings, d)
    return False


def computed_tensor(
    ctx: FileContext, node: cst.BaseExpression, bindings: Bindings, depth: int = 0
) -> bool:
    """A device tensor computed in the code (`self(x)`, `loss_fn(...)`, `a * b`, a local
    bound to one), not merely a parameter or an element of the batch container, which
    may hold strings and numbers too. For printing and formatting, where a false alarm on
    `f"{batch['name']}"` is worse than a miss."""
    if depth > 8 or ctx.value_kind(node) is not DEVICE:
        return False
    d = depth + 1
    if isinstance(node, cst.Name):
        binding = bindings.lookup(node.value)
        if binding is None or binding.value is None or binding.unpack_index is not None:
            return False
        return computed_tensor(ctx, binding.value, bindings, d)
    if isinstance(node, cst.Subscript):
        return computed_tensor(ctx, node.value, bindings, d)
    if isinstance(node, cst.Attribute):
        return computed_tensor(ctx, node.value, bindings, d)
    if isinstance(node, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison)):
        return True
    if isinstance(node, cst.Call):
        method = method_name(node)
        return method not in ("get", "pop", "__getitem__")
    return False

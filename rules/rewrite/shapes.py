"""Which tensors provably have the same shape, for the mask rewrites.

`x[m]` lines the mask up with the leading dimensions of `x`, while `torch.where(m, x, 0)` and
`x.masked_fill_(m, v)` broadcast it from the trailing ones: the short rewrites are exact only
when `m` has the shape of `x`. `shape_key` names the shape of an expression when it is
provably the shape of a simpler one (an elementwise operation with Python numbers keeps the
shape of its tensor operand, `loss_fn(..., reduction="none")` has the shape of its target,
a local has the shape of what it was bound to), and two expressions with the same key have
the same shape. Anything else has no key: the rewrites then widen the mask explicitly.
"""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.values import HOST, NUMBER

from ..shared.tensors import Bindings, is_number_literal, keyword, method_name, positional

# Methods that return a tensor of their receiver's shape (arguments, if any, are scalars,
# dtypes or devices).
_ELEMENTWISE_METHODS = frozenset(
    {
        "float",
        "double",
        "half",
        "bfloat16",
        "long",
        "int",
        "short",
        "bool",
        "byte",
        "char",
        "to",
        "type",
        "type_as",
        "detach",
        "clone",
        "contiguous",
        "abs",
        "neg",
        "exp",
        "exp2",
        "expm1",
        "log",
        "log2",
        "log10",
        "log1p",
        "sqrt",
        "rsqrt",
        "square",
        "sigmoid",
        "tanh",
        "relu",
        "sign",
        "round",
        "floor",
        "ceil",
        "trunc",
        "reciprocal",
        "sin",
        "cos",
        "clamp",
        "clamp_min",
        "clamp_max",
        "clip",
        "pow",
        "isnan",
        "isinf",
        "isfinite",
        "isneginf",
        "isposinf",
        "signbit",
        "logical_not",
        "nan_to_num",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "masked_fill",
    }
)
# torch.* functions (and torch.nn.functional ones) of one tensor that keep its shape.
_ELEMENTWISE_FUNCTIONS = frozenset(
    {
        "abs",
        "neg",
        "exp",
        "log",
        "log1p",
        "sqrt",
        "rsqrt",
        "square",
        "sigmoid",
        "tanh",
        "sign",
        "round",
        "floor",
        "ceil",
        "clamp",
        "clip",
        "isnan",
        "isinf",
        "isfinite",
        "logical_not",
        "nan_to_num",
        "nn.functional.relu",
        "nn.functional.gelu",
        "nn.functional.silu",
        "nn.functional.softplus",
        "nn.functional.logsigmoid",
        "relu",
    }
)
# torch.* functions of two same-shape tensors (or a tensor and a number) keeping the shape.
_ELEMENTWISE_BINARY = frozenset(
    {
        "logical_and",
        "logical_or",
        "logical_xor",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "maximum",
        "minimum",
        "add",
        "sub",
        "mul",
        "div",
        "pow",
    }
)
# Losses whose `reduction="none"` output has the input's (and target's) shape.
_ELEMENTWISE_LOSSES = frozenset(
    {
        "mse_loss",
        "l1_loss",
        "smooth_l1_loss",
        "huber_loss",
        "binary_cross_entropy",
        "binary_cross_entropy_with_logits",
        "soft_margin_loss",
    }
)
# Losses whose `reduction="none"` output has the (class-index) target's shape.
_CLASS_LOSSES = frozenset({"cross_entropy", "nll_loss"})

# Factories whose result has the shape of their first argument.
_LIKE_FACTORIES = frozenset(
    {"ones_like", "zeros_like", "full_like", "empty_like", "rand_like", "randn_like"}
)

_SCALAR = "scalar"


def _torch_function(ctx: FileContext, node: cst.Call) -> str | None:
    qualified = ctx.qualify(node.func)
    if qualified is None or not qualified.startswith("torch."):
        return None
    return qualified[len("torch.") :]


def _loss_name(ctx: FileContext, node: cst.Call) -> str | None:
    name = _torch_function(ctx, node)
    if name is None:
        return None
    last = name.rsplit(".", 1)[-1]
    return last if name.startswith("nn.functional.") else None


def _reduction_none(node: cst.Call) -> bool:
    arg = keyword(node, "reduction")
    return (
        arg is not None
        and isinstance(arg.value, cst.SimpleString)
        and arg.value.evaluated_value == "none"
    )


def shape_key(
    ctx: FileContext,
    node: cst.BaseExpression,
    bindings: Bindings,
    before: int | None = None,
    depth: int = 0,
) -> str | None:
    """A key naming `node`'s shape, "scalar" for Python numbers, None when unknown.

    `before`: when following a local's binding, the binding's position; names read inside
    it must not have been rebound since (their current binding is not the one it used)."""
    if depth > 10:
        return None
    d = depth + 1
    if is_number_literal(node, ctx) or (
        isinstance(node, (cst.Name, cst.Attribute)) and ctx.value_kind(node) in (HOST, NUMBER)
    ):
        return _SCALAR
    if isinstance(node, cst.Name):
        binding = bindings.lookup(node.value)
        if binding is None:
            if bindings.is_param(node.value) or before is None:
                return f"name:{node.value}"
            return None
        if before is not None and binding.seq > before:
            return None  # rebound after the expression that read it
        if binding.value is None or binding.unpack_index is not None:
            return f"name:{node.value}@{binding.seq}"
        inner = shape_key(ctx, binding.value, bindings, binding.seq, d)
        return inner if inner is not None else f"name:{node.value}@{binding.seq}"
    if isinstance(node, cst.Attribute):
        return f"attr:{ctx.module.code_for_node(node.with_changes(lpar=[], rpar=[])).strip()}"
    if isinstance(node, cst.Comparison):
        if len(node.comparisons) != 1:
            return None
        operator = node.comparisons[0].operator
        if isinstance(operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)):
            return None
        return _combine(
            shape_key(ctx, node.left, bindings, before, d),
            shape_key(ctx, node.comparisons[0].comparator, bindings, before, d),
        )
    if isinstance(node, cst.UnaryOperation):
        if isinstance(node.operator, cst.Not):
            return None
        return shape_key(ctx, node.expression, bindings, before, d)
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, cst.MatrixMultiply):
            return None
        return _combine(
            shape_key(ctx, node.left, bindings, before, d),
            shape_key(ctx, node.right, bindings, before, d),
        )
    if isinstance(node, cst.Call):
        return _call_key(ctx, node, bindings, before, d)
    return None


def _combine(left: str | None, right: str | None) -> str | None:
    """The shape of an elementwise operation of two operands: a number broadcasts."""
    if left is None or right is None:
        return None
    if left == _SCALAR:
        return right
    if right == _SCALAR or left == right:
        return left
    return None


def _call_key(
    ctx: FileContext, node: cst.Call, bindings: Bindings, before: int | None, depth: int
) -> str | None:
    args = positional(node)
    loss = _loss_name(ctx, node)
    if loss is not None and _reduction_none(node) and len(args) >= 2:
        if loss in _CLASS_LOSSES:
            return shape_key(ctx, args[1].value, bindings, before, depth)
        if loss in _ELEMENTWISE_LOSSES:
            return _combine(
                shape_key(ctx, args[0].value, bindings, before, depth),
                shape_key(ctx, args[1].value, bindings, before, depth),
            )
        return None
    name = _torch_function(ctx, node)
    if name is not None:
        if name in _LIKE_FACTORIES and args:
            return shape_key(ctx, args[0].value, bindings, before, depth)
        if name in _ELEMENTWISE_FUNCTIONS and args:
            return shape_key(ctx, args[0].value, bindings, before, depth)
        if name in _ELEMENTWISE_BINARY and len(args) == 2:
            return _combine(
                shape_key(ctx, args[0].value, bindings, before, depth),
                shape_key(ctx, args[1].value, bindings, before, depth),
            )
        if name == "where" and len(args) == 3:
            keys = [shape_key(ctx, a.value, bindings, before, depth) for a in args]
            return _combine(_combine(keys[0], keys[1]), keys[2])
        return None
    method = method_name(node)
    if method in _ELEMENTWISE_METHODS:
        receiver = node.func.value  # type: ignore[union-attr]
        key = shape_key(ctx, receiver, bindings, before, depth)
        if key is None or key == _SCALAR:
            return None
        for arg in node.args:
            if arg.keyword is not None:
                continue
            value = arg.value
            if method in ("eq", "ne", "lt", "le", "gt", "ge", "masked_fill", "pow", "type_as"):
                other = shape_key(ctx, value, bindings, before, depth)
                if method == "type_as" or (method == "masked_fill" and arg is node.args[-1]):
                    continue
                if _combine(key, other) != key:
                    return None
        return key
    return None


def same_shape(
    ctx: FileContext, a: cst.BaseExpression, b: cst.BaseExpression, bindings: Bindings
) -> bool:
    """Whether `a` and `b` provably have the same shape (neither is a Python number)."""
    key = shape_key(ctx, a, bindings)
    return key is not None and key != _SCALAR and key == shape_key(ctx, b, bindings)


# Reductions that give one value when called without a dimension.
_FULL_REDUCTIONS = frozenset(
    {
        "sum",
        "mean",
        "max",
        "min",
        "amax",
        "amin",
        "prod",
        "std",
        "var",
        "norm",
        "median",
        "logsumexp",
        "count_nonzero",
        "trace",
        "quantile",
        "nanmean",
        "nansum",
        "numel",
    }
)
_KEEPS_SHAPE = frozenset(
    {
        "to",
        "float",
        "double",
        "half",
        "bfloat16",
        "long",
        "int",
        "detach",
        "clone",
        "type",
        "abs",
        "sqrt",
        "exp",
        "log",
        "clamp",
        "neg",
    }
)


def zero_dim(
    ctx: FileContext, node: cst.BaseExpression, bindings: Bindings, depth: int = 0
) -> bool:
    """Whether `node` is provably one value: a number, a full reduction (`x.sum()`,
    `torch.quantile(x, q)`), arithmetic of those, or a local bound to one."""
    if depth > 8:
        return False
    d = depth + 1
    if is_number_literal(node, ctx) or ctx.value_kind(node) in (HOST, NUMBER):
        return True
    if isinstance(node, cst.UnaryOperation):
        return zero_dim(ctx, node.expression, bindings, d)
    if isinstance(node, cst.BinaryOperation):
        return zero_dim(ctx, node.left, bindings, d) and zero_dim(ctx, node.right, bindings, d)
    if isinstance(node, cst.Name):
        binding = bindings.lookup(node.value)
        if binding is None or binding.value is None or binding.unpack_index is not None:
            return False
        return zero_dim(ctx, binding.value, bindings, d)
    if isinstance(node, cst.Call):
        dims = [
            a for a in node.args if a.keyword is not None and a.keyword.value in ("dim", "axis")
        ]
        name = _torch_function(ctx, node)
        if name is not None:
            last = name.rsplit(".", 1)[-1]
            if last in _FULL_REDUCTIONS and not dims:
                tensors = positional(node)
                return len(tensors) == 1 or (last == "quantile" and len(tensors) == 2)
            return False
        method = method_name(node)
        if method in _FULL_REDUCTIONS and not node.args:
            return True
        if method in _KEEPS_SHAPE:
            return zero_dim(ctx, node.func.value, bindings, d)  # type: ignore[union-attr]
        if isinstance(node.func, cst.Name) and node.func.value in ("float", "int", "len"):
            return True
    return False

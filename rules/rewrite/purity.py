"""Which expressions a rewrite may evaluate twice, or evaluate where the original did not.

The masked forms read the mask more than once (`torch.where(m, x, 0).sum() / m.sum()`) and
`torch.where` computes both branches of an `if`; that is only the same program when those
expressions have no effects and no randomness.
"""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.context import FileContext

from ..shared.tensors import method_name
from .shapes import _ELEMENTWISE_METHODS

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

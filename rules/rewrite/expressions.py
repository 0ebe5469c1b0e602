"""Building replacement expressions for the TPU1xx/TPU2xx rewrites.

Replacements are written as Python templates filled with the source of the user's nodes and
parsed back (`expression`), which keeps every sub-expression exactly as written (comments and
line breaks inside parentheses included) and reads like the code it produces. `atom` adds the
parentheses an inserted piece needs where it becomes an operand or a receiver.
"""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.walker import iter_children

# Nodes that bind tighter than any operator: safe as a receiver (`x.sum()`) or an operand.
_ATOMS = (
    cst.Name,
    cst.Attribute,
    cst.Call,
    cst.Subscript,
    cst.Integer,
    cst.Float,
    cst.Imaginary,
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.FormattedString,
    cst.List,
    cst.Tuple,
    cst.Dict,
    cst.Set,
    cst.ListComp,
    cst.SetComp,
    cst.DictComp,
    cst.GeneratorExp,
)

# Contexts where an expression of any precedence can stand without parentheses.
_LOOSE_PARENTS = (
    cst.Arg,
    cst.Assign,
    cst.AnnAssign,
    cst.AugAssign,
    cst.Return,
    cst.Expr,
    cst.DictElement,
    cst.Element,
    cst.Index,
    cst.FormattedStringExpression,
)


def code(ctx: FileContext, node: cst.CSTNode) -> str:
    """The node's source as written (its own parentheses included)."""
    return ctx.module.code_for_node(node)


def atom(ctx: FileContext, node: cst.BaseExpression) -> str:
    """The node's source, parenthesized unless it is already atomic or parenthesized."""
    text = code(ctx, node)
    if isinstance(node, _ATOMS) or node.lpar:
        return text
    return f"({text})"


def bare(ctx: FileContext, node: cst.BaseExpression) -> str:
    """The node's source without its outer parentheses (as an argument it needs none)."""
    return code(ctx, node.with_changes(lpar=[], rpar=[])) if node.lpar else code(ctx, node)


def expression(text: str) -> cst.BaseExpression:
    """Parse a filled template."""
    return cst.parse_expression(text)


def fits(ctx: FileContext, old: cst.BaseExpression, new: cst.BaseExpression) -> cst.BaseExpression:
    """`new` ready to stand where `old` stood: with `old`'s own parentheses, and with
    parentheses of its own when it is an operation placed inside another expression
    (`2 / x[m].mean()` must become `2 / (a / b)`, not `2 / a / b`)."""
    if old.lpar:
        return new.with_changes(lpar=old.lpar, rpar=old.rpar)
    if isinstance(new, _ATOMS):
        return new
    parent = ctx.parent(old)
    if isinstance(parent, _LOOSE_PARENTS):
        return new
    return new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def torch_alias(ctx: FileContext) -> tuple[str, bool]:
    """The name the file binds `torch` to at the top level, and whether an `import torch`
    must be added (when the file has none)."""
    for local, target in ctx.aliases.bindings.items():
        if target == "torch":
            return local, False
    return "torch", True


def complete_parents(ctx: FileContext, node: cst.CSTNode) -> None:
    """Link every node of the function around `node` (its outermost enclosing function, or
    the module) to its parent. The engine links a node's children only when its walk
    reaches that node, and a rewrite looks ahead of the walk: at the other operands of the
    statement being visited, at a local's later uses."""
    scope: cst.CSTNode = ctx.module
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.FunctionDef):
            scope = ancestor
    done: set[int] = ctx.__dict__.setdefault("_rewrite_linked", set())
    if id(scope) in done:
        return
    done.add(id(scope))
    parents = ctx.parents
    stack = [scope]
    while stack:
        current = stack.pop()
        for child in iter_children(current):
            parents[id(child)] = current
            stack.append(child)

"""Tests of a parameter that the literal a call passes decides.

A helper the steps share often takes the stage as a parameter and each step passes a literal
(`self.compute_loss(batch, log="val")`, `self._shared(batch, "train")`, `log_metrics=False`):
code under `if log == "val":` runs only where a call passes "val". The project model follows
the literals down the hot chains (ProjectModel routes: the hook at the root, and the literal
each parameter holds on that way), so a call under such a test is not reached from a step
that passes the literal that makes the test false, and the per-file context reads a
statement under such a test as code of the hooks whose routes reach it. A route also keeps the
guards every way along it shares (its calls' `if batch_idx == 0:`, `if step % n == 0:`): code
under a test only some routes pass runs as rarely as those routes (`if dump_dir is not None:`
when only a first-batch call passes a `dump_dir`), and so does what it calls.

Both walkers (`ast` for the call sites, libcst for the reported nodes) read a test from its
source text with `decide`, so they agree. Only plain shapes are read: a parameter's truth
(`if log_metrics:`, `not p`), `p == lit`, `p != lit`, `p is None`, `p is not None`, `p in
("val", "test")`, and `and`/`or`/`not` of those; anything else is undecided (None), and the
code under it stays reached.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from tpulint.analysis.python_ast import walk as ast_walk

# The value a binding may hold: what `literal` reads.
Literal = str | bool | int | float | None
_MISSING = object()

# Decorators that keep a function's parameters as its callers pass them.
SAFE_DECORATORS = frozenset(
    {
        "staticmethod",
        "classmethod",
        "abstractmethod",
        "abc.abstractmethod",
        "override",
        "typing.override",
        "typing_extensions.override",
        "torch.no_grad",
        "torch.inference_mode",
        "torch.enable_grad",
        "no_grad",
        "inference_mode",
        "torch.autocast",
        "torch.compiler.disable",
        "torch.jit.ignore",
        "torch.jit.unused",
        "rank_zero_only",
    }
)


def literal(node: ast.AST) -> Any:
    """The value of a literal argument or default (a string, True/False/None, a number,
    `-1`), or `_MISSING`."""
    if isinstance(node, ast.Constant) and (
        node.value is None or isinstance(node.value, (str, bool, int, float))
    ):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) in (int, float)
    ):
        return -node.operand.value
    return _MISSING


def is_literal(value: Any) -> bool:
    return value is not _MISSING


def tested_names(expr: ast.expr) -> set[str]:
    """The names a test reads in the shapes `decide` reads."""
    if isinstance(expr, ast.Name):
        return {expr.id}
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        return tested_names(expr.operand)
    if isinstance(expr, ast.BoolOp):
        return {n for v in expr.values for n in tested_names(v)}
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1:
        left, right = expr.left, expr.comparators[0]
        if isinstance(left, ast.Name) and _constants(right) is not None:
            return {left.id}
        if isinstance(right, ast.Name) and _constants(left) is not None:
            return {right.id}
    return set()


def _constants(node: ast.expr) -> list[Any] | None:
    value = literal(node)
    if is_literal(value):
        return [value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        values = [literal(e) for e in node.elts]
        if all(is_literal(v) for v in values):
            return values
    return None


def decide(expr: ast.expr, bindings: Mapping[str, Any]) -> bool | None:
    """The test's truth where the names hold the literals `bindings` gives (True, False, or
    None when it does not decide it)."""
    if isinstance(expr, ast.Name):
        if expr.id in bindings:
            return bool(bindings[expr.id])
        return None
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        inner = decide(expr.operand, bindings)
        return None if inner is None else not inner
    if isinstance(expr, ast.BoolOp):
        parts = [decide(v, bindings) for v in expr.values]
        if isinstance(expr.op, ast.And):
            if any(p is False for p in parts):
                return False
            return True if all(p is True for p in parts) else None
        if any(p is True for p in parts):
            return True
        return False if all(p is False for p in parts) else None
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1:
        left, op, right = expr.left, expr.ops[0], expr.comparators[0]
        if isinstance(right, ast.Name) and not isinstance(left, ast.Name):
            left, right = right, left
            if isinstance(op, (ast.In, ast.NotIn)):
                return None
        if not isinstance(left, ast.Name) or left.id not in bindings:
            return None
        value = bindings[left.id]
        constants = _constants(right)
        if constants is None:
            return None
        if isinstance(op, (ast.In, ast.NotIn)):
            if not isinstance(right, (ast.Tuple, ast.List, ast.Set)):
                return None
            found = any(_equal(value, c) for c in constants)
            return found if isinstance(op, ast.In) else not found
        if len(constants) != 1 or isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            return None
        constant = constants[0]
        if isinstance(op, ast.Eq):
            return _equal(value, constant)
        if isinstance(op, ast.NotEq):
            return not _equal(value, constant)
        if isinstance(op, (ast.Is, ast.IsNot)):
            if constant is None or isinstance(constant, bool):
                same = value is constant
                return same if isinstance(op, ast.Is) else not same
            return None
    return None


def _equal(a: Any, b: Any) -> bool:
    return bool(a == b)


@lru_cache(maxsize=4096)
def parse_test(text: str) -> ast.expr | None:
    """A test's expression from its source text (None when it does not parse alone)."""
    try:
        return ast.parse(f"({text.strip()})", mode="eval").body
    except SyntaxError:
        return None


def decide_text(text: str, bindings: Mapping[str, Any]) -> bool | None:
    expr = parse_test(text)
    return decide(expr, bindings) if expr is not None else None


def live(conds: Iterable[tuple[str, bool]], bindings: Mapping[str, Any]) -> bool:
    """Whether code under the tests `conds` ((text, holds): under the test holding, or under
    it failing) may run where the names hold `bindings`."""
    if not bindings:
        return True
    for text, holds in conds:
        truth = decide_text(text, bindings)
        if truth is not None and truth != holds:
            return False
    return True


def assigned_names(node: ast.AST) -> set[str]:
    """Every name the code binds or deletes anywhere inside (nested scopes too: a
    superset), or declares global/nonlocal: parameters among them may not hold what the call
    passed."""
    names: set[str] = set()
    for child in ast_walk(node):
        if isinstance(child, ast.Name) and not isinstance(child.ctx, ast.Load):
            names.add(child.id)
        elif isinstance(child, (ast.Global, ast.Nonlocal)):
            names.update(child.names)
        elif isinstance(child, ast.alias):
            names.add((child.asname or child.name).split(".", 1)[0])
        elif (isinstance(child, ast.ExceptHandler) and child.name) or isinstance(
            child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        ):
            names.add(child.name)
        elif isinstance(child, ast.arg):
            names.add(child.arg)  # a nested function's or lambda's own parameter
        elif type(child).__name__ in ("MatchAs", "MatchStar") and getattr(child, "name", None):
            names.add(child.name)  # type: ignore[attr-defined]
        elif type(child).__name__ == "MatchMapping" and getattr(child, "rest", None):
            names.add(child.rest)  # type: ignore[attr-defined]
    return names

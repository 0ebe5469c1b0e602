"""The code of a file's hot functions, read with `ast`, for the screens of hot-code rules.

A rule that reports only in hot code (`Rule.hot_only`) declares the `ast` shapes its handlers
can report at (`Rule.hot_shapes`: node types, each with an optional test of the node). The
engine parses a file with libcst for such a rule only when a function the project model calls
hot contains one of them. The hot functions are found in the text being checked by their
qualified names (every function of a hot name counts: a superset when two share one), and
each is read whole, nested functions, lambdas, decorators and defaults included, so the shapes
found are a superset of the nodes the rule's libcst walk visits with `ctx.in_hot_code` true.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from tpulint.analysis.python_ast import iter_child_nodes as ast_children
from tpulint.analysis.python_ast import walk as ast_walk

# `name as alias` anywhere in the text (imports, and `with`/`except` targets: a superset).
_ALIAS = re.compile(r"\b([A-Za-z_]\w*)\s+as\s+([A-Za-z_]\w*)")


@dataclass
class HotCode:
    """The `ast` nodes of a file's hot functions, by type, and what the shapes' tests need."""

    nodes: dict[type[ast.AST], list[ast.AST]]
    source: str
    _aliases: dict[str, set[str]] | None = field(default=None, repr=False)
    _mentions: dict[str, bool] = field(default_factory=dict, repr=False)

    def mentions(self, word: str) -> bool:
        """Whether the file's text contains `word` (read once per word: a shape test asks
        it for every node of its type)."""
        found = self._mentions.get(word)
        if found is None:
            found = self._mentions[word] = word in self.source
        return found

    def call_names(self, call: ast.Call) -> set[str]:
        """The last names a call's callee can have once the file's imports are applied:
        `torch.full(...)` and `full(...)` give `full`, `fill(...)` after `from torch import full
        as fill` gives `fill` and `full`. Empty when the callee is not a name or attribute."""
        func = call.func
        if isinstance(func, ast.Attribute):
            return {func.attr}
        if not isinstance(func, ast.Name):
            return set()
        if self._aliases is None:
            aliases: dict[str, set[str]] = {}
            for match in _ALIAS.finditer(self.source):
                aliases.setdefault(match.group(2), set()).add(match.group(1))
            self._aliases = aliases
        return {func.id, *self._aliases.get(func.id, ())}

    def contains(self, shapes: Mapping[type[ast.AST], ShapeTest | None]) -> bool:
        """Whether a hot function contains a node of one of `shapes` (and passing its test)."""
        for kind, test in shapes.items():
            for node in self.nodes.get(kind, ()):
                if test is None or test(node, self):
                    return True
        return False


ShapeTest = Callable[[ast.AST, HotCode], bool]


def hot_code(tree: ast.Module, hot_qualnames: Iterable[str], source: str) -> HotCode:
    """The nodes of the functions of `tree` whose qualified name (`Class.method`,
    `outer.inner`, as the project model names them) is in `hot_qualnames`."""
    wanted = frozenset(hot_qualnames)
    nodes: dict[type[ast.AST], list[ast.AST]] = {}
    if wanted:
        _collect(tree, (), wanted, nodes)
    return HotCode(nodes, source)


def _collect(
    parent: ast.AST,
    names: tuple[str, ...],
    wanted: frozenset[str],
    nodes: dict[type[ast.AST], list[ast.AST]],
) -> None:
    for child in ast_children(parent):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = (*names, child.name)
            if ".".join(inner) in wanted:
                for node in ast_walk(child):
                    nodes.setdefault(type(node), []).append(node)
            else:
                _collect(child, inner, wanted, nodes)
        elif isinstance(child, ast.ClassDef):
            _collect(child, (*names, child.name), wanted, nodes)
        elif isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
            _collect(child, names, wanted, nodes)


def is_int_literal(node: ast.AST | None) -> bool:
    """`3`, `0x10` (libcst's `Integer`; not `True`, which libcst reads as a name)."""
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int)
        and not isinstance(node.value, bool)
    )


def index_elements(node: ast.Subscript) -> list[ast.expr]:
    """The elements of a subscript's index: `x[a, b]` gives `a` and `b`, `x[a]` gives `a` (and
    `x[(a, b)]`, which libcst reads as one tuple element, `a` and `b`: a superset)."""
    index = node.slice
    return list(index.elts) if isinstance(index, ast.Tuple) else [index]

"""The shared reading of `ast` trees (tpulint.analysis.python_ast): the fast walk and the
per-tree index give what the standard library's walk gives, node for node."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tpulint.analysis import python_ast
from tpulint.analysis.python_ast import TreeIndex, tree_index

# Sources of many shapes: the analysis's own modules (every statement and expression type
# they use), and a few constructs they do not (match, async, walrus, star expressions).
SOURCES = sorted((Path(python_ast.__file__).parent).glob("*.py"))[:12]
EXTRA = '''
import a.b as c, d
from .e import (f as g)
async def h(x, /, y=1, *a, z: int = 2, **k):
    async with x as (p, q):
        async for i in y:
            await i
    global G
    return [j async for j in k if (w := j)]
match v:
    case {"k": [1, *rest]} | Point(x=0) as m if m:
        pass
    case _:
        lambda: (yield)
try:
    pass
except* ValueError as e:
    raise
x: list[int] = [*a, *b]
del x[0], y.z
@dec(1)
class C(B, metaclass=M):
    """doc"""
    def f(self) -> None:
        nonlocal_ = f"{self!r:>{w}}"
'''


def _preorder(node: ast.AST) -> list[ast.AST]:
    """A reference depth-first pre-order, recursive."""
    out = [node]
    for child in ast.iter_child_nodes(node):
        out += _preorder(child)
    return out


def _trees() -> list[ast.Module]:
    return [ast.parse(p.read_text(encoding="utf-8")) for p in SOURCES] + [ast.parse(EXTRA)]


@pytest.mark.parametrize("tree", _trees(), ids=[*(p.name for p in SOURCES), "extra"])
def test_the_index_gives_what_ast_walk_gives(tree: ast.Module) -> None:
    index = TreeIndex(tree)
    every = list(ast.walk(tree))
    assert sorted(map(id, index.order)) == sorted(map(id, every))
    types = sorted({type(n) for n in every}, key=lambda t: t.__name__)
    parents = {id(c): n for n in every for c in ast.iter_child_nodes(n)}
    for root in every[:: max(1, len(every) // 400)]:
        walked = list(ast.walk(root))
        # The same nodes in the same (breadth-first) order, as python_ast.walk gives them.
        assert list(python_ast.walk(root)) == walked
        # The nodes of some types under a node: those ast.walk meets, in pre-order (shared
        # singletons such as `ast.Load()` once per place they occur, as ast.walk meets them).
        preorder = _preorder(root)
        for picked in (types[:1], types[1:4], types, (ast.Call, ast.Name, ast.Load)):
            found = index.of_type(root, *picked)
            assert found == [n for n in preorder if type(n) in picked]
            assert sorted(map(id, found)) == sorted(id(n) for n in walked if type(n) in picked)
        assert index.holds(root)
        if root._fields:  # not a shared singleton (`ast.Load()`, `ast.Add()`, `ast.NotIn()`)
            assert index.parent(root) is parents.get(id(root))


def test_the_index_knows_only_its_own_tree_and_is_shared() -> None:
    tree = ast.parse("x = 1\n")
    index = tree_index(tree)
    assert tree_index(tree) is index
    assert not index.holds(ast.Module(body=tree.body, type_ignores=[]))
    assert not index.holds(ast.parse("x = 1\n").body[0])
    other = ast.parse("y = 2\n")
    assert tree_index(other) is not index
    assert tree_index(other).tree is other

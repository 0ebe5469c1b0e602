"""The rules ask the one value inference (on `ast`) about libcst nodes by position: both trees
must agree on where every expression is. For each value expression of a file, the libcst
node's span must find its `ast` twin of the same shape; only groupings libcst has and `ast`
does not (the `a and b` inside `a and b and c`, the parts of an implicitly concatenated
string) are evaluated from their text instead.

The fixtures run by default; the corpus test (`pytest --corpus PATH`) checks every corpus
file the same way.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from tpulint.analysis.value_query import PositionValues, Resolver
from tpulint.analysis.walker import iter_children

# Names that are not values: attribute names, keywords, definitions, imports.
_NAME_SLOTS = (
    (cst.Attribute, "attr"),
    (cst.Arg, "keyword"),
    (cst.FunctionDef, "name"),
    (cst.ClassDef, "name"),
    (cst.ImportAlias, "name"),
    (cst.ImportAlias, "asname"),
    (cst.ImportFrom, "module"),
    (cst.Import, "names"),
    (cst.Global, "names"),
    (cst.Nonlocal, "names"),
    (cst.NameItem, "name"),
    (cst.ExceptHandler, "name"),
    (cst.Decorator, "decorator"),
)


def _is_value(node: cst.CSTNode, parent: cst.CSTNode | None) -> bool:
    if not isinstance(node, cst.BaseExpression):
        return False
    if parent is None:
        return True
    for owner, slot in _NAME_SLOTS:
        if isinstance(parent, owner) and getattr(parent, slot, None) is node:
            return owner is cst.Decorator  # a decorator is a value, the others are names
    if isinstance(parent, (cst.AsName, cst.ImportFrom)):
        return False  # `import x as y`, `except E as e`: names, not values
    if type(parent).__name__.startswith("Match") and not isinstance(parent, cst.Match):
        return False  # names a `case` pattern binds
    if isinstance(parent, cst.Param):
        return parent.name is node  # parameter names map to `ast.arg`
    if isinstance(parent, cst.ConcatenatedString):
        return False  # the parts of `"a" "b"`: one `ast` constant
    # `a and b` inside `a and b and c`: one `ast` BoolOp
    return not (
        isinstance(parent, cst.BooleanOperation)
        and parent.left is node
        and isinstance(node, cst.BooleanOperation)
    )


def unmatched(source: str, counts: list[int] | None = None) -> list[str]:
    """The value expressions of `source` whose span finds no `ast` twin of their shape
    (`counts` gets the number of value expressions looked at appended)."""
    module = cst.parse_module(source)
    parents: dict[int, cst.CSTNode] = {}
    order: list[cst.CSTNode] = []
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        order.append(node)
        for child in iter_children(node):
            parents[id(child)] = node
            stack.append(child)
    values = PositionValues(source, module, parents, None, False, Resolver())
    values._build()
    if not values._ok:
        return []  # `ast` rejects the file: no value has a twin, every rule gets UNKNOWN
    out = []
    skipped: set[int] = set()
    for node in order:
        parent = parents.get(id(node))
        if (parent is not None and id(parent) in skipped) or isinstance(
            node, (cst.Import, cst.ImportFrom)
        ):
            skipped.add(id(node))  # the dotted names of imports
            continue
        if not _is_value(node, parent):
            continue
        if isinstance(parent, cst.Del):
            continue  # `del a, b`: names, no tuple in `ast`
        if counts is not None:
            counts.append(1)
        function = values._function_of(node)
        if values._site(node, function) is None:
            out.append(f"{type(node).__name__}: {module.code_for_node(node)[:60]!r}")
    return out


FIXTURE = textwrap.dedent(
    '''
    import torch
    from torch import nn as tnn


    @torch.no_grad()
    def helper(x: torch.Tensor, *rest, scale: float = 2.0, **options) -> torch.Tensor:
        """Docstring."""
        y = (x + 1) * scale if x is not None else None
        z = [v.item() for v in y if v > 0]
        w = {k: v for k, v in options.items()}
        a, *b = rest
        c = x[0, 1:3, ..., None]
        d = "a" "b" f"{x!r:>10}" rf"{y}"
        e = a and b and c or not d
        f = lambda q, r=3: q + r
        g = sum(v for v in z)
        h = (yield x)
        with torch.no_grad() as ctx, open("p") as (fh):
            pass
        for i, (j, k) in enumerate(zip(z, w)):
            if (n := len(z)) > 2:
                raise ValueError(f"bad {n}") from None
        try:
            pass
        except (KeyError, ValueError) as exc:
            print(exc, sep="")
        match x:
            case [1, *others]:
                pass
        return -x ** 2 @ x[..., ::2]


    class Model(tnn.Module, metaclass=type):
        scale: float = 1.0

        def forward(self, batch, *, mask=None):
            out = self.net(batch["x"]).logits
            return out[mask] if mask is not None else out
    '''
)


def test_every_value_expression_has_its_twin() -> None:
    assert unmatched(FIXTURE) == []


def test_methods_nested_classes_and_class_code_find_their_twins() -> None:
    # Each method and nested class is indexed apart from its class's own code: class code
    # after a method, a decorated method, a nested class's method, and the same method in two
    # classes (placed through its class) all find their twins.
    source = textwrap.dedent(
        """
        class A:
            size = 4

            @staticmethod
            def step(x, k=size * 2):
                return x.item() + k

            limit = size + 1

            class Inner:
                depth = [1, 2]

                def run(self, y):
                    return (y, self.depth)

            tail = {"a": limit}


        class B:
            def step(x, k=3):
                return x.item() + k
        """
    )
    assert unmatched(source) == []


def test_non_ascii_lines_agree() -> None:
    source = 'def f(x):\n    s = "héllo → wörld"; y = x.item() + len(s)\n    return y\n'
    assert unmatched(source) == []


@pytest.mark.corpus
def test_corpus_files_agree(request: pytest.FixtureRequest) -> None:
    root = Path(request.config.getoption("--corpus")) / "pkgs"
    failures: list[str] = []
    counts: list[int] = []
    for path in sorted(root.rglob("*.py")):
        try:
            source = path.read_text(encoding="utf-8")
            missing = unmatched(source, counts)
        except (UnicodeDecodeError, cst.ParserSyntaxError, RecursionError):
            continue  # neither tree parses it, or it is too deep for either
        failures += [f"{path.relative_to(root)}: {m}" for m in missing]
    # The few expressions without a twin are evaluated from their text in their statement's
    # environment (the same answer, at a higher cost): at most one in 20,000.
    assert len(failures) * 20_000 <= len(counts), (
        f"{len(failures)} of {len(counts)} expressions without a twin:\n" + "\n".join(failures[:50])
    )

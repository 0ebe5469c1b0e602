"""A file's text read with Python's own parser, the way the analyses that work on `ast` read it.

One function, so the rules' screens, the value inference and the rewrites that read the file
being checked with `ast` can share one tree (FileContext.ast_tree) instead of parsing the text
once each: the last text parsed and its tree are kept (one slot, matched by identity, so a
screen's parse is the one the checked file's analysis reuses, and no other file's tree is held).
Nothing mutates these trees.
"""

from __future__ import annotations

import ast
import warnings
from bisect import bisect_left
from collections.abc import Iterator

_LAST: list[tuple[str, ast.Module | None]] = []  # the last text parsed and its tree


def parse_python(text: str) -> ast.Module | None:
    """The module's `ast` tree, or None when Python rejects the text (a syntax error, a null
    byte) or it is too deep or too big to parse. Warnings (invalid escapes) are silenced: the
    checked code is not ours to warn about. The same text object as the last call's gets the
    same tree."""
    if _LAST and _LAST[0][0] is text:
        return _LAST[0][1]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree: ast.Module | None = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    _LAST[:] = [(text, tree)]
    return tree


# Fields that never hold a node (names, flags, numbers): not read while walking. A Constant's
# value is a Python constant, never a node.
_LEAF_FIELDS = frozenset(
    {"id", "attr", "arg", "type_comment", "kind", "is_async", "level", "module", "conversion"}
    | {"simple"}
)
_NODE_FIELDS: dict[type, tuple[str, ...]] = {ast.Constant: ()}


def _node_fields(cls: type) -> tuple[str, ...]:
    fields = _NODE_FIELDS.get(cls)
    if fields is None:
        fields = _NODE_FIELDS[cls] = tuple(
            f
            for f in cls._fields  # type: ignore[attr-defined]
            if f not in _LEAF_FIELDS
        )
    return fields


def iter_child_nodes(node: ast.AST) -> list[ast.AST]:
    """`ast.iter_child_nodes(node)` as a list: the same nodes in the same order, read without
    the two generators per node the standard library's version runs."""
    out: list[ast.AST] = []
    node_type = ast.AST
    fields = _NODE_FIELDS.get(node.__class__) or _node_fields(node.__class__)
    for name in fields:
        value = getattr(node, name, None)
        if isinstance(value, node_type):
            out.append(value)
        elif isinstance(value, list):
            out.extend(item for item in value if isinstance(item, node_type))
    return out


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """`ast.walk(node)`: every node under `node` (itself first), in the same breadth-first
    order, about 1.7 times faster (one list for the queue, the node fields of each type
    looked up once)."""
    todo = [node]
    append = todo.append
    node_type = ast.AST
    known = _NODE_FIELDS
    index = 0
    while index < len(todo):
        node = todo[index]
        index += 1
        fields = known.get(node.__class__)
        if fields is None:
            fields = _node_fields(node.__class__)
        for name in fields:
            value = getattr(node, name, None)
            if isinstance(value, node_type):
                append(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, node_type):
                        append(item)
        yield node


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def defaulted_params(args: ast.arguments) -> list[tuple[ast.arg, ast.expr | None]]:
    """The parameters that have a default, each with it (keyword-only ones may have None:
    no default), in order: the last positional ones, then the keyword-only ones."""
    positional = [*args.posonlyargs, *args.args]
    return [
        *zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True),
        *zip(args.kwonlyargs, args.kw_defaults, strict=True),
    ]


def constant_names(
    body: list[ast.stmt], params: tuple[str, ...] = (), uses: ast.AST | None = None
) -> tuple[frozenset[str], dict[str, object], dict[str, dict[str, list[ast.expr]]]]:
    """The names one scope binds (a function's body with its `params`, or a module's top
    level), and those of them it binds only to one literal: every binding is a plain
    `name = literal` (None, a bool, a number or a string) with the same value (`use_norm =
    False` before `Block(use_norm=use_norm)`: the call passes False). A name bound any other
    way (a loop, `with ... as`, an import, `+=`, a walrus, a `global` or `nonlocal`
    declaration, `del`) is bound but not constant. Nested functions and classes are their
    own scopes (their names are bound here, their bodies not read); a comprehension's walrus
    binds here.

    The third part: the dicts of known keys (`known_key_dicts`), read in `uses` (the
    function, or the module's tree), when given."""
    bound: set[str] = set(params)
    displays: dict[str, list[ast.Dict]] = {}
    values: dict[str, list[object]] = {}
    other: set[str] = set(params)

    def bind(target: ast.AST) -> None:
        for node in walk(target):
            if isinstance(node, ast.Name):
                bound.add(node.id)
                other.add(node.id)
            elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
                bound.add(node.name)
                other.add(node.name)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                bound.add(node.rest)
                other.add(node.rest)

    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, _SCOPES):
            if isinstance(node, ast.Lambda):
                # its parameters shadow the scope's names in its body: none is constant
                arguments = node.args
                for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
                    bound.add(arg.arg)
                    other.add(arg.arg)
            else:
                bound.add(node.name)
                other.add(node.name)
                todo.extend(node.decorator_list)
            if isinstance(node, ast.ClassDef):
                todo.extend(node.bases)
                todo.extend(k.value for k in node.keywords)
            else:
                todo.extend(d for d in (*node.args.defaults, *node.args.kw_defaults) if d)
            continue
        if isinstance(node, ast.Assign):
            value = node.value
            literal = isinstance(value, ast.Constant) and (
                value.value is None or isinstance(value.value, (bool, int, float, str))
            )
            for target in node.targets:
                if isinstance(target, ast.Name) and literal:
                    bound.add(target.id)
                    values.setdefault(target.id, []).append(value.value)  # type: ignore[attr-defined]
                else:
                    bind(target)
                if isinstance(target, ast.Name) and isinstance(value, ast.Dict):
                    displays.setdefault(target.id, []).append(value)
            todo.append(value)
            continue
        if isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For | ast.AsyncFor | ast.NamedExpr):
            bind(node.target)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            bind(node.optional_vars)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
            other.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                name = (alias.asname or alias.name).split(".", 1)[0]
                bound.add(name)
                other.add(name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bound.update(node.names)
            other.update(node.names)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                bind(target)
        elif isinstance(node, ast.match_case):
            bind(node.pattern)
        elif isinstance(node, _COMPREHENSIONS):
            # only a walrus in it binds here; its loop variables are its own, but they
            # shadow the scope's names inside it: none of those names is constant
            for child in walk(node):
                if isinstance(child, ast.NamedExpr | ast.comprehension):
                    bind(child.target)
            continue
        todo.extend(iter_child_nodes(node))
    constants: dict[str, object] = {}
    for name, seen in values.items():
        first = seen[0]
        if name not in other and all(type(v) is type(first) and v == first for v in seen):
            constants[name] = first
    dicts = (
        known_key_dicts({n: d[0] for n, d in displays.items() if len(d) == 1}, uses)
        if displays and uses is not None
        else {}
    )
    return frozenset(bound), constants, dicts


def known_key_dicts(
    displays: dict[str, ast.Dict], uses: ast.AST
) -> dict[str, dict[str, list[ast.expr]]]:
    """Of the names bound once to a dict display whose keys are all strings (`opts = {"lr":
    0.1}`), those whose every other use in `uses` reads or sets a key by a string literal
    (`opts["lr"]`, `opts["depth"] = 3`) or spreads the dict into a call (`Net(**opts)`), with
    the expressions each key may hold: a call spreading it passes exactly those keywords.
    Any other use (a method call, `opts[k]`, handing it on, a name bound again) leaves its
    keys unknown."""
    keys: dict[str, dict[str, list[ast.expr]]] = {}
    for name, display in displays.items():
        if all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in display.keys):
            keys[name] = {}
            for key, value in zip(display.keys, display.values, strict=True):
                keys[name].setdefault(key.value, []).append(value)  # type: ignore[union-attr]
    if not keys:
        return {}
    allowed: set[int] = set()
    for node in walk(uses):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and node.value is displays.get(target.id):
                    allowed.add(id(target))
                elif (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.value, ast.Name)
                    and target.value.id in keys
                    and isinstance(target.slice, ast.Constant)
                    and isinstance(target.slice.value, str)
                ):
                    allowed.add(id(target.value))
                    keys[target.value.id].setdefault(target.slice.value, []).append(node.value)
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.value, ast.Name)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ) or (
            isinstance(node, ast.keyword) and node.arg is None and isinstance(node.value, ast.Name)
        ):
            allowed.add(id(node.value))
    for node in walk(uses):
        if isinstance(node, ast.Name) and node.id in keys and id(node) not in allowed:
            del keys[node.id]
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                keys.pop(name, None)
    return keys


class TreeIndex:
    """Every node of one tree, read in one walk, for the analyses that would otherwise walk it
    again and again (a whole-module walk per question, a walk of every statement of every
    block): the nodes in depth-first pre-order, each node's span in that order and its parent,
    and the positions of the nodes of each type. A subtree's nodes of some types are then a
    slice of a list."""

    __slots__ = ("_by_type", "_parent_of", "_position", "_sizes", "order", "tree")

    def __init__(self, tree: ast.AST) -> None:
        self.tree = tree
        order: list[ast.AST] = []
        parent_of: list[int] = []
        by_type: dict[type, list[int]] = {}
        node_type = ast.AST
        known = _NODE_FIELDS
        stack = [tree]
        parents = [-1]
        push, pop, push_parent, pop_parent = stack.append, stack.pop, parents.append, parents.pop
        add, add_parent = order.append, parent_of.append
        while stack:
            node = pop()
            index = len(order)
            add(node)
            add_parent(pop_parent())
            kind = node.__class__
            found = by_type.get(kind)
            if found is None:
                by_type[kind] = [index]
            else:
                found.append(index)
            fields = known.get(kind)
            if fields is None:
                fields = _node_fields(kind)
            # Children pushed last to first, so that they are read first to last.
            for name in reversed(fields):
                value = getattr(node, name, None)
                if isinstance(value, node_type):
                    push(value)
                    push_parent(index)
                elif isinstance(value, list):
                    for item in reversed(value):
                        if isinstance(item, node_type):
                            push(item)
                            push_parent(index)
        # Each node's subtree size: its span in the pre-order is [position, position + size).
        sizes = [1] * len(order)
        for index in range(len(order) - 1, 0, -1):
            sizes[parent_of[index]] += sizes[index]
        self.order = order
        self._parent_of = parent_of
        # The parser shares the context and operator nodes (`ast.Load()`, `ast.Add()`)
        # between places: they are leaves, and the last place stands for them here.
        self._position = dict(zip(map(id, order), range(len(order)), strict=True))
        self._sizes = sizes
        self._by_type = by_type

    def holds(self, node: ast.AST) -> bool:
        """Whether `node` is a node of the indexed tree (not one built since)."""
        index = self._position.get(id(node))
        return index is not None and self.order[index] is node

    def parent(self, node: ast.AST) -> ast.AST | None:
        """The node `node` is a child of (None for the root). Not for the context and
        operator nodes (`ast.Load()`, `ast.Add()`), which the parser shares between places."""
        index = self._position.get(id(node))
        if index is None or self._parent_of[index] < 0:
            return None
        return self.order[self._parent_of[index]]

    def of_type(self, root: ast.AST, *types: type) -> list[ast.AST]:
        """The nodes of exactly these types under `root` (itself included), in depth-first
        pre-order (not `ast.walk`'s order: for questions whose answer does not depend on the
        order). `root` must be a node of the tree (`holds`)."""
        start = self._position[id(root)]
        end = start + self._sizes[start]
        order = self.order
        if len(types) == 1:
            positions = self._by_type.get(types[0], ())
            low, high = bisect_left(positions, start), bisect_left(positions, end)
            return [order[i] for i in positions[low:high]]
        found: list[int] = []
        for kind in types:
            positions = self._by_type.get(kind, ())
            found += positions[bisect_left(positions, start) : bisect_left(positions, end)]
        found.sort()
        return [order[i] for i in found]


_INDEX: list[TreeIndex] = []  # the last tree indexed


def tree_index(tree: ast.AST) -> TreeIndex:
    """The TreeIndex of `tree`, built on the first call for it: the summary and the scope
    facts of one file share one (one slot, matched by identity, as parse_python's)."""
    if _INDEX and _INDEX[0].tree is tree:
        return _INDEX[0]
    index = TreeIndex(tree)
    _INDEX[:] = [index]
    return index


def self_attribute_name(node: ast.AST) -> str | None:
    """`A` of `self.A`, else None."""
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    ):
        return node.attr
    return None


def imported_roots(body: list[ast.stmt]) -> set[str]:
    """The top-level packages the `import` statements of a statement list (not nested ones,
    not relative imports) name: `import torch_xla.core.xla_model as xm` gives `torch_xla`."""
    roots: set[str] = set()
    for statement in body:
        if isinstance(statement, ast.Import):
            roots.update(alias.name.split(".", 1)[0] for alias in statement.names)
        elif isinstance(statement, ast.ImportFrom) and not statement.level:
            roots.add((statement.module or "").split(".", 1)[0])
    return roots


# Calls that end the program (`sys.exit(1)`, `exit()`, `os._exit(2)`): like a `raise`, what a
# block runs just before one runs once, on the way out, not every step.
PROGRAM_EXITS = frozenset({"exit", "quit", "sys.exit", "os._exit", "os.abort"})


def ends_program(statement: ast.stmt) -> bool:
    """`raise ...` or a call that ends the program (PROGRAM_EXITS) as a statement."""
    if isinstance(statement, ast.Raise):
        return True
    if not isinstance(statement, ast.Expr) or not isinstance(statement.value, ast.Call):
        return False
    func = statement.value.func
    if isinstance(func, ast.Name):
        return func.id in PROGRAM_EXITS
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and f"{func.value.id}.{func.attr}" in PROGRAM_EXITS
    )

"""The rules' view of the one value inference: the kind of the libcst expression at a position.

Rules run on libcst; the value inference (tpulint.analysis.inference) runs on `ast`, the tree
the project model is built from. A rule asks `ctx.value_kind(node)`; this module finds the
node's span in the source (one targeted code generation of its function, as for reported
nodes), the `ast` expression with the same span, and what every local name held before its
statement (the summarizer's walk in query mode), evaluates the expression there, and resolves
the symbolic atoms (a parameter, `self.<attr>`, a call into the project) with what the rules
know: the function's hotness, the project model, the class's methods.

A node without an `ast` twin (a libcst-only grouping such as the `a and b` inside
`a and b and c`, or a node a rule built) is evaluated from its source text in the environment
of the statement around it.
"""

from __future__ import annotations

import ast
import bisect
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import libcst as cst

from tpulint.analysis.inference import Atom, Scope
from tpulint.analysis.positions import PositionIndex
from tpulint.analysis.python_ast import iter_child_nodes as ast_children
from tpulint.analysis.python_ast import parse_python
from tpulint.analysis.values import (
    CPU,
    CPU_DEVICE,
    DEVICE,
    HOST,
    MODULE,
    NUMBER,
    NUMPY,
    UNKNOWN,
    ValueKind,
    combine,
    combine_elementwise,
    kind_named,
)
from tpulint.analysis.walker import iter_children

_STRING_KINDS = {
    "device": DEVICE,
    "mask": DEVICE,
    "cpu": CPU,
    "module": MODULE,
    "numpy": NUMPY,
    "number": NUMBER,
    "host": HOST,
    "cpu_device": CPU_DEVICE,
    "unknown": UNKNOWN,
}
_LINE_BREAK = re.compile(r"\r\n?|\n")
# `ast` children that hold no expression to index (or, for `arguments`, are indexed apart).
_NOT_WALKED = (ast.arguments, ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)


@dataclass
class _Site:
    """Where an `ast` expression is evaluated: the expression, the key of the environment
    before its statement, and the comprehensions and lambdas around it (innermost last)."""

    node: ast.AST
    env_key: int
    layers: tuple[ast.AST, ...] = ()
    param: int | None = None  # a parameter's name: its index
    function: ast.AST | None = None  # the function whose parameter it is


class Resolver:
    """What the rules know that the inference leaves symbolic (given by the file context)."""

    def param_kind(self, function: cst.FunctionDef, index: int) -> ValueKind:  # pragma: no cover
        raise NotImplementedError

    def attribute_kind(self, function: cst.FunctionDef | None, name: str) -> ValueKind:
        raise NotImplementedError  # pragma: no cover

    def held_attribute_kind(
        self, function: cst.FunctionDef | None, holder: str, name: str
    ) -> ValueKind:
        """What `self.<holder>.<name>` holds (ProjectModel.held_attribute): CPU or UNKNOWN."""
        return UNKNOWN  # pragma: no cover

    def call_kind(
        self,
        function: cst.FunctionDef | None,
        form: str,
        target: str,
        args: list[ValueKind],
        keywords: dict[str, ValueKind | None] | None = None,
    ) -> tuple[ValueKind, Any]:  # pragma: no cover
        """The kind a call returns and the project model's value (None when unknown);
        `keywords`: the kinds its keywords pass (None for `None`), when it passes some."""
        raise NotImplementedError

    def is_method(self, function: cst.FunctionDef | None, name: str) -> bool:
        raise NotImplementedError  # pragma: no cover

    def stored_entry_kind(
        self, function: cst.FunctionDef | None, base: list[Any], key: str
    ) -> ValueKind | None:
        """A host kind at string key `key` of a dict attribute every store of which in the
        class is a host value (`self.state["step"] = torch.tensor(0.0)`), else None."""
        return None

    def keyed_entry_kind(self, function: cst.FunctionDef | None, attr: str) -> ValueKind | None:
        """What a keyed pipeline's modules write at `batch[self.<attr>]` when it is not a
        device tensor (ProjectModel.keyed_entry_kind): nothing known without a project."""
        return None

    def keyed_pipeline_entry(self, function: cst.FunctionDef | None, atoms: list[Any]) -> bool:
        """Whether the atoms are entries of a keyed pipeline that are not device tensors
        (ProjectModel.keyed_entry_kind): none without a project."""
        return False

    def batch_key_kind(self, key: str) -> ValueKind | None:  # pragma: no cover
        """What the project's collate functions build at a batch key, when it is host data
        (ProjectModel.batch_key_kind)."""
        raise NotImplementedError

    def record_attribute(self, name: str) -> ValueKind | None:  # pragma: no cover
        """CPU when the attribute is set only by records the batch transfer does not move
        (ProjectModel.record_attribute)."""
        raise NotImplementedError

    def class_number(self, form: str, target: str, name: str) -> bool:
        """Whether attribute `name` of what the constructor call (`form`, `target`) makes is
        a Python number (ProjectModel.class_number): never known without a project."""
        return False

    def star_bindings(self) -> dict[str, str]:
        """The imports the file's star imports bring (ModuleSummary.star_bindings): none
        without a project."""
        return {}

    def never_run_branches(self) -> frozenset[tuple[int, int]]:
        """(line, column) of the first statement of each branch of the file that the
        project's calls decide never runs (ProjectScope.never_run_branches): none without a
        project."""
        return frozenset()

    def current_function(self) -> cst.FunctionDef | None:  # pragma: no cover
        """The function the walk is in: the one around a node whose parents the walk has not
        linked yet (a rule asks about the children of the node it visits)."""
        raise NotImplementedError


class PositionValues:
    """Value kinds of one file's libcst nodes, from the `ast` inference."""

    def __init__(
        self,
        source: str,
        module: cst.Module,
        parents: dict[int, cst.CSTNode],
        module_name: str | None,
        is_package: bool,
        resolver: Resolver,
        positions: PositionIndex | None = None,
        tree_of: Callable[[], ast.Module | None] | None = None,
    ) -> None:
        self.source = source
        self.module = module
        self.parents = parents
        self.module_name = module_name
        self.is_package = is_package
        self.resolver = resolver
        # The file's one index (FileContext.positions): a function placed here is placed for
        # the reports and the rewrites too.
        self._positions = positions if positions is not None else PositionIndex(module, source)
        # The file's `ast` tree (FileContext.ast_tree, shared with the rewrites that read it).
        self._tree_of = tree_of if tree_of is not None else lambda: parse_python(source)
        self._placed: set[int] = set()  # ids of the libcst roots whose nodes are placed
        self._cache: dict[int, ValueKind] = {}
        self._built = False
        self._ok = False
        self._walker: Any = None
        self._snapshots: dict[int, tuple[Any, ...]] = {}
        self._sites: dict[tuple[int, int], _Site] = {}
        self._statements: list[tuple[int, int, int]] = []  # (start, end, env key), sorted
        self._line_starts: list[int] = []
        self._statement_starts: list[int] = []
        self._ascii = False
        # The parts of the module indexed on demand (see _add_chunks), in source order, and
        # which of them are indexed.
        self._chunks: list[_Chunk] = []
        self._chunk_starts: list[int] = []
        self._indexed: set[int] = set()
        self._tree_key = 0
        self._last: Any = None  # the environment of the last expression evaluated
        self._resolved: dict[tuple[int, int, int], tuple[Any, Any, ValueKind]] = {}
        # Tuples and generators by the start of their span: `ast` counts their parentheses.
        self._parenthesized: dict[int, _Site] = {}

    # --- the public question -----------------------------------------------------------------

    def kind(self, node: cst.BaseExpression) -> ValueKind:
        key = id(node)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        result = self._kind(node)
        self._cache[key] = result
        return result

    def atoms(self, node: cst.BaseExpression) -> tuple[list[Atom], cst.FunctionDef | None] | None:
        """The inference's atoms for a node and the function they are resolved in (None when
        the file has no `ast` tree)."""
        self._build()
        if not self._ok:
            return None
        function = self._function_of(node)
        site = self._site(node, function)
        if site is not None:
            return self._evaluate(site), function
        return self._evaluate_text(node, function), function

    def is_dict(self, node: cst.BaseExpression) -> bool:
        """Whether the node holds a dict literal or comprehension on every path (the
        inference's `["s", values, keys]` atoms)."""
        found = self.atoms(node)
        if found is None:
            return False
        atoms = [a for a in found[0] if a != "none"]
        return bool(atoms) and all(
            isinstance(a, list) and a[0] == "s" and len(a) > 2 for a in atoms
        )

    def is_sequence(self, node: cst.BaseExpression) -> bool:
        """Whether the node holds a Python list or tuple built in this code (a display or a
        comprehension, the inference's `["s", values]` and `["t", ...]` atoms) on every path:
        a tensor used as its index is read on the host (`__index__`)."""
        found = self.atoms(node)
        if found is None:
            return False
        atoms = [a for a in found[0] if a != "none"]
        return bool(atoms) and all(
            isinstance(a, list) and ((a[0] == "s" and len(a) == 2) or a[0] == "t") for a in atoms
        )

    def dict_value_kinds(self, node: cst.BaseExpression) -> list[ValueKind] | None:
        """The kinds of the values a dict holds, one per value the code stores in it, when
        the node holds a dict literal or comprehension on every path (filled in afterwards
        with `d[k] = v`, `d.update(...)` or `d.setdefault(k, v)` or not); None otherwise,
        and for a dict nothing is seen stored in."""
        found = self.atoms(node)
        if found is None:
            return None
        atoms, function = found
        dicts = [a for a in atoms if a != "none"]
        if not dicts or not all(isinstance(a, list) and a[0] == "s" and len(a) > 2 for a in dicts):
            return None
        values = [value for atom in dicts for value in atom[1]]
        if not values:
            return None
        return [self.resolve([value], function) for value in values]

    def summarizer(self) -> Any:
        """The walker over this file's `ast` tree (None when the file has none)."""
        self._build()
        return self._walker if self._ok else None

    def is_local(self, name: str, node: cst.CSTNode) -> bool:
        """Whether `name` is a local binding (or parameter) where `node` is."""
        self._build()
        if not self._ok:
            return False
        function = self._function_of(node)
        env = self._env_near(node, function)
        return env is not None and name in env[0]

    # --- building ----------------------------------------------------------------------------

    def _build(self) -> None:
        if self._built:
            return
        self._built = True
        from tpulint.analysis.summary import ModuleSummary, _Summarizer

        tree = self._tree_of()
        if tree is None:
            return
        snapshots: dict[int, Any] = {}
        summary = ModuleSummary("<query>", self.module_name, self.is_package)
        summary.star_bindings = self.resolver.star_bindings()
        walker = _Summarizer(
            summary,
            self.source,
            snapshots=snapshots,
            never_run=self.resolver.never_run_branches(),
        )
        imported_cpu = getattr(self.resolver, "imported_cpu_constants", None)
        if imported_cpu is not None:
            walker.imported_cpu = imported_cpu()
        try:
            walker.module(tree)
        except RecursionError:
            return
        self._walker = walker
        self._snapshots = snapshots
        starts = [0]
        starts += [m.end() for m in _LINE_BREAK.finditer(self.source)]
        self._line_starts = starts
        self._ascii = self.source.isascii()
        self._add_chunks(tree)
        self._chunk_starts = [chunk.start for chunk in self._chunks]
        self._tree_key = id(tree)
        self._ok = True

    def _add_chunks(self, tree: ast.Module) -> None:
        """The module's parts, indexed lazily one at a time: each top-level statement, and
        in a class each method and nested class apart from the class's own code (rules ask
        about a few methods of a class: indexing the whole class for one of them indexed
        every other method too). In source order: a part follows the class it is in."""
        pending: list[tuple[ast.stmt, int]] = [(s, -1) for s in reversed(tree.body)]
        while pending:
            statement, parent = pending.pop()
            span = self._span(statement)
            if span is None:
                continue
            decorators = getattr(statement, "decorator_list", [])
            line = min([statement.lineno, *(d.lineno for d in decorators)])
            index = len(self._chunks)
            self._chunks.append(_Chunk(self._offset(line, 0), span[1], statement, parent))
            if isinstance(statement, ast.ClassDef):
                pending += [(m, index) for m in reversed(statement.body) if _is_chunk(m)]

    def _ensure(self, offset: int) -> None:
        """Index the innermost part of the module around `offset` (see _add_chunks), if it
        is not yet."""
        index = bisect.bisect_right(self._chunk_starts, offset) - 1
        # The last part starting before `offset` may end before it (a method before the
        # class code asked about): then the part around it is one it is nested in.
        while index >= 0 and self._chunks[index].end < offset:
            index = self._chunks[index].parent
        if index < 0 or index in self._indexed:
            return
        self._indexed.add(index)
        chunk = self._chunks[index]
        try:
            self._index(chunk.node, self._tree_key, own_code=True)
        except RecursionError:
            return
        self._statements.sort()
        self._statement_starts = [start for start, _, _ in self._statements]

    def _offset(self, line: int, column: int) -> int:
        """The character offset of an `ast` (line, UTF-8 byte column)."""
        start = self._line_starts[line - 1] if line - 1 < len(self._line_starts) else 0
        if column == 0:
            return start
        if self._ascii:
            return start + column
        end = self._line_starts[line] if line < len(self._line_starts) else len(self.source)
        text = self.source[start:end]
        if text.isascii():
            return start + column
        data = text.encode("utf-8", "surrogatepass")[:column]
        return start + len(data.decode("utf-8", "replace"))

    def _span(self, node: ast.AST) -> tuple[int, int] | None:
        end_line = getattr(node, "end_lineno", None)
        end_col = getattr(node, "end_col_offset", None)
        if end_line is None or end_col is None:
            return None
        return (
            self._offset(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self._offset(end_line, end_col),
        )

    def _index(self, root: ast.AST, env_key: int, own_code: bool = False) -> None:
        """Every expression under `root` by its span, with where it is evaluated (`own_code`:
        not in the methods and nested classes of a class `root`, indexed on their own)."""
        stack: list[tuple[ast.AST, int, tuple[ast.AST, ...]]] = [(root, env_key, ())]
        sites = self._sites
        while stack:
            node, env_key, layers = stack.pop()
            if own_code and node is root and isinstance(node, ast.ClassDef):
                env_key = id(node)
                span = self._span(node)
                if span is not None:
                    self._statements.append((span[0], span[1], env_key))
                for child in ast_children(node):
                    if not isinstance(child, _NOT_WALKED) and not _is_chunk(child):
                        stack.append((child, env_key, layers))
                continue
            if isinstance(node, ast.stmt):
                env_key = id(node)
                span = self._span(node)
                if span is not None:
                    self._statements.append((span[0], span[1], env_key))
            elif isinstance(node, ast.expr):
                span = self._span(node)
                if span is not None and span not in sites:
                    sites[span] = _Site(node, env_key, layers)
                    if isinstance(node, (ast.Tuple, ast.GeneratorExp)):
                        self._parenthesized.setdefault(span[0], sites[span])
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # Decorators, defaults and annotations run where the `def` is; the parameters
                # and the body in the function.
                returns = [node.returns] if node.returns is not None else []
                for child in (*node.decorator_list, *_defaults(node.args), *returns):
                    stack.append((child, env_key, layers))
                self._index_params(node.args, id(node.args), layers, node)
                for child in node.body:
                    stack.append((child, env_key, layers))
                continue
            if isinstance(node, (ast.For, ast.AsyncFor)):
                stack.append((node.target, id(node.target), layers))
                for child in (node.iter, *node.body, *node.orelse):
                    stack.append((child, env_key, layers))
                continue
            if isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    stack.append((item.context_expr, env_key, layers))
                    if item.optional_vars is not None:
                        stack.append((item.optional_vars, id(item.optional_vars), layers))
                for child in node.body:
                    stack.append((child, env_key, layers))
                continue
            if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                inner = (*layers, node)
                for generator in node.generators:
                    stack.append((generator.iter, env_key, inner))
                    stack.append((generator.target, env_key, inner))
                    for condition in generator.ifs:
                        stack.append((condition, env_key, inner))
                if isinstance(node, ast.DictComp):
                    stack.append((node.key, env_key, inner))
                    stack.append((node.value, env_key, inner))
                else:
                    stack.append((node.elt, env_key, inner))
                continue
            if isinstance(node, ast.Lambda):
                self._index_params(node.args, None, layers, node)
                stack.append((node.body, env_key, (*layers, node)))
                for child in _defaults(node.args):
                    stack.append((child, env_key, layers))
                continue
            for child in ast_children(node):
                if not isinstance(child, _NOT_WALKED):
                    stack.append((child, env_key, layers))

    def _index_params(
        self, arguments: ast.arguments, env_key: int | None, layers: tuple, owner: ast.AST
    ) -> None:
        """Parameter names (`ast.arg` spans the annotation too: the name alone is keyed)."""
        params = _params(arguments)
        starred = [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        for index, arg in enumerate([*params, *starred]):
            start = self._offset(arg.lineno, arg.col_offset)
            self._sites.setdefault(
                (start, start + len(arg.arg)),
                _Site(arg, env_key if env_key is not None else 0, layers, index, owner),
            )

    # --- finding the twin --------------------------------------------------------------------

    def _function_of(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        current = self.parents.get(id(node))
        if current is None:
            return self.resolver.current_function()
        while current is not None:
            if isinstance(current, cst.FunctionDef):
                return current
            current = self.parents.get(id(current))
        return None

    def _place(self, node: cst.CSTNode, function: cst.FunctionDef | None) -> None:
        """Give every node of `node`'s function (or of the module) a span, in one pass."""
        root: cst.CSTNode = function if function is not None else self.module
        if id(root) in self._placed:
            return
        self._placed.add(id(root))
        nodes: list[cst.CSTNode] = []
        stack: list[cst.CSTNode] = [root]
        placed_types = _PLACED_TYPES
        while stack:
            current = stack.pop()
            placed = placed_types.get(type(current))
            if placed is None:
                placed = placed_types[type(current)] = isinstance(
                    current,
                    (cst.BaseExpression, cst.BaseSmallStatement, cst.BaseCompoundStatement),
                )
            if placed:
                nodes.append(current)
            if current is not root and isinstance(current, cst.FunctionDef) and function is None:
                continue  # the module's own code only; functions are placed on their own
            stack.extend(iter_children(current))
        # Placed from the function's own code (the walk has not linked the parents of the
        # nodes ahead of it yet, so PositionIndex.resolve's grouping cannot be used).
        positions = self._positions
        if function is None or not positions.resolve_in_function(function, nodes, self.parents):
            positions.resolve_in_module(nodes)

    def _span_of(self, node: cst.CSTNode, function: cst.FunctionDef | None) -> tuple[int, int]:
        self._place(node, function)
        span = self._positions.known_span(node)
        if span is None:
            raise KeyError
        return span.start, span.end

    def _site(self, node: cst.CSTNode, function: cst.FunctionDef | None) -> _Site | None:
        try:
            span = self._span_of(node, function)
        except KeyError:
            return None
        self._ensure(span[0])
        site = self._sites.get(span)
        if site is None and isinstance(node, (cst.Tuple, cst.GeneratorExp)):
            # `ast` counts the parentheses of a tuple, and those of a generator that is a
            # call's only argument: its span starts at the `(` before the first element.
            start = span[0] - 1
            while start > 0 and self.source[start] in " \t\r\n\\\x0c":
                start -= 1
            if start >= 0 and self.source[start] == "(":
                site = self._parenthesized.get(start)
        if site is None:
            return None
        if isinstance(site.node, ast.arg):
            return site if isinstance(node, cst.Name) else None
        if not _same_shape(node, site.node):
            return None
        return site

    def _env_near(self, node: cst.CSTNode, function: cst.FunctionDef | None) -> Any:
        """The environment of the innermost statement around `node` (found by the span of the
        node or of its first placed descendant)."""
        span = None
        stack = [node]
        while stack and span is None:
            current = stack.pop()
            try:
                span = self._span_of(current, function)
            except KeyError:
                stack.extend(reversed(list(iter_children(current))))
        if span is None:
            return None
        self._ensure(span[0])
        index = bisect.bisect_right(self._statement_starts, span[0]) - 1
        while index >= 0:
            _, end, key = self._statements[index]
            if end >= span[1]:
                return self._snapshots.get(key)
            index -= 1
        return None

    # --- evaluating --------------------------------------------------------------------------

    def _scope(self, snapshot: Any) -> Scope:
        env, imports, instances, cls, params, param_classes = snapshot
        scope = Scope(None, imports, dict(env), dict(instances), cls=cls)
        scope.params = params
        scope.param_classes = param_classes
        return scope

    def _evaluate(self, site: _Site) -> list[Atom]:
        snapshot = self._snapshots.get(site.env_key)
        if snapshot is None:
            return ["unknown"]
        self._last = snapshot
        if site.param is not None:
            return snapshot[0].get(site.node.arg, ["unknown"])  # type: ignore[attr-defined]
        scope = self._scope(snapshot)
        walker = self._walker
        for layer in site.layers:
            if isinstance(layer, ast.Lambda):
                for arg in _params(layer.args):
                    scope.env[arg.arg] = ["unknown"]
            else:
                scope = walker.bind_comprehension(layer, scope)
        return walker.atoms(site.node, scope)

    def _evaluate_text(self, node: cst.CSTNode, function: cst.FunctionDef | None) -> list[Atom]:
        snapshot = self._env_near(node, function)
        if snapshot is None:
            # A node a rule built (a candidate rewrite): rules ask about it right after the
            # code it is made from, so the environment of the last answered question is its.
            snapshot = self._last
        if snapshot is None:
            return ["unknown"]
        try:
            code = self.module.code_for_node(node)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expression = ast.parse(f"(\n{code}\n)", mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return ["unknown"]
        return self._walker.atoms(expression, self._scope(snapshot))

    def _kind(self, node: cst.BaseExpression) -> ValueKind:
        found = self.atoms(node)
        if found is None:
            return UNKNOWN
        atoms, function = found
        return self.resolve(atoms, function)

    # --- resolving atoms for the rules -------------------------------------------------------

    def resolve(
        self, atoms: list[Atom], function: cst.FunctionDef | None, depth: int = 0
    ) -> ValueKind:
        if depth > 12:
            return UNKNOWN
        # Environments share atom lists, so a chain like `x = f(x)` repeated over branches is
        # a DAG whose tree is exponential: resolve each list once per depth (the answer
        # depends on the depth bound), kept alive with its answer so its id is not reused.
        key = (id(atoms), id(function), depth)
        known = self._resolved.get(key)
        if known is not None and known[0] is atoms and known[1] is function:
            return known[2]
        kinds = [self._atom(a, function, depth + 1) for a in atoms if a != "none"]
        kind = combine(kinds) if kinds else HOST
        self._resolved[key] = (atoms, function, kind)
        return kind

    def _atom(self, atom: Atom, function: cst.FunctionDef | None, depth: int) -> ValueKind:
        if isinstance(atom, str):
            return _STRING_KINDS.get(atom, UNKNOWN)
        tag = atom[0]
        if tag == "p":
            owner = self._owner_function(function, atom)
            if owner is None:
                return UNKNOWN
            return self.resolver.param_kind(owner, atom[1])
        if tag == "a":
            return self.resolver.attribute_kind(function, atom[1])
        if tag == "ha":
            return self.resolver.held_attribute_kind(function, atom[2], atom[1])
        if tag in ("t", "s"):
            return HOST
        if tag == "e":
            if len(atom) > 3:
                stored = self.resolver.stored_entry_kind(function, atom[2], atom[3])
                if stored is not None:
                    return stored
                keyed = self._entry(atom[3], atom[2], function, depth)
                if keyed is not None:
                    return keyed
                if atom[3].startswith("."):
                    return UNKNOWN  # a field of a record whose fields are not known
            return self._element(atom[1], atom[2], function, depth)
        if tag == "w":
            if self.resolver.keyed_pipeline_entry(function, atom[1]):
                return UNKNOWN  # `.to(x.device)` of a keyed pipeline's host-made entry
            return CPU if self.resolve(atom[1], function, depth) is CPU else DEVICE
        if tag == "mv":
            inner = self.resolve(atom[2], function, depth)
            if inner is MODULE:
                return MODULE
            return CPU if atom[1] == "cpu" else DEVICE
        if tag == "md":
            on_cpu = self.resolve(atom[1], function, depth) is CPU_DEVICE
            return self.resolve(atom[2] if on_cpu else atom[3], function, depth)
        if (
            tag == "g"
            and len(atom) > 4
            and all(a[0] == "c" for a in atom[4])
            and all(self.resolver.class_number(a[1], a[2], atom[1]) for a in atom[4])
        ):
            # `frame.num_detected` of `frame: Frame` whose property returns `len(...)`
            return NUMBER
        if tag in ("k", "g"):
            resolver = self.resolver
            if tag == "k" and atom[1].startswith("@"):
                # `batch[self.key_in]` of a keyed pipeline's host-made entry
                kind = resolver.keyed_entry_kind(function, atom[1][1:])
            elif tag == "k":
                kind = resolver.batch_key_kind(atom[1])
            else:
                kind = resolver.record_attribute(atom[1])
            return kind if kind is not None else self.resolve(atom[3], function, depth)
        if tag == "m":
            parts = [self._atom(a, function, depth) for a in atom[1:]]
            if not parts:
                return UNKNOWN
            result = combine_elementwise(parts)
            return NUMBER if result.is_host else result
        if tag == "v":
            kinds = [k for k in (self._atom(a, function, depth) for a in atom[1:]) if not k.is_host]
            return combine(kinds) if kinds else UNKNOWN
        if tag == "x":
            return combine_elementwise([self._atom(a, function, depth) for a in atom[1:]])
        if tag == "c":
            return self._call(atom, function, depth)[0]
        return UNKNOWN

    def _call(
        self, atom: list[Any], function: cst.FunctionDef | None, depth: int
    ) -> tuple[ValueKind, Any]:
        _, form, target, args = atom[:4]
        kinds = [self.resolve(a, function, depth) for a in args]
        keywords = (
            {
                name: None
                if all(a == "none" for a in held)
                else self.resolve(held, function, depth)
                for name, held in atom[4]
            }
            if len(atom) > 4
            else {}
        )
        if form == "self" and not self.resolver.is_method(function, target):
            form = "attr"  # `self.encoder(x)`: a sub-module, loss or metric attribute
        kind, value = self.resolver.call_kind(function, form, target, kinds, keywords)
        if kind is not UNKNOWN or (value is not None and value.elements is not None):
            return kind, value
        if form == "attr":
            attr, _, method = target.partition(".")
            if not method:
                # a module attribute applied to device tensors gives device tensors
                return (DEVICE if DEVICE in kinds else UNKNOWN), value
            base = self.resolver.attribute_kind(function, attr)
            if base is MODULE:
                return (DEVICE if DEVICE in kinds else UNKNOWN), value
            if base.is_host:
                return (NUMPY if base is NUMPY else HOST), value
            if base in (DEVICE, CPU):
                return base, value
        return UNKNOWN, value

    def _element(
        self, index: int, inner: list[Atom], function: cst.FunctionDef | None, depth: int
    ) -> ValueKind:
        kinds: list[ValueKind] = []
        for atom in inner:
            if isinstance(atom, list) and atom[0] == "s" and not atom[1] and len(inner) > 1:
                # an empty literal beside other values (`found[0] if ... else []`): it has
                # no element, so an element is one of the others'
                continue
            if isinstance(atom, list) and atom[0] == "s":
                kinds.append(self.resolve(atom[1], function, depth) if atom[1] else UNKNOWN)
            elif isinstance(atom, list) and atom[0] == "t":
                elements = atom[1:]
                if 0 <= index < len(elements):
                    kinds.append(self.resolve(elements[index], function, depth))
                else:
                    kinds.append(
                        combine([self.resolve(e, function, depth) for e in elements])
                        if elements
                        else UNKNOWN
                    )
            elif isinstance(atom, list) and atom[0] == "c":
                kind, value = self._call(atom, function, depth)
                if value is not None and value.elements is not None:
                    elements = value.elements
                    in_range = 0 <= index < len(elements)
                    chosen = [elements[index]] if in_range else list(elements)
                    kinds.append(
                        combine([kind_named("device" if e.mask else e.kind) for e in chosen])
                        if chosen
                        else UNKNOWN
                    )
                else:
                    kinds.append(_element_of(kind))
            elif isinstance(atom, list) and atom[0] == "e":
                # `info[2]` of `_, _, info = self.quantize(h)`: an element of a tuple that is
                # itself an element of what a call returns
                nested = self._element_values(atom[1], atom[2], function, depth)
                if nested is None:
                    kinds.append(_element_of(self._atom(atom, function, depth)))
                    continue
                chosen = [
                    e
                    for value in nested
                    for e in (
                        [value.elements[index]]
                        if value.elements is not None and 0 <= index < len(value.elements)
                        else list(value.elements or ())
                    )
                ]
                kinds.append(
                    combine([kind_named("device" if e.mask else e.kind) for e in chosen])
                    if chosen
                    else UNKNOWN
                )
            else:
                kinds.append(_element_of(self._atom(atom, function, depth)))
        return combine(kinds) if kinds else UNKNOWN

    def _entry(
        self, key: str, inner: list[Atom], function: cst.FunctionDef | None, depth: int
    ) -> ValueKind | None:
        """Entry `key` of the dicts `inner` holds (`scores["mse"]` of what a helper returns),
        when each is a dict whose entries are known and has that key; else None."""
        kinds: list[ValueKind] = []
        for atom in inner:
            if isinstance(atom, list) and atom[0] == "s" and len(atom) > 3:
                held = [v for k, v in atom[3] if k == key]
                if not held:
                    return None
                kinds.append(self.resolve(held[0], function, depth))
            elif isinstance(atom, list) and atom[0] == "c":
                _, value = self._call(atom, function, depth)
                entry = value.entry(key) if value is not None else None
                if entry is None or entry.params or entry.elements is not None:
                    return None  # unknown, or the callee's parameters, not bound here
                kinds.append(kind_named("device" if entry.mask else entry.kind))
            else:
                return None
        return combine(kinds) if kinds else None

    def _element_values(
        self, index: int, inner: list[Atom], function: cst.FunctionDef | None, depth: int
    ) -> list[Any] | None:
        """The values of element `index` of what calls return, when each of `inner` is a
        call returning a tuple whose element there is itself a tuple; else None."""
        found = []
        for atom in inner:
            if not (isinstance(atom, list) and atom[0] == "c"):
                return None
            _, value = self._call(atom, function, depth)
            elements = value.elements if value is not None else None
            if elements is None or not 0 <= index < len(elements):
                return None
            if elements[index].elements is None:
                return None
            found.append(elements[index])
        return found or None

    def _owner_function(self, function: cst.FunctionDef | None, atom: list[Any]) -> Any:
        """The libcst function a parameter atom belongs to: atoms carry the nesting depth of
        their function (a closure sees its enclosing function's parameters)."""
        if function is None:
            return None
        if len(atom) < 3:
            return function
        chain: list[cst.FunctionDef] = []
        current: cst.CSTNode | None = function
        while current is not None:
            if isinstance(current, cst.FunctionDef):
                chain.append(current)
            current = self.parents.get(id(current))
        chain.reverse()
        level = atom[2]
        return chain[level] if 0 <= level < len(chain) else None


# Node type -> whether `_place` gives its nodes a span (expressions and statements): a dict
# lookup instead of isinstance() against libcst's abstract base classes for every node.
_PLACED_TYPES: dict[type, bool] = {}


@dataclass
class _Chunk:
    """A part of the module indexed on its own: from the first offset of its first line (a
    decorator's) to its end; `parent`: the index of the class part it is in, or -1."""

    start: int
    end: int
    node: ast.stmt
    parent: int


def _is_chunk(statement: ast.AST) -> bool:
    """A statement of a class body indexed as a part of its own (see _add_chunks)."""
    return isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))


def _element_of(kind: ValueKind) -> ValueKind:
    """An element or row of a value of this kind."""
    if kind is MODULE:
        return MODULE  # `self.layers[i]`
    if kind.is_host and kind is not NUMPY:
        return HOST
    return kind


def _params(arguments: ast.arguments) -> list[ast.arg]:
    return [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]


def _defaults(arguments: ast.arguments) -> list[ast.AST]:
    out: list[ast.AST] = [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]
    for arg in (*_params(arguments), arguments.vararg, arguments.kwarg):
        if arg is not None and arg.annotation is not None:
            out.append(arg.annotation)
    return out


# libcst node types and the `ast` types that may share their span.
_SHAPES: dict[type, tuple[type, ...]] = {
    cst.Name: (ast.Name, ast.Constant),
    cst.Attribute: (ast.Attribute,),
    cst.Call: (ast.Call,),
    cst.Subscript: (ast.Subscript,),
    cst.BinaryOperation: (ast.BinOp,),
    cst.UnaryOperation: (ast.UnaryOp,),
    cst.BooleanOperation: (ast.BoolOp,),
    cst.Comparison: (ast.Compare,),
    cst.IfExp: (ast.IfExp,),
    cst.Integer: (ast.Constant,),
    cst.Float: (ast.Constant,),
    cst.Imaginary: (ast.Constant,),
    cst.SimpleString: (ast.Constant,),
    cst.ConcatenatedString: (ast.Constant, ast.JoinedStr),
    cst.FormattedString: (ast.JoinedStr,),
    cst.Tuple: (ast.Tuple,),
    cst.List: (ast.List,),
    cst.Set: (ast.Set,),
    cst.Dict: (ast.Dict,),
    cst.ListComp: (ast.ListComp,),
    cst.SetComp: (ast.SetComp,),
    cst.DictComp: (ast.DictComp,),
    cst.GeneratorExp: (ast.GeneratorExp,),
    cst.Lambda: (ast.Lambda,),
    cst.NamedExpr: (ast.NamedExpr,),
    cst.Await: (ast.Await,),
    cst.Yield: (ast.Yield, ast.YieldFrom),
    cst.StarredElement: (ast.Starred,),
    cst.Ellipsis: (ast.Constant,),
}


def _same_shape(node: cst.CSTNode, twin: ast.AST) -> bool:
    expected = _SHAPES.get(type(node))
    return expected is not None and isinstance(twin, expected)

"""Per-file analysis shared by every rule, computed once per file before the rules run.

It answers: which classes are Lightning classes (also through bases defined in other files of
the project), which functions are hot (run for every batch) and through which chain, so
messages can say "in training_step". Hot code is the project model's answer
(tpulint.analysis.project), which follows calls across files; this module maps the model's
functions onto the libcst tree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from tpulint.analysis.guards import effective
from tpulint.analysis.imports import Aliases, dotted_name
from tpulint.analysis.project import (
    CALLBACK_BATCH_HOOKS,
    COLD_METHODS,
    LIGHTNING_BATCH_HOOKS,
    STEP_METHODS,
    ClassKind,
    FileView,
    build_model,
    is_cold_name,
    kind_of_external,
)
from tpulint.analysis.walker import Dispatcher

__all__ = [
    "CALLBACK_BATCH_HOOKS",
    "COLD_METHODS",
    "LIGHTNING_BATCH_HOOKS",
    "STEP_METHODS",
    "ClassInfo",
    "FunctionInfo",
    "ModuleAnalysis",
    "analyze_module",
    "is_cold_name",
]


@dataclass(eq=False)
class ClassInfo:
    node: cst.ClassDef
    name: str
    qualname: str
    kind: ClassKind
    bases: list[str]  # qualified (or local) names of the bases
    local_bases: list[ClassInfo] = field(default_factory=list)
    methods: dict[str, cst.FunctionDef] = field(default_factory=dict)
    local_qualname: str = ""  # `Outer.Inner` within the module

    @property
    def is_lightning(self) -> bool:
        return self.kind.is_lightning

    def resolve_method(self, name: str, _seen: set[int] | None = None) -> cst.FunctionDef | None:
        """The method `self.<name>` calls: defined here or on a base class of this file."""
        seen = _seen if _seen is not None else set()
        if id(self) in seen:
            return None
        seen.add(id(self))
        node = self.methods.get(name)
        if node is not None:
            return node
        for base in self.local_bases:
            node = base.resolve_method(name, seen)
            if node is not None:
                return node
        return None


@dataclass(eq=False)
class FunctionInfo:
    node: cst.FunctionDef
    name: str
    cls: ClassInfo | None
    parent: FunctionInfo | None
    key: str = ""  # `qualname#index`, as the project model keys functions
    hot_reason: str | None = None  # the entry point this function is reached from, if hot
    root_hook: str | None = None  # the hook name at the root of the hot chain
    # Guard kinds every call that makes this function hot sits under (`if batch_idx == 0:`).
    call_guards: frozenset[str] = frozenset()
    # The routes that reach it when some pass its parameters literals (FileView.routes):
    # its code under a test those literals decide is read per route (FileContext).
    routes: list[tuple[dict[str, Any], str, str, frozenset[str]]] | None = None
    # The chains through each of its calls, when some pass its parameters literals
    # (FileView.chains): its code under a test those literals decide is named by a chain
    # that reaches it (FileContext).
    chains: list[tuple[dict[str, Any], str, str]] | None = None
    hot_guards: frozenset[str] = frozenset()
    owner: str | None = None  # the project model's key of the class it is a method of
    # Walks the body for its calls, on first use (most functions never need it).
    call_loader: Callable[[FunctionInfo], tuple[set[str], set[str]]] | None = field(
        default=None, repr=False
    )
    _calls: tuple[set[str], set[str]] | None = field(default=None, repr=False)

    def _load_calls(self) -> tuple[set[str], set[str]]:
        if self._calls is None:
            self._calls = self.call_loader(self) if self.call_loader else (set(), set())
        return self._calls

    @property
    def calls_self(self) -> set[str]:
        """Names of the methods this function calls as `self.<name>(...)`."""
        return self._load_calls()[0]

    @property
    def calls_bare(self) -> set[str]:
        """Names this function calls as `<name>(...)`."""
        return self._load_calls()[1]

    @property
    def hot(self) -> bool:
        return self.hot_reason is not None

    @property
    def lightning_class(self) -> ClassInfo | None:
        """The Lightning class this function belongs to (directly or as a nested def)."""
        info: FunctionInfo | None = self
        while info is not None:
            if info.cls is not None:
                return info.cls if info.cls.is_lightning else None
            info = info.parent
        return None


@dataclass
class ModuleAnalysis:
    classes: dict[int, ClassInfo]
    functions: dict[int, FunctionInfo]
    view: FileView | None = None

    def function(self, node: cst.FunctionDef) -> FunctionInfo | None:
        return self.functions.get(id(node))

    def klass(self, node: cst.ClassDef) -> ClassInfo | None:
        return self.classes.get(id(node))

    @property
    def has_lightning(self) -> bool:
        return any(c.is_lightning for c in self.classes.values())


class _Collector:
    """The pre-pass: classes, functions, imports in order, and who calls whom."""

    def __init__(self, aliases: Aliases, project: Mapping[str, int]) -> None:
        self.aliases = aliases
        self.project = project
        self.classes: dict[int, ClassInfo] = {}
        self.functions: dict[int, FunctionInfo] = {}
        self.by_name: dict[str, ClassInfo] = {}
        self.class_stack: list[ClassInfo] = []
        self.func_stack: list[FunctionInfo] = []
        # The innermost scope is a class body when the last push was a class.
        self.scope_kinds: list[str] = []
        self.names: list[str] = []  # the qualname prefix (enclosing classes and functions)
        self.counts: dict[str, int] = {}

    def _key(self, name: str) -> str:
        qualname = ".".join([*self.names, name])
        index = self.counts.get(qualname, 0)
        self.counts[qualname] = index + 1
        return f"{qualname}#{index}"

    def visit_Import(self, node: cst.Import) -> None:
        self.aliases.bind_import(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.aliases.bind_import_from(node)

    def _base_kind(self, base: cst.BaseExpression) -> tuple[str, ClassKind, ClassInfo | None]:
        if isinstance(base, cst.Subscript):  # Generic[T], Base[Config]
            base = base.value
        dotted = dotted_name(base)
        if dotted is None:
            return "?", ClassKind.NONE, None
        local = self.by_name.get(dotted)
        if local is not None:
            return local.qualname, local.kind, local
        qualname = self.aliases.qualify_dotted(dotted)
        if qualname is None:
            return dotted, ClassKind.NONE, None
        kind = self.project.get(qualname)
        if kind is not None:
            return qualname, ClassKind(kind), None
        return qualname, kind_of_external(qualname), None

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        kind = ClassKind.NONE
        bases: list[str] = []
        local_bases: list[ClassInfo] = []
        for arg in node.bases:
            if arg.keyword is not None:
                continue
            qualname, base_kind, local = self._base_kind(arg.value)
            bases.append(qualname)
            kind |= base_kind
            if local is not None:
                local_bases.append(local)
        name = node.name.value
        module = self.aliases.module
        qualname = f"{module}.{name}" if module and not self.class_stack else name
        info = ClassInfo(node, name, qualname, kind, bases, local_bases)
        info.local_qualname = ".".join([*self.names, name])
        self.classes[id(node)] = info
        if not self.func_stack:
            self.by_name[name] = info
        self.class_stack.append(info)
        self.scope_kinds.append("class")
        self.names.append(name)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.class_stack.pop()
        self.scope_kinds.pop()
        self.names.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        in_class = bool(self.scope_kinds) and self.scope_kinds[-1] == "class"
        cls = self.class_stack[-1] if in_class else None
        parent = self.func_stack[-1] if self.func_stack else None
        info = FunctionInfo(node, node.name.value, cls, parent, self._key(node.name.value))
        if cls is not None:
            cls.methods.setdefault(info.name, node)
        self.functions[id(node)] = info
        self.func_stack.append(info)
        self.scope_kinds.append("function")
        self.names.append(node.name.value)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.func_stack.pop()
        self.scope_kinds.pop()
        self.names.pop()

    def collect(self, statements: Iterable[cst.CSTNode]) -> None:
        """Walk statements only (imports, classes, functions, and the blocks that can hold
        them), not expressions: calls are collected later, for hot functions only."""
        for statement in statements:
            if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                for small in statement.body:
                    if isinstance(small, cst.Import):
                        self.visit_Import(small)
                    elif isinstance(small, cst.ImportFrom):
                        self.visit_ImportFrom(small)
            elif isinstance(statement, cst.ClassDef):
                self.visit_ClassDef(statement)
                self.collect(_statements(statement.body))
                self.leave_ClassDef(statement)
            elif isinstance(statement, cst.FunctionDef):
                self.visit_FunctionDef(statement)
                self.collect(_statements(statement.body))
                self.leave_FunctionDef(statement)
            elif isinstance(statement, cst.BaseCompoundStatement):
                for block in _blocks(statement):
                    self.collect(_statements(block))


def _statements(block: cst.BaseSuite) -> Sequence[cst.CSTNode]:
    if isinstance(block, cst.IndentedBlock):
        return block.body
    return (block,)  # a SimpleStatementSuite: `if x: import y`


def _blocks(statement: cst.BaseCompoundStatement) -> list[cst.BaseSuite]:
    """The suites of an if/for/while/try/with/match statement, `else` branches included."""
    blocks: list[cst.BaseSuite] = []
    if isinstance(statement, cst.Match):
        return [case.body for case in statement.cases]
    body = getattr(statement, "body", None)
    if isinstance(body, cst.BaseSuite):
        blocks.append(body)
    for handler in getattr(statement, "handlers", ()):
        blocks.append(handler.body)
    orelse = getattr(statement, "orelse", None)
    while orelse is not None:
        if isinstance(orelse, cst.If):  # elif
            blocks.append(orelse.body)
            orelse = orelse.orelse
        else:
            blocks.append(orelse.body)
            orelse = None
    finalbody = getattr(statement, "finalbody", None)
    if finalbody is not None:
        blocks.append(finalbody.body)
    return blocks


class _CallCollector:
    """The `self.m(...)` and `f(...)` calls of one function's body (nested defs excluded)."""

    def __init__(self) -> None:
        self.calls_self: set[str] = set()
        self.calls_bare: set[str] = set()

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            if func.value.value == "self":
                self.calls_self.add(func.attr.value)
        elif isinstance(func, cst.Name):
            self.calls_bare.add(func.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # a nested function is analysed on its own

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False


def analyze_module(
    module: cst.Module,
    aliases: Aliases,
    project: Mapping[str, int] | None = None,
    hot_methods: Iterable[str] = (),
    parents: dict[int, cst.CSTNode] | None = None,
    children_of: dict[int, list[cst.CSTNode]] | None = None,
    view: FileView | None = None,
    path: str | None = None,
    source: str | None = None,
) -> ModuleAnalysis:
    """Analyse `module`. `parents`/`children_of` are filled for later walks of the same tree
    (see Dispatcher.walk). `view` is the project model's view of the file; without one,
    the file is modelled alone (`path` and `source` name and give its text)."""
    collector = _Collector(aliases, project or {})
    collector.collect(module.body)
    functions = collector.functions

    def load_calls(info: FunctionInfo) -> tuple[set[str], set[str]]:
        # Only the functions whose calls are asked for are walked here (hot ones, mostly);
        # the walk fills the caches the rules' walk of the same tree reuses.
        calls = _CallCollector()
        dispatcher = Dispatcher()
        dispatcher.add(calls)
        dispatcher.walk(info.node.body, parents=parents, children_of=children_of)
        return calls.calls_self, calls.calls_bare

    for info in functions.values():
        info.call_loader = load_calls

    if view is None:
        # No project: the file alone is the project.
        name = path or "<stdin>"
        text = source if source is not None else module.code
        view = build_model([(name, text)], hot_methods).view(name)
    if view is not None:
        for info in functions.values():
            owner = info
            while owner.cls is None and owner.parent is not None:
                owner = owner.parent
            if owner.cls is not None:
                info.owner = view.class_gkey(owner.cls.local_qualname)
            hot = view.hot(info.key)
            if hot is not None:
                info.hot_reason = view.shown_reason(info.key, hot)
                info.root_hook = hot.root
                info.call_guards = effective(hot.guards, hot.root)
                info.hot_guards = hot.guards
                info.routes = view.routes(info.key)
                info.chains = view.chains(info.key)
    return ModuleAnalysis(collector.classes, functions, view)

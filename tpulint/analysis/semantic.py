"""Per-file analysis shared by every rule, computed once per file before the rules run.

It answers: which classes are Lightning classes (also through bases defined in other files of
the project), which functions are hot (run for every batch: step methods, `forward`, batch
hooks, and the helpers they call through `self.` or module-level names), and which hook each
hot function is reached from, so messages can say "in training_step".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import libcst as cst

from tpulint.analysis.imports import Aliases, dotted_name
from tpulint.analysis.project import ClassKind, kind_of_external
from tpulint.analysis.walker import Dispatcher

STEP_METHODS = frozenset({"training_step", "validation_step", "test_step", "predict_step"})
LIGHTNING_BATCH_HOOKS = frozenset(
    {
        "on_train_batch_start",
        "on_train_batch_end",
        "on_validation_batch_start",
        "on_validation_batch_end",
        "on_test_batch_start",
        "on_test_batch_end",
        "on_predict_batch_start",
        "on_predict_batch_end",
        "on_before_backward",
        "on_after_backward",
        "on_before_optimizer_step",
        "on_before_zero_grad",
        "optimizer_step",
        "optimizer_zero_grad",
        "backward",
        "configure_gradient_clipping",
        "on_after_batch_transfer",
        "training_step_end",
        "validation_step_end",
        "test_step_end",
    }
)
CALLBACK_BATCH_HOOKS = frozenset(
    {
        "on_train_batch_start",
        "on_train_batch_end",
        "on_validation_batch_start",
        "on_validation_batch_end",
        "on_test_batch_start",
        "on_test_batch_end",
        "on_predict_batch_start",
        "on_predict_batch_end",
        "on_before_backward",
        "on_after_backward",
        "on_before_optimizer_step",
        "on_before_zero_grad",
    }
)
# Hooks that run once per epoch/fit (or never per batch): never made hot by a call.
COLD_METHODS = frozenset(
    {
        "__init__",
        "setup",
        "teardown",
        "prepare_data",
        "configure_optimizers",
        "configure_callbacks",
        "configure_model",
        "configure_sharded_model",
        "train_dataloader",
        "val_dataloader",
        "test_dataloader",
        "predict_dataloader",
        "on_save_checkpoint",
        "on_load_checkpoint",
        "state_dict",
        "load_state_dict",
        "lr_scheduler_step",
    }
)


def is_cold_name(name: str) -> bool:
    if name in COLD_METHODS:
        return True
    return name.startswith("on_") and "batch" not in name and name not in LIGHTNING_BATCH_HOOKS


@dataclass(eq=False)
class ClassInfo:
    node: cst.ClassDef
    name: str
    qualname: str
    kind: ClassKind
    bases: list[str]  # qualified (or local) names of the bases
    local_bases: list[ClassInfo] = field(default_factory=list)
    methods: dict[str, cst.FunctionDef] = field(default_factory=dict)

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
    hot_reason: str | None = None  # the entry point this function is reached from, if hot
    root_hook: str | None = None  # the hook name at the root of the hot chain
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
        self.classes[id(node)] = info
        if not self.func_stack:
            self.by_name[name] = info
        self.class_stack.append(info)
        self.scope_kinds.append("class")

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.class_stack.pop()
        self.scope_kinds.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        in_class = bool(self.scope_kinds) and self.scope_kinds[-1] == "class"
        cls = self.class_stack[-1] if in_class else None
        parent = self.func_stack[-1] if self.func_stack else None
        info = FunctionInfo(node, node.name.value, cls, parent)
        if cls is not None:
            cls.methods.setdefault(info.name, node)
        self.functions[id(node)] = info
        self.func_stack.append(info)
        self.scope_kinds.append("function")

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.func_stack.pop()
        self.scope_kinds.pop()

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


def _entry_reason(info: FunctionInfo, hot_methods: frozenset[str]) -> str | None:
    """Why a function is hot on its own (an entry point), or None."""
    name = info.name
    if name in hot_methods:
        return name
    cls = info.cls
    if cls is None:
        return None
    if name == "forward" or name in STEP_METHODS:
        return name
    kind = cls.kind
    if kind & (ClassKind.LIGHTNING_MODULE | ClassKind.LIGHTNING_DATAMODULE):
        if name in LIGHTNING_BATCH_HOOKS:
            return name
        if name.endswith("_step") and not is_cold_name(name):
            return name
    if kind & ClassKind.CALLBACK and name in CALLBACK_BATCH_HOOKS:
        return name
    return None


def analyze_module(
    module: cst.Module,
    aliases: Aliases,
    project: Mapping[str, int] | None = None,
    hot_methods: Iterable[str] = (),
    parents: dict[int, cst.CSTNode] | None = None,
    children_of: dict[int, list[cst.CSTNode]] | None = None,
) -> ModuleAnalysis:
    """Analyse `module`. `parents`/`children_of` are filled for later walks of the same tree
    (see Dispatcher.walk)."""
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

    hot = frozenset(hot_methods)
    module_functions = {
        info.name: info for info in functions.values() if info.cls is None and info.parent is None
    }
    # Subclasses in this file whose hot methods call self.<m> defined on a local base.
    subclasses: dict[int, list[ClassInfo]] = {}
    for cls in collector.classes.values():
        for base in cls.local_bases:
            subclasses.setdefault(id(base), []).append(cls)

    nested: dict[int, list[FunctionInfo]] = {}
    for info in functions.values():
        if info.parent is not None:
            nested.setdefault(id(info.parent), []).append(info)

    worklist: list[FunctionInfo] = []
    for info in functions.values():
        reason = _entry_reason(info, hot)
        if reason is not None:
            info.hot_reason = reason
            info.root_hook = reason
            worklist.append(info)
    while worklist:
        info = worklist.pop()
        targets: list[FunctionInfo] = []
        owner = info
        while owner.cls is None and owner.parent is not None:
            owner = owner.parent
        if owner.cls is not None:
            for name in info.calls_self:
                node = owner.cls.resolve_method(name)
                if node is not None:
                    target = functions.get(id(node))
                    if target is not None:
                        targets.append(target)
        for name in info.calls_bare:
            target = module_functions.get(name)
            if target is not None:
                targets.append(target)
        for target in targets:
            if target.hot or is_cold_name(target.name):
                continue
            target.hot_reason = f"`{target.name}` (called from {info.root_hook})"
            target.root_hook = info.root_hook
            worklist.append(target)
        # Functions defined inside a hot function run as part of it.
        for target in nested.get(id(info), ()):
            if not target.hot:
                target.hot_reason = info.hot_reason
                target.root_hook = info.root_hook
                worklist.append(target)
    return ModuleAnalysis(collector.classes, functions)

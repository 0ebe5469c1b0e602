"""Where an attribute is used across the project, and when the code that uses it runs.

A module that collects a value every step (`self.losses.append(loss.item())`) and reads the
collection at the end of the epoch shares that collection with every method, callback and
helper that touches it (`pl_module.losses` in a callback, `module.losses` in a metrics
function). The rewrite that keeps those values on the device until the epoch ends must see
all of them. This module finds them, on demand, for one attribute name at a time:

- `AttributeIndex.accesses(name)`: every `<expr>.<name>` in the project's files, read with
  `ast` (files whose text does not contain `.<name>` are not parsed), each with its file, its
  enclosing function and that function's project-model key;
- `phase_of(model, gkey)`: when a function runs: every step ("step", the project model's hot
  functions), at the end of an epoch or of a loop ("end": `on_validation_epoch_end`, a
  callback's `on_train_epoch_end`, and helpers only they call), when an epoch or a run starts
  ("start": `__init__`, `setup`, `on_*_epoch_start`), or "unknown".

Only facts: what may be rewritten is decided by the rewrite (tpulint.rules.rewrite.deferral).
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tpulint.analysis.hooks import CALLBACK_BATCH_HOOKS, LIGHTNING_BATCH_HOOKS, STEP_METHODS
from tpulint.analysis.python_ast import iter_child_nodes as ast_children
from tpulint.analysis.python_ast import parse_python
from tpulint.analysis.python_ast import walk as ast_walk
from tpulint.datatypes.diagnostics import Location
from tpulint.datatypes.roundtrip import physical_lines

if TYPE_CHECKING:
    from tpulint.analysis.project import ProjectModel, _Function

# The hooks that run once at the end of a loop's epoch, or of the loop, by loop. Lightning 1.x's
# `*_epoch_end(outputs)` hooks are listed too: code written for them reads what the steps
# collected at the same moment.
END_HOOKS: dict[str, str] = {
    "on_train_epoch_end": "train",
    "training_epoch_end": "train",
    "on_validation_epoch_end": "validation",
    "validation_epoch_end": "validation",
    "on_validation_end": "validation",
    "on_test_epoch_end": "test",
    "test_epoch_end": "test",
    "on_test_end": "test",
    "on_predict_epoch_end": "predict",
    "on_predict_end": "predict",
    "on_train_end": "fit",
    "on_fit_end": "fit",
    "teardown": "fit",
}
# The hooks, of each loop, that run once per epoch after its last step: where a container the
# steps fill is emptied for the next epoch.
EPOCH_END_HOOKS: dict[str, tuple[str, ...]] = {
    "train": ("on_train_epoch_end", "training_epoch_end"),
    "validation": ("on_validation_epoch_end", "validation_epoch_end", "on_validation_end"),
    "test": ("on_test_epoch_end", "test_epoch_end", "on_test_end"),
    "predict": ("on_predict_epoch_end", "on_predict_end"),
}
START_HOOKS = frozenset(
    {
        "__init__",
        "setup",
        "configure_model",
        "configure_sharded_model",
        "on_fit_start",
        "on_train_start",
        "on_validation_start",
        "on_test_start",
        "on_predict_start",
        "on_train_epoch_start",
        "on_validation_epoch_start",
        "on_test_epoch_start",
        "on_predict_epoch_start",
        "on_sanity_check_start",
        "on_sanity_check_end",
    }
)
# The step entry points of each loop: a value collected there is collected in that loop.
_LOOP_OF_ENTRY = {
    "training_step": "train",
    "on_train_batch_start": "train",
    "on_train_batch_end": "train",
    "on_before_backward": "train",
    "on_after_backward": "train",
    "on_before_optimizer_step": "train",
    "on_before_zero_grad": "train",
    "optimizer_step": "train",
    "training_step_end": "train",
    "validation_step": "validation",
    "on_validation_batch_start": "validation",
    "on_validation_batch_end": "validation",
    "validation_step_end": "validation",
    "test_step": "test",
    "on_test_batch_start": "test",
    "on_test_batch_end": "test",
    "test_step_end": "test",
    "predict_step": "predict",
    "on_predict_batch_start": "predict",
    "on_predict_batch_end": "predict",
}


@dataclass(frozen=True)
class Phase:
    """When a function runs: `kind` is "step", "end", "start" or "unknown"; `loops` the loops
    whose epoch end it runs at ("end"), or whose steps it runs in ("step"); `where` names the
    hook it runs in, for messages."""

    kind: str
    loops: frozenset[str] = frozenset()
    where: str = ""


UNKNOWN = Phase("unknown")


class ParsedFile:
    """A project file read with `ast`, with the parent of every node and character columns."""

    def __init__(self, path: str, text: str, tree: ast.Module) -> None:
        self.path = path
        self.text = text
        self.tree = tree
        self.lines = physical_lines(text)  # as Python numbers lines (not str.splitlines)
        self.parents: dict[int, ast.AST] = {}
        self._expressions: dict[tuple[int, int], ast.AST] | None = None  # see node_at
        for node in ast_walk(tree):
            for child in ast_children(node):
                self.parents[id(child)] = node
        starts = [0]
        for line in self.lines:
            starts.append(starts[-1] + len(line))
        self._starts = starts

    def parent(self, node: ast.AST) -> ast.AST | None:
        return self.parents.get(id(node))

    def ancestors(self, node: ast.AST):
        current = self.parent(node)
        while current is not None:
            yield current
            current = self.parent(current)

    def function_of(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return ancestor
        return None

    def statement_of(self, node: ast.AST) -> ast.stmt | None:
        for ancestor in [node, *self.ancestors(node)]:
            if isinstance(ancestor, ast.stmt):
                return ancestor
        return None

    def column(self, line: int, byte_column: int) -> int:
        """The 0-based character column of a 0-based UTF-8 byte offset on 1-based `line`."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return len(text.encode("utf-8")[:byte_column].decode("utf-8", errors="replace"))

    def offset(self, line: int, byte_column: int) -> int:
        """The character offset into the text of (1-based line, byte column)."""
        line = max(1, min(line, len(self._starts) - 1)) if len(self._starts) > 1 else 1
        return self._starts[line - 1] + self.column(line, byte_column)

    def span(self, node: ast.AST) -> tuple[int, int]:
        """Character offsets of a node's source (ast's positions, without parentheses)."""
        return (
            self.offset(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self.offset(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )

    def source(self, node: ast.AST) -> str:
        begin, end = self.span(node)
        return self.text[begin:end]

    def location(self, offset: int) -> Location:
        """The 1-based (line, character column) of a character offset."""
        import bisect

        index = bisect.bisect_right(self._starts, offset) - 1
        index = max(0, min(index, len(self.lines) - 1)) if self.lines else 0
        return Location(index + 1, offset - self._starts[index] + 1)

    def node_at(self, start: Location, end: Location) -> ast.AST | None:
        """The outermost expression whose source spans exactly (start, end)."""
        begin = (
            self._starts[start.line - 1] + start.column - 1 if start.line <= len(self.lines) else -1
        )
        finish = self._starts[end.line - 1] + end.column - 1 if end.line <= len(self.lines) else -1
        if self._expressions is None:
            # Every expression by its span, the first in `ast.walk`'s (breadth-first) order
            # kept: the outermost. Built once, on the first question (a walk per question
            # cost a whole-tree walk for every `.item()` a rule asked about).
            self._expressions = {}
            for node in ast_walk(self.tree):
                if isinstance(node, ast.expr):
                    self._expressions.setdefault(self.span(node), node)
        return self._expressions.get((begin, finish))


def parse_file(path: str, text: str, tree: ast.Module | None = None) -> ParsedFile | None:
    """The file read with `ast` (`tree`: its tree parsed already), None when it does not
    parse."""
    if tree is None:
        tree = parse_python(text)
    return ParsedFile(path, text, tree) if tree is not None else None


@dataclass(frozen=True)
class Access:
    """One `<base>.<name>` expression: `node` is the ast.Attribute, `function` the enclosing
    function (None at module or class level) and `gkey` its project-model key; `through_self`
    when the base is the `self` of a method (`owner` is that method's class)."""

    file: ParsedFile
    node: ast.Attribute
    function: ast.FunctionDef | ast.AsyncFunctionDef | None
    gkey: str | None
    owner: str | None
    through_self: bool


@dataclass
class AttributeIndex:
    """The project's files, read and parsed when an attribute name is first asked about."""

    model: ProjectModel
    _parsed: dict[str, tuple[str, ParsedFile | None]] = field(default_factory=dict)
    _mentions: dict[str, list[str]] = field(default_factory=dict)
    _functions: dict[str, dict[int, _Function]] = field(default_factory=dict)

    def file(
        self,
        path: str,
        text: str | None = None,
        tree_of: Callable[[], ast.Module | None] | None = None,
    ) -> ParsedFile | None:
        """`path` parsed (from `text` when given: the buffer being checked; `tree_of` gives
        the tree of `text` when the caller has it parsed already)."""
        cached = self._parsed.get(path)
        if text is None:
            if cached is not None:
                return cached[1]
            text = _read(path)
            if text is None:
                self._parsed[path] = ("", None)
                return None
        elif cached is not None and cached[0] == text:
            return cached[1]
        if tree_of is not None:
            tree = tree_of()
            parsed = ParsedFile(path, text, tree) if tree is not None else None
        else:
            parsed = parse_file(path, text)
        self._parsed[path] = (text, parsed)
        return parsed

    def mentioning(self, name: str) -> list[str]:
        """The project files whose text contains `.<name>` as an attribute."""
        found = self._mentions.get(name)
        if found is None:
            pattern = re.compile(rf"\.\s*{re.escape(name)}\b")
            found = []
            for path in sorted(self.model.modules):
                cached = self._parsed.get(path)
                text = cached[0] if cached is not None else _read(path)
                if text and pattern.search(text):
                    found.append(path)
            self._mentions[name] = found
        return found

    def accesses(self, name: str, overrides: dict[str, str] | None = None) -> list[Access] | None:
        """Every `<expr>.<name>` in the project (None when a file that mentions it cannot be
        parsed: then what reads it is not known)."""
        out: list[Access] = []
        overridden = {os.path.realpath(p) for p in overrides or {} if p not in ("-", "<stdin>")}
        paths = [p for p in self.mentioning(name) if os.path.realpath(p) not in overridden]
        paths += list(overrides or {})
        for path in paths:
            text = (overrides or {}).get(path)
            parsed = self.file(path, text)
            if parsed is None:
                if text is not None and f".{name}" not in text:
                    continue
                return None
            for node in ast_walk(parsed.tree):
                if isinstance(node, ast.Attribute) and node.attr == name:
                    out.append(self._access(parsed, node))
        return out

    def references(
        self, name: str
    ) -> list[tuple[ParsedFile, ast.expr, ast.FunctionDef | ast.AsyncFunctionDef | None]] | None:
        """Every use of the name `name` in the project: `name` and `<expr>.name` loads, with
        their file and enclosing function (None when a file that has it does not parse)."""
        pattern = re.compile(rf"\b{re.escape(name)}\b")
        out = []
        for path in sorted(self.model.modules):
            cached = self._parsed.get(path)
            text = cached[0] if cached is not None else _read(path)
            if not text or not pattern.search(text):
                continue
            parsed = self.file(path)
            if parsed is None:
                return None
            for node in ast_walk(parsed.tree):
                if (
                    (isinstance(node, ast.Name) and node.id == name)
                    or (isinstance(node, ast.Attribute) and node.attr == name)
                ) and isinstance(getattr(node, "ctx", None), ast.Load):
                    out.append((parsed, node, parsed.function_of(node)))
        return out

    def function_entry(self, path: str, node: ast.AST | None) -> _Function | None:
        """The project model's function for an ast function definition."""
        if node is None:
            return None
        table = self._functions.get(path)
        if table is None:
            table = {}
            module = self.model.module_at(path)
            if module is not None:
                functions = self.model._module_functions[id(module)]
                for entry in functions.values():
                    table.setdefault(entry.summary.line, entry)
            self._functions[path] = table
        return table.get(node.lineno)  # type: ignore[attr-defined]

    def _access(self, parsed: ParsedFile, node: ast.Attribute) -> Access:
        function = parsed.function_of(node)
        entry = self.function_entry(parsed.path, function)
        owner = entry.owner if entry is not None else None
        through_self = (
            isinstance(node.value, ast.Name)
            and function is not None
            and _first_param(function) == node.value.id
            and owner is not None
            and not _is_static(function)
        )
        return Access(
            parsed, node, function, entry.gkey if entry else None, owner, bool(through_self)
        )


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def _first_param(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    args = [*function.args.posonlyargs, *function.args.args]
    return args[0].arg if args else None


def _is_static(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(
        isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod")
        for d in function.decorator_list
    )


def attribute_index(model: ProjectModel) -> AttributeIndex:
    """The model's index (one per model, built on first use)."""
    index = getattr(model, "_attribute_index", None)
    if index is None:
        index = AttributeIndex(model)
        model._attribute_index = index  # type: ignore[attr-defined]
    return index


# --- when a function runs ----------------------------------------------------------------------


def phase_of(model: ProjectModel, gkey: str | None) -> Phase:
    """When the function `gkey` runs (see the module docstring)."""
    if gkey is None:
        return UNKNOWN
    cache: dict[str, Phase] = model.__dict__.setdefault("_phases", {})
    found = cache.get(gkey)
    if found is None:
        found = _phase(model, gkey, cache, set())
        cache[gkey] = found
    return found


def _phase(model: ProjectModel, gkey: str, cache: dict[str, Phase], visiting: set[str]) -> Phase:
    from tpulint.analysis.project import ClassKind

    info = model.hot.get(gkey)
    fn = model.functions.get(gkey)
    if info is not None:
        return Phase("step", step_loops(model, gkey), info.name)
    if fn is None:
        return UNKNOWN
    name = fn.summary.name
    kind = model.class_kind(fn.owner) if fn.owner is not None else ClassKind.NONE
    lightning = bool(kind & (ClassKind.LIGHTNING_MODULE | ClassKind.CALLBACK))
    if lightning and fn.summary.parent is None and fn.summary.cls is not None:
        if name in END_HOOKS:
            return Phase("end", frozenset({END_HOOKS[name]}), name)
        if name in START_HOOKS:
            return Phase("start", frozenset(), name)
    if name == "__init__" and fn.summary.cls is not None:
        return Phase("start", frozenset(), name)
    if gkey in visiting or name.startswith("__"):
        return UNKNOWN
    # A helper runs when the code that calls it runs. The project model records calls only
    # where they may make code hot, so the calls are found by name across the project (a
    # call of another function of that name counts too: the phase is known only if every
    # one is), and a reference that is not a call (a callback passed around) is unknown.
    index = attribute_index(model)
    sites = index.references(name)
    if sites is None or not sites:
        return UNKNOWN
    visiting.add(gkey)
    kinds: set[str] = set()
    loops: set[str] = set()
    where = ""
    try:
        for file, node, caller in sites:
            if not _is_call(file, node):
                return UNKNOWN
            entry = index.function_entry(file.path, caller)
            if entry is None:
                return UNKNOWN
            if entry.gkey == gkey:
                continue  # recursion
            phase = cache.get(entry.gkey)
            if phase is None:
                phase = _phase(model, entry.gkey, cache, visiting)
                if entry.gkey not in visiting:
                    cache[entry.gkey] = phase
            if phase.kind in ("step", "unknown"):
                return UNKNOWN if phase.kind == "unknown" else phase
            kinds.add(phase.kind)
            loops |= phase.loops
            where = where or phase.where
    finally:
        visiting.discard(gkey)
    if not kinds:
        return UNKNOWN
    # Called only at the end of epochs, or only when things start (or both: the code runs
    # once per epoch or run either way, never per step).
    return Phase("end" if "end" in kinds else "start", frozenset(loops), where)


def _is_call(file: ParsedFile, node: ast.AST) -> bool:
    parent = file.parent(node)
    return isinstance(parent, ast.Call) and parent.func is node


def step_loops(model: ProjectModel, gkey: str) -> frozenset[str]:
    """The loops whose steps run a hot function: the step methods and batch hooks that reach
    it through the project's calls."""
    loops: set[str] = set()
    seen = {gkey}
    queue = [gkey]
    callers = model._callers()
    while queue:
        current = queue.pop()
        fn = model.functions.get(current)
        if fn is None:
            continue
        name = fn.summary.name
        loop = _LOOP_OF_ENTRY.get(name)
        if loop is not None and name in (
            STEP_METHODS | LIGHTNING_BATCH_HOOKS | CALLBACK_BATCH_HOOKS
        ):
            loops.add(loop)
            continue
        if name == "forward":
            loops.update(("train", "validation", "test", "predict"))
        for caller, _, _ in callers.get(current, []):
            if caller.gkey not in seen:
                seen.add(caller.gkey)
                queue.append(caller.gkey)
        if fn.summary.parent is not None:
            parent = f"{fn.module.path}:{fn.summary.parent}"
            if parent not in seen:
                seen.add(parent)
                queue.append(parent)
    return frozenset(loops)


def related_classes(model: ProjectModel, gkey: str) -> set[str]:
    """The class, its project bases and its subclasses: `self.<name>` in any of their methods
    is the same attribute of the same object."""
    return {*model.mro(gkey), *model.subclasses(gkey)}

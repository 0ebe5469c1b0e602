"""Source positions for the few nodes that are reported.

libcst's PositionProvider computes a range for every node of the module and costs more than
parsing (measured: 131 ms/kloc against 89 ms/kloc for the parse). tpulint only needs the
positions of reported nodes and of the anchors their fixes edit, so it runs one code
generation pass that records token indexes for those nodes only, then turns token indexes
into character offsets and line/column pairs. That is about a fifth of the parse cost, and it
is only paid by files that have findings.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from typing import NamedTuple

import libcst as cst
from libcst._nodes.internal import CodegenState

from tpulint.datatypes.diagnostics import Location


class Span(NamedTuple):
    """Character offsets into the module's code (a named tuple: one is made for every node
    of every placed function, and a frozen dataclass cost twice as much to create).

    `start`/`end` exclude whitespace and parentheses the node does not own syntactically
    (like PositionProvider); `outer_start`/`outer_end` include everything the node generates
    (like WhitespaceInclusivePositionProvider), which is what a text edit must replace.
    """

    start: int
    end: int
    outer_start: int
    outer_end: int


class _TargetedCodegenState(CodegenState):
    """Code generation that notes token indexes around the target nodes only."""

    def __init__(self, default_indent: str, default_newline: str, targets: set[int]) -> None:
        super().__init__(default_indent=default_indent, default_newline=default_newline)
        self.targets = targets
        self.outer: dict[int, list[int]] = {}
        self.syntactic: dict[int, list[int]] = {}
        # node id -> (start node id, end node id) for syntactic ranges hoisted from children
        self.hoisted: dict[int, tuple[int | None, int | None]] = {}

    def before_codegen(self, node: cst.CSTNode) -> None:
        key = id(node)
        if key in self.targets:
            self.outer[key] = [len(self.tokens), -1]

    def after_codegen(self, node: cst.CSTNode) -> None:
        key = id(node)
        if key in self.targets:
            self.outer[key][1] = len(self.tokens)

    def record_syntactic_position(
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> AbstractContextManager[None]:
        # A plain context object, not libcst's generator-based @contextmanager: code
        # generation enters one per node, and the generator machinery cost about a quarter
        # of placing a function's nodes (py-spy, nemo-toolkit).
        key = id(node)
        if key not in self.targets:
            return _NOT_RECORDED
        # The syntactic range of e.g. a decorated function starts at a child's start: make
        # sure that child is recorded while it is generated.
        if start_node is not None:
            self.targets.add(id(start_node))
        if end_node is not None:
            self.targets.add(id(end_node))
        return _SyntacticRecord(self, key, start_node, end_node)


class _NotRecorded:
    """The context around a node whose position is not wanted: nothing to note."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: object) -> bool:
        return False


_NOT_RECORDED = _NotRecorded()


class _SyntacticRecord:
    """Notes the token indexes around a target node's syntactic part (and the children its
    range is hoisted from) once its code is generated."""

    __slots__ = ("begin", "end_id", "key", "start_id", "state")

    def __init__(
        self,
        state: _TargetedCodegenState,
        key: int,
        start_node: cst.CSTNode | None,
        end_node: cst.CSTNode | None,
    ) -> None:
        self.state = state
        self.key = key
        self.start_id = id(start_node) if start_node is not None else None
        self.end_id = id(end_node) if end_node is not None else None
        self.begin = 0

    def __enter__(self) -> None:
        self.begin = len(self.state.tokens)

    def __exit__(self, exc_type: type[BaseException] | None, *exc_info: object) -> bool:
        if exc_type is None:
            state = self.state
            state.syntactic[self.key] = [self.begin, len(state.tokens)]
            state.hoisted[self.key] = (self.start_id, self.end_id)
        return False


def _enclosing_function(
    node: cst.CSTNode, parents: Mapping[int, cst.CSTNode]
) -> cst.FunctionDef | None:
    current = parents.get(id(node))
    while current is not None:
        if isinstance(current, cst.FunctionDef):
            return current
        current = parents.get(id(current))
    return None


def _indentation(
    node: cst.CSTNode, parents: Mapping[int, cst.CSTNode], module: cst.Module
) -> list[str]:
    """The indentation tokens the blocks around `node` add when the module is generated."""
    indents = []
    current = parents.get(id(node))
    while current is not None:
        if isinstance(current, cst.IndentedBlock):
            indents.append(current.indent if current.indent is not None else module.default_indent)
        current = parents.get(id(current))
    indents.reverse()
    return indents


class PositionIndex:
    """Maps nodes of one module to spans and line/column locations."""

    def __init__(self, module: cst.Module, code: str | None = None) -> None:
        self._module = module
        self._code = code
        self._spans: dict[int, Span] = {}
        self._line_starts: list[int] | None = None

    @property
    def code(self) -> str:
        if self._code is None:
            self._code = self._module.code
        return self._code

    def resolve(
        self, nodes: Iterable[cst.CSTNode], parents: Mapping[int, cst.CSTNode] | None = None
    ) -> None:
        """Compute spans for `nodes`.

        With `parents`, nodes inside a function are positioned by generating that function's
        code alone (indented as in the module) and finding it in the source, which is exact
        (libcst regenerates the source byte for byte) and costs the size of the functions with
        findings instead of the whole module; a function whose text occurs twice, and nodes
        outside functions, fall back to one pass over the whole module."""
        pending = [n for n in nodes if id(n) not in self._spans]
        if not pending:
            return
        rest: list[cst.CSTNode] = []
        if parents is not None and self._code is not None:
            by_function: dict[int, tuple[cst.FunctionDef, list[cst.CSTNode]]] = {}
            for node in pending:
                function = _enclosing_function(node, parents)
                if function is None:
                    rest.append(node)
                else:
                    by_function.setdefault(id(function), (function, []))[1].append(node)
            for function, members in by_function.values():
                if not self.resolve_in_function(function, members, parents):
                    rest += members
        else:
            rest = pending
        if rest:
            self.resolve_in_module(rest)

    def resolve_in_module(self, nodes: list[cst.CSTNode]) -> None:
        """Place `nodes` by generating the whole module's code."""
        self._resolve_in(self._module, nodes, None)

    def known_span(self, node: cst.CSTNode) -> Span | None:
        """The node's span if it is placed already (None for a node the module's code does
        not hold, such as one a rule built)."""
        return self._spans.get(id(node))

    def resolve_in_function(
        self,
        function: cst.FunctionDef,
        nodes: list[cst.CSTNode],
        parents: Mapping[int, cst.CSTNode],
    ) -> bool:
        """Place `nodes` (inside `function`) by generating the code of the function, or of the
        innermost function or class around it whose text occurs once in the module (two
        classes with the same small method: the class tells them apart), instead of the
        whole module; False when none does."""
        current: cst.CSTNode | None = function
        while current is not None:
            if isinstance(current, (cst.FunctionDef, cst.ClassDef)) and self._resolve_in(
                current, nodes, parents
            ):
                return True
            current = parents.get(id(current))
        return False

    def _resolve_in(
        self,
        root: cst.CSTNode,
        nodes: list[cst.CSTNode],
        parents: Mapping[int, cst.CSTNode] | None,
    ) -> bool:
        """Generate `root`'s code recording `nodes`; False if `root` cannot be placed."""
        wanted = {id(n) for n in nodes}
        module = self._module
        state = _TargetedCodegenState(module.default_indent, module.default_newline, set(wanted))
        if root is not module and parents is not None:
            state.indent_tokens.extend(_indentation(root, parents, module))
        root._codegen(state)
        offsets = [0, *itertools.accumulate(map(len, state.tokens))]
        # A module without a final newline drops its last newline token after the last
        # statement was recorded: token indexes past the end mean the end.
        offsets += [offsets[-1]] * 2
        if root is module:
            base = 0
            if self._code is None:
                self._code = "".join(state.tokens)
        else:
            text = "".join(state.tokens)
            base = self._code.find(text)
            if base == -1 or self._code.find(text, base + 1) != -1:
                return False
        for key in wanted:
            outer = state.outer.get(key)
            if outer is None:
                continue
            outer_start, outer_end = offsets[outer[0]], offsets[outer[1]]
            syn = state.syntactic.get(key)
            if syn is None:
                start, end = outer_start, outer_end
            else:
                start, end = offsets[syn[0]], offsets[syn[1]]
                start_id, end_id = state.hoisted[key]
                if start_id is not None and start_id in state.outer:
                    start = offsets[state.outer[start_id][0]]
                if end_id is not None and end_id in state.outer:
                    end = offsets[state.outer[end_id][1]]
            self._spans[key] = Span(base + start, base + end, base + outer_start, base + outer_end)
        return True

    def span(self, node: cst.CSTNode) -> Span:
        key = id(node)
        if key not in self._spans:
            self.resolve([node])
        return self._spans[key]

    def location(self, offset: int) -> Location:
        if self._line_starts is None:
            starts = [0]
            code = self.code
            if "\r" in code:  # lines end at \r\n, \r and \n, as Python's tokenizer has it
                starts += [m.end() for m in re.finditer(r"\r\n?|\n", code)]
            else:
                find = code.find
                i = find("\n")
                while i != -1:
                    starts.append(i + 1)
                    i = find("\n", i + 1)
            self._line_starts = starts
        line = bisect.bisect_right(self._line_starts, offset) - 1
        return Location(line + 1, offset - self._line_starts[line] + 1)

    def range(self, node: cst.CSTNode) -> tuple[Location, Location]:
        span = self.span(node)
        start = self.location(span.start)
        end = self.location(span.end)
        return start, end

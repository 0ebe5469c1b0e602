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
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import libcst as cst
from libcst._nodes.internal import CodegenState

from tpulint.diagnostics import Location


@dataclass(frozen=True)
class Span:
    """Character offsets into the module's code.

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

    @contextmanager
    def record_syntactic_position(
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> Iterator[None]:
        key = id(node)
        if key not in self.targets:
            yield
            return
        # The syntactic range of e.g. a decorated function starts at a child's start: make
        # sure that child is recorded while it is generated.
        if start_node is not None:
            self.targets.add(id(start_node))
        if end_node is not None:
            self.targets.add(id(end_node))
        begin = len(self.tokens)
        yield
        self.syntactic[key] = [begin, len(self.tokens)]
        self.hoisted[key] = (
            id(start_node) if start_node is not None else None,
            id(end_node) if end_node is not None else None,
        )


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

    def resolve(self, nodes: Iterable[cst.CSTNode]) -> None:
        """Compute spans for `nodes` (one code generation pass for all of them)."""
        wanted = {id(n) for n in nodes} - self._spans.keys()
        if not wanted:
            return
        state = _TargetedCodegenState(
            self._module.default_indent, self._module.default_newline, set(wanted)
        )
        self._module._codegen(state)
        offsets = [0, *itertools.accumulate(map(len, state.tokens))]
        if self._code is None:
            self._code = "".join(state.tokens)
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
            self._spans[key] = Span(start, end, outer_start, outer_end)

    def span(self, node: cst.CSTNode) -> Span:
        key = id(node)
        if key not in self._spans:
            self.resolve([node])
        return self._spans[key]

    def location(self, offset: int) -> Location:
        if self._line_starts is None:
            starts = [0]
            code = self.code
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

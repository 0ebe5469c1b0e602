"""Why a step compiled a new graph, in the user's terms: the line whose value, shape or code
differs between that graph and the nearest earlier one (graph_diff.py), the Python value
read on the host that feeds it, and what to write instead. Lightning's and torch_xla's frames
are never the answer: a line of the user's, the batch, or "no line of yours differs".
Parent process only; standard library only.
"""

from __future__ import annotations

import ast
import linecache
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from tpulint.runtime.judge import graph_diff
from tpulint.runtime.judge.context import Context
from tpulint.runtime.judge.graphs import rows_by_event
from tpulint.runtime.judge.report import StepRow
from tpulint.runtime.judge.steps import raw_rank_buckets

# HLO ops that carry an offset or a window as an attribute: a Python number in a slice or an
# indexed assignment (`buf[ptr:ptr + n] = v` becomes xla::unselect, a pad with that offset).
_OFFSET_OPS = ("pad", "slice", "dynamic-slice", "dynamic-update-slice", "gather", "scatter")


@dataclass
class Explanation:
    """What differs, for a group of new graphs."""

    kind: str  # value | shape | structure | inputs | library | unknown
    site: dict[str, Any] | None  # the user's line, or the batch's loader
    text: str  # what differs, in words
    advice: str = ""
    steps: list[int] = field(default_factory=list)

    @property
    def key(self) -> tuple[Any, ...]:
        site = self.site or {}
        return (self.kind, site.get("path"), site.get("line"))


class GraphCauses:
    """The diffs of every row that compiled graphs after warm-up, computed once per run."""

    def __init__(
        self,
        ctx: Context,
        run_dir: str | Path | None,
        events: list[dict[str, Any]],
        rows: dict[str, list[StepRow]],
    ) -> None:
        self.ctx = ctx
        self.events = events
        self._diffs: dict[int, list[graph_diff.GraphDiff]] = {}
        self._modules = 0
        if run_dir is None:
            return
        modules = graph_diff.load_modules(run_dir)
        self._modules = len(modules)
        if not modules:
            return
        by_event = graph_diff.modules_by_event(modules, events)
        row_of = rows_by_event(events, rows)
        stage_of: dict[int, str] = {}
        for event_id, found in by_event.items():
            row = row_of.get(event_id)
            for module in found:
                stage_of[id(module)] = row.stage if row is not None else "setup"
        # Each module against the earlier ones of its own loop (a training graph is never
        # compared with a validation graph), and the lines any of them ran.
        earlier: dict[str, list[graph_diff.HloModule]] = {}
        lines: dict[str, set[tuple[str | None, int | None]]] = {}
        diff_of: dict[int, graph_diff.GraphDiff] = {}
        for module in sorted(modules, key=lambda m: (m.mtime, m.number)):
            stage = stage_of.get(id(module), "setup")
            before = earlier.setdefault(stage, [])
            seen = lines.setdefault(stage, set())
            if before:
                found_diff = graph_diff.diff(module, before)
                found_diff.new_lines = {
                    (c.path, c.line) for c in found_diff.changes if c.what == "added"
                } - seen
                diff_of[id(module)] = found_diff
            before.append(module)
            seen.update((i.path, i.line) for i in module.instructions)
        # A graph that only validation's or test's lines changed in is that loop's leftover
        # (its last step's work synced at the loop's end, in the next training row), not a
        # change of the training step.
        eval_lines = {
            (i.path, i.line)
            for m in modules
            if stage_of.get(id(m)) in ("validate", "test")
            for i in m.instructions
        }
        warm_lines = {
            (i.path, i.line)
            for event_id, row in row_of.items()
            if row.stage == "train" and row.phase == "warmup"
            for m in by_event.get(event_id, [])
            for i in m.instructions
        }
        for event_id, row in row_of.items():
            late = row.stage != "train" or row.phase != "warmup"
            for module in by_event.get(event_id, []) if late else []:
                found_diff = diff_of.get(id(module))
                if found_diff is None:
                    continue
                user = ctx.user_code
                mine = {
                    (i.path, i.line)
                    for i in module.instructions
                    if i.path and user is not None and user.is_user(i.path)
                }
                if row.stage == "train" and mine and mine <= eval_lines and not mine & warm_lines:
                    continue  # a graph of validation's or test's code only
                if row.stage == "train" and found_diff.changes:
                    kept = [
                        c
                        for c in found_diff.changes
                        if (c.path, c.line) not in eval_lines or (c.path, c.line) in warm_lines
                    ]
                    if not kept:
                        continue  # every difference is in validation's or test's code
                    found_diff.changes = kept
                self._diffs.setdefault(id(row), []).append(found_diff)

    @property
    def available(self) -> bool:
        """Whether the run's graphs were dumped (else nothing can be said about them)."""
        return bool(self._diffs) or self._modules > 0

    def diffs_of(self, row: StepRow | None) -> list[graph_diff.GraphDiff]:
        return [] if row is None else self._diffs.get(id(row), [])

    def explain(self, rows: Iterable[StepRow]) -> Explanation | None:
        """What differs in the graphs these rows compiled, the user's line first."""
        diffs = [d for row in rows for d in self.diffs_of(row) if d.kind != "duplicate"]
        steps = sorted({row.step for row in rows})
        if not diffs:
            return None
        user = self.ctx.user_code
        # A graph of other ops is evidence of other code only where it runs lines that no
        # earlier graph of the loop ran (a graph cut at another place, Lightning's bookkeeping
        # joining a step, move the same lines between graphs).
        changes = [
            (d, c)
            for d in diffs
            for c in d.changes
            if d.kind != "structure" or (c.path, c.line) in d.new_lines
        ]
        mine = [(d, c) for d, c in changes if c.path and user is not None and user.is_user(c.path)]
        inputs = [(d, i) for d in diffs for i in d.inputs]
        # Inputs of other shapes change the shapes of every op downstream: the batch is the
        # cause unless a line of the user's differs in something else too.
        if inputs and all(c.what == "shape" for _, c in mine):
            return self._inputs(inputs, steps, mine)
        if mine:
            return self._at_user_line(mine, steps)
        if changes:
            _, change = changes[0]
            where = _library_place(change.path, change.line)
            return Explanation(
                "library",
                None,
                f"the graphs differ inside {where} (`{change.op}`: {_values(change)}), and no"
                " line of yours differs between them",
                steps=steps,
            )
        return None

    # --- the three shapes of an explanation ---------------------------------------------

    def _at_user_line(
        self, mine: list[tuple[graph_diff.GraphDiff, graph_diff.Change]], steps: list[int]
    ) -> Explanation:
        first_diff, first = mine[0]
        at = [c for d, c in mine if (c.path, c.line) == (first.path, first.line)]
        site = {"path": first.path, "line": first.line, "function": None, "user": True}
        site["function"] = _function_at(first.path, first.line)
        code = _source(first.path, first.line)
        quoted = f" (`{code}`)" if code else ""
        if first_diff.kind == "structure":
            verb = "gained"
            others = sorted(
                {
                    f":{c.line}"
                    for _, c in mine
                    if c.path == first.path and c.line and c.line != first.line
                }
            )
            more = f" (and {', '.join(others[:4])})" if others else ""
            return Explanation(
                "structure",
                site,
                f"the step's graph {verb} the ops of this line{quoted}{more}: code that runs"
                " in some steps and not in others (a branch on the epoch, the step or a flag,"
                " a layer frozen or unfrozen, a loss term switched on), a phase switch",
                "each switch costs a compile on the TPU; keep the graph the same in every step"
                " (multiply a term by a 0/1 weight tensor instead of branching)",
                steps=steps,
            )
        kinds = {c.what for c in at}
        values = "; ".join(dict.fromkeys(f"`{c.op}` {_values(c)}" for c in at[:6]))
        read = self._host_read_before(first.path, first.line)
        fed = f"; the Python value comes from the host read {read}" if read else ""
        if kinds <= {"shape"}:
            return Explanation(
                "shape",
                site,
                f"the shapes at this line{quoted} differ between the graphs ({values}): a size"
                f" computed in Python is baked into the graph{fed}",
                "keep the size fixed (pad to a maximum and mask the rest), or derive it from a"
                " tensor shape that does not change",
                steps=steps,
            )
        offset = any(c.op.endswith(_OFFSET_OPS + tuple(f"({o})" for o in _OFFSET_OPS)) for c in at)
        what = "an offset of" if offset else "a constant of"
        return Explanation(
            "value",
            site,
            f"{what} this line{quoted} differs between the graphs ({values}): a Python number"
            f" is baked into the graph, so each new value compiles a new graph{fed}",
            (
                "index with a device tensor so the offset stays data inside one graph"
                " (`buf.index_copy_(0, ptr + torch.arange(n, device=buf.device), values)`"
                " with `ptr` kept a tensor, or `torch.roll`)"
                if offset
                else "pass the value as a tensor (it then stays an input of one graph)"
            ),
            steps=steps,
        )

    def _inputs(
        self,
        inputs: list[tuple[graph_diff.GraphDiff, tuple[int, str, str]]],
        steps: list[int],
        mine: list[tuple[graph_diff.GraphDiff, graph_diff.Change]],
    ) -> Explanation:
        from tpulint.runtime.judge.check_batches import loader_site

        shown = "; ".join(
            dict.fromkeys(f"{before} -> {after}" for _, (_, before, after) in inputs[:4])
        )
        # An input of another shape that an op of the step made (a data-dependent op whose
        # result moved between graphs) rather than the batch.
        from tpulint.runtime.judge.check_compiles import shape_op_sites

        sized = [
            e
            for e in shape_op_sites(self.events)
            if e["steps"] & set(steps) and len(e["shapes"]) > 1
        ]
        if sized:
            entry = max(sized, key=lambda e: e["count"])
            what = entry["kind"].replace("_", " ")
            return Explanation(
                "inputs",
                entry["site"],
                f"the graphs take inputs of other shapes ({shown}): the result of this line's"
                f" `{what}` changes size with the data, and each size is a new graph",
                "keep the size static (see the data-dependent shape at this line)",
                steps=steps,
            )
        first = (
            f" (first at {os.path.basename(mine[0][1].path or '')}:{mine[0][1].line})"
            if mine
            else ""
        )
        return Explanation(
            "inputs",
            loader_site(self.events),
            f"the graphs take inputs of other shapes ({shown}), so the shapes of the ops that"
            f" use them differ too{first}: the batches change size, and each new size compiles"
            " a new graph (batch geometry lists the tensors whose size varies)",
            "give every batch the same shapes (pad to a fixed size or to a few bucket sizes;"
            " drop_last=True for the last batch)",
            steps=steps,
        )

    def _host_read_before(self, path: str | None, line: int | None) -> str | None:
        """A host read in the same function before `line`: `ptr = int(...)` at :28."""
        if not path or not line:
            return None
        scope = _function_span(path, line)
        if scope is None:
            return None
        best: tuple[int, str] | None = None
        for _step, _rank, bucket in raw_rank_buckets(self.events, "train"):
            for read in bucket.get("transfers", []):
                site = read["site"]
                at = int(site["line"])
                if (
                    site["path"] == path
                    and scope[0] <= at <= line
                    and (best is None or at > best[0])
                ):
                    best = (at, read["op"])
        if best is None:
            return None
        code = _source(path, best[0])
        return f"`{code}` at :{best[0]}" if code else f"`{best[1]}` at :{best[0]}"


def _values(change: graph_diff.Change) -> str:
    if change.what in ("added", "removed"):
        return change.what
    return f"{change.before or '?'} -> {change.after or '?'}"


def _source(path: str | None, line: int | None) -> str:
    if not path or not line:
        return ""
    text = linecache.getline(path, line).strip()
    return text if len(text) <= 80 else text[:77] + "..."


def _library_place(path: str | None, line: int | None) -> str:
    if not path:
        return "torch_xla's own ops (no Python line)"
    shown = path.replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in shown:
            shown = shown.split(marker, 1)[1]
    return f"{shown}:{line}" if line else shown


@lru_cache(maxsize=64)
def _functions(path: str) -> tuple[tuple[int, int, str], ...]:
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"), path)
    except (OSError, SyntaxError, ValueError):
        return ()
    return tuple(
        (node.lineno, node.end_lineno or node.lineno, node.name)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    )


def _function_span(path: str, line: int) -> tuple[int, int] | None:
    """The innermost function of `path` holding `line`."""
    if not os.path.isfile(path):
        return None
    holding = [(a, b) for a, b, _ in _functions(path) if a <= line <= b]
    return max(holding) if holding else None


def _function_at(path: str | None, line: int | None) -> str | None:
    if not path or not line or not os.path.isfile(path):
        return None
    holding = [(a, name) for a, b, name in _functions(path) if a <= line <= b]
    return max(holding)[1] if holding else None

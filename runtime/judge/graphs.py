"""Every XLA graph of a run, by torch_xla's graph hash: where it was first compiled, how often
it was compiled (replica threads can race to compile the same graph at a host read), which
frames triggered that compile, and the rows in which it ran afterwards (from the cache).

The child records, per row, the graphs compiled (with their Python frames) and executed
(child/graphs.py); this follows them through the run in time order. Parent process only;
standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tpulint.runtime.frames import CodeFilter, is_plumbing, is_tpulint_frame
from tpulint.runtime.judge.report import StepRow

_ROW_KINDS = ("step", "eval_step")


@dataclass
class Graph:
    hash: str
    row: StepRow | None  # where it was compiled first; None: setup or teardown
    compiles: int = 0  # compile entries for this hash (more than one: a race)
    frames: list[tuple[str, int, str]] = field(default_factory=list)  # innermost first
    cause: str = ""  # torch_xla's own words for why the graph ran
    executed_in: list[StepRow] = field(default_factory=list)  # later rows that ran it

    def reused(self) -> bool:
        return any(row is not self.row for row in self.executed_in)

    def to_json(self) -> dict[str, Any]:
        return {
            "hash": self.hash,
            "stage": self.row.stage if self.row else "setup",
            "step": self.row.step if self.row else None,
            "run": self.row.run if self.row else None,
            "compiles": self.compiles,
            "executed_later": sum(1 for row in self.executed_in if row is not self.row),
            "frames": [list(f) for f in self.frames[:6]],
        }


def follow_graphs(events: list[dict[str, Any]], rows: dict[str, list[StepRow]]) -> list[Graph]:
    """All graphs of the run, in the order they were first compiled."""
    by_key = rows_by_event(events, rows)
    graphs: dict[str, Graph] = {}
    for event in events:
        data = event.get("graphs")
        if not data:
            continue
        row = by_key.get(id(event)) if event["kind"] in _ROW_KINDS else None
        for compiled in data.get("compiled", []):
            graph = graphs.get(compiled["hash"])
            if graph is None:
                graph = graphs[compiled["hash"]] = Graph(
                    compiled["hash"],
                    row,
                    frames=[tuple(f) for f in compiled.get("frames", [])],  # type: ignore[misc]
                    cause=compiled.get("cause", ""),
                )
            graph.compiles += 1
        if row is None:
            continue
        for digest in data.get("executed", {}):
            graph = graphs.get(digest)
            if graph is not None and (not graph.executed_in or graph.executed_in[-1] is not row):
                graph.executed_in.append(row)
    return list(graphs.values())


def rows_by_event(
    events: list[dict[str, Any]], rows: dict[str, list[StepRow]]
) -> dict[int, StepRow]:
    """Each row event (by identity) to its row; validation and test rows are numbered in
    the order their batches first appear, as build_all_rows numbers them."""
    train = {row.step: row for row in rows.get("train", [])}
    found: dict[int, StepRow] = {}
    eval_index: dict[str, dict[tuple[Any, ...], int]] = {}
    for event in events:
        if event["kind"] == "step":
            row = train.get(event["step"])
        elif event["kind"] == "eval_step":
            stage = event.get("stage", "validate")
            keys = eval_index.setdefault(stage, {})
            key = (event.get("run"), event.get("dataloader_idx", 0), event["batch_idx"])
            index = keys.setdefault(key, len(keys))
            stage_rows = rows.get(stage, [])
            row = stage_rows[index] if index < len(stage_rows) else None
        else:
            continue
        if row is not None:
            found[id(event)] = row
    return found


def compile_sites(
    graph: Graph, code: CodeFilter | None
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The user's line nearest the compile (its innermost user frame) and the library
    function involved: the one the user's line called, or, with no user frame on the stack
    (Lightning's own sync points), the innermost frame that is not mere plumbing."""
    user = called = first = None
    for path, line, function in graph.frames:
        if is_tpulint_frame(path):
            continue
        site = {"path": path, "line": line, "function": function, "user": False}
        if code is not None and code.is_user(path):
            user = {**site, "user": True}
            break
        if not is_plumbing(path):
            called = site
            first = first or site
    return user, (called if user else first)

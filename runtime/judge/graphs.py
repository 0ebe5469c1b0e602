"""Every XLA graph of a run, by torch_xla's graph hash: where it was first compiled, by which
processes and how often (each process has its own compile cache, so on a TPU VM every process
compiles every graph once; replica threads of one process can race to compile the same graph
at a host read), which frames triggered that compile, the rows in which it ran afterwards
(from the cache), and, from the process that compiled it, how long XLA took and the sizes it
reported. A graph is counted once, however many processes compiled it.

The training processes record, per row, the graphs they compiled (with their Python frames)
and executed (child/evidence.py); this follows them through the run in time order. Parent
process only; standard library only.
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
    compiles: int = 0  # compile entries for this hash, all processes
    processes: set[tuple[int, int]] = field(default_factory=set)  # (host, pid) that compiled it
    frames: list[tuple[str, int, str]] = field(default_factory=list)  # innermost first
    cause: str = ""  # torch_xla's own words for why the graph ran
    executed_in: list[StepRow] = field(default_factory=list)  # later rows that ran it
    compile_seconds: float | None = None  # the longest compile of it (CompileTime)
    memory: dict[str, float | None] | None = None  # sizes XLA reported after compiling it
    # (host, pid, compile index) of each compile, to join the seconds and sizes to it
    compile_ids: list[tuple[int, int, int]] = field(default_factory=list)

    def reused(self) -> bool:
        return any(row is not self.row for row in self.executed_in)

    @property
    def races(self) -> int:
        """Compiles beyond one per process: replica threads of a process racing."""
        return max(0, self.compiles - max(1, len(self.processes)))

    def to_json(self) -> dict[str, Any]:
        return {
            "hash": self.hash,
            "stage": self.row.stage if self.row else "setup",
            "step": self.row.step if self.row else None,
            "run": self.row.run if self.row else None,
            "compiles": self.compiles,
            "processes": len(self.processes),
            "executed_later": sum(1 for row in self.executed_in if row is not self.row),
            "compile_seconds": self.compile_seconds,
            "memory": self.memory,
            "frames": [list(f) for f in self.frames[:6]],
        }


def follow_graphs(events: list[dict[str, Any]], rows: dict[str, list[StepRow]]) -> list[Graph]:
    """All graphs of the run, in the order they were first compiled."""
    by_key = rows_by_event(events, rows)
    graphs: dict[str, Graph] = {}
    seconds: dict[tuple[int, int, int], float] = {}
    sizes: dict[tuple[int, int, int], dict[str, float | None]] = {}
    for event in events:
        data = event.get("graphs")
        if not data:
            continue
        process = (int(event.get("host") or 0), int(event.get("pid") or 0))
        for index, value in data.get("compile_seconds", []):
            seconds[(*process, int(index))] = float(value)
        for index, memory in data.get("sizes", []):
            sizes[(*process, int(index))] = memory
        row = by_key.get(id(event)) if event["kind"] in (*_ROW_KINDS, "eval_end") else None
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
            graph.processes.add(process)
            if compiled.get("index") is not None:
                graph.compile_ids.append((*process, int(compiled["index"])))
        if row is None:
            continue
        for digest in data.get("executed", {}):
            graph = graphs.get(digest)
            if graph is not None and (not graph.executed_in or graph.executed_in[-1] is not row):
                graph.executed_in.append(row)
    for graph in graphs.values():
        times = [seconds[key] for key in graph.compile_ids if key in seconds]
        graph.compile_seconds = max(times) if times else None
        graph.memory = next((sizes[key] for key in graph.compile_ids if key in sizes), None)
    return list(graphs.values())


def rows_by_event(
    events: list[dict[str, Any]], rows: dict[str, list[StepRow]]
) -> dict[int, StepRow]:
    """Each row event (by identity) to its row; validation and test rows are numbered in
    the order their batches first appear, as build_all_rows numbers them."""
    train = {row.step: row for row in rows.get("train", [])}
    found: dict[int, StepRow] = {}
    eval_index: dict[str, dict[tuple[Any, ...], int]] = {}
    last_of_run: dict[tuple[Any, Any], StepRow] = {}
    for event in events:
        if event["kind"] == "eval_end":  # the run's bookkeeping: its last row
            last = last_of_run.get((event.get("stage", "validate"), event.get("run")))
            if last is not None:
                found[id(event)] = last
            continue
        if event["kind"] == "step":
            row = train.get(event["step"])
        elif event["kind"] == "eval_step":
            stage = event.get("stage", "validate")
            keys = eval_index.setdefault(stage, {})
            key = (event.get("run"), event.get("dataloader_idx", 0), event["batch_idx"])
            index = keys.setdefault(key, len(keys))
            stage_rows = rows.get(stage, [])
            row = stage_rows[index] if index < len(stage_rows) else None
            if row is not None:
                previous = last_of_run.get((stage, event.get("run")))
                if previous is None or previous.batch_idx <= row.batch_idx:
                    last_of_run[(stage, event.get("run"))] = row
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

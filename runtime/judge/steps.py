"""Step rows from the child's `step` events, and the phase of each step.

torch_xla's counters are per process: on PJRT CPU one process holds every core, on a TPU VM
each process holds one or two, so rows with the same step index from different processes are
summed. The phase decides how a compile in that step is judged:

    warmup       the first --warmup steps: fwd/bwd, gradient all-reduce and optimizer graphs
                 compile at step 0, Lightning's logging state adds graphs at step 1
    ragged       a smaller batch than the run's full batch (the last batch of an epoch
                 without drop_last): its shapes differ, so its graphs are new
    epoch_start  the first step of a later epoch: Lightning's end-of-epoch bookkeeping ran
                 just before it
    steady       everything else: a compile here is a recompilation
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from tpulint.runtime.judge.report import CoreStep, StepRow


def batch_position(batches: list[list[list[int]] | None]) -> int:
    """Which tensor of the batch holds its batch dimension first: the one whose leading size
    takes the fewest values over the run, then the largest (a graph's `edge_index` leads
    with its 2 endpoints), then the earliest. For `(features, labels)` both do; for a graph
    batch the node and edge tensors change size with every batch and the targets (one row per
    graph) do not."""
    sizes: dict[int, set[int]] = defaultdict(set)
    for batch in batches:
        for index, shape in enumerate(batch or []):
            if shape:
                sizes[index].add(shape[0])
    if not sizes:
        return 0
    return min(sizes, key=lambda index: (len(sizes[index]), -max(sizes[index]), index))


def core_batch_size(batch: list[list[int]] | None, position: int = 0) -> int | None:
    if not batch or len(batch) <= position or not batch[position]:
        return None
    return batch[position][0]


def row_batch_position(rows: list[StepRow]) -> int:
    return batch_position([core.batch for row in rows for core in row.cores.values()])


def full_batch_size(rows: list[StepRow]) -> int | None:
    position = row_batch_position(rows)
    sizes = [
        size
        for row in rows
        for core in row.cores.values()
        if (size := core_batch_size(core.batch, position)) is not None
    ]
    return max(sizes) if sizes else None


_ROW_KINDS = ("step", "eval_step")
# Not host work the way a fallback is: `.item()` and friends, counted as transfers.
_NOT_FALLBACKS = ("aten::_local_scalar_dense",)


def _stage_of(event: dict[str, Any]) -> str:
    return "train" if event["kind"] == "step" else event.get("stage", "validate")


def _row_key(event: dict[str, Any]) -> tuple[Any, ...]:
    if event["kind"] == "step":
        return ("train", event["step"])
    return (
        event.get("stage"),
        event.get("run"),
        event.get("dataloader_idx", 0),
        event["batch_idx"],
    )


def build_all_rows(events: list[dict[str, Any]], warmup: int) -> dict[str, list[StepRow]]:
    """Rows per stage ("train", "validate", "test"), each with the graphs first compiled in
    it: graphs are followed over the whole run in time order (setup, training, validation
    runs in between), so a graph validation compiled first is not new to training."""
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    order: list[tuple[Any, ...]] = []
    seen: set[str] = set()
    for event in events:
        if event["kind"] in ("train_start", "train_end", "test_start_graphs"):
            seen.update(g["hash"] for g in (event.get("graphs") or {}).get("compiled", []))
            continue
        if event["kind"] not in _ROW_KINDS:
            continue
        key = _row_key(event)
        row = merged.get(key)
        if row is None:
            row = merged[key] = {
                "stage": _stage_of(event),
                "run": event.get("run"),
                "epoch": event["epoch"],
                "batch_idx": event["batch_idx"],
                "seconds": 0.0,
                "counters": defaultdict(int),
                "ranks": {},
                "graphs": [],
            }
            order.append(key)
        row["seconds"] = max(row["seconds"], event["seconds"])
        for name, value in event["counters"].items():
            row["counters"][name] += value
        row["ranks"].update(event["ranks"])
        for graph in (event.get("graphs") or {}).get("compiled", []):
            if graph["hash"] not in seen:
                seen.add(graph["hash"])
                row["graphs"].append(graph["hash"])

    rows: dict[str, list[StepRow]] = {"train": [], "validate": [], "test": []}
    for key in order:
        data = merged[key]
        stage = data["stage"]
        counters = data["counters"]
        cores = {
            int(rank): CoreStep(
                batch=bucket.get("batch"),
                transfers=sum(t["count"] for t in bucket.get("transfers", [])),
                compiles=bucket.get("marker_compiles", 0),
            )
            for rank, bucket in data["ranks"].items()
        }
        stage_rows = rows.setdefault(stage, [])
        stage_rows.append(
            StepRow(
                step=key[1] if stage == "train" else len(stage_rows),
                epoch=data["epoch"],
                batch_idx=data["batch_idx"],
                phase="steady",
                uncached_compiles=counters.get("UncachedCompile", 0),
                cached_executions=counters.get("CachedCompile", 0),
                transfers=counters.get("TransferFromDeviceTime", 0),
                host_ops=sum(v for k, v in counters.items() if k.startswith("aten::")),
                seconds=data["seconds"],
                batch_size=None,  # below, once the batch dimension is known
                cores=cores,
                stage=stage,
                run=data["run"],
                new_graphs=len(data["graphs"]),
                graphs=data["graphs"],
                optimizer_steps=sum(
                    bucket.get("optimizer_steps", 0) for bucket in data["ranks"].values()
                ),
                fallbacks={
                    name: value
                    for name, value in sorted(counters.items())
                    if name.startswith("aten::") and name not in _NOT_FALLBACKS and value
                },
            )
        )
    rows["train"].sort(key=lambda r: r.step)
    for stage_rows in rows.values():
        position = row_batch_position(stage_rows)
        for row in stage_rows:
            sizes = {core_batch_size(core.batch, position) for core in row.cores.values()}
            row.batch_size = sizes.pop() if len(sizes) == 1 else None
    _assign_phases(rows["train"], warmup)
    for stage in ("validate", "test"):
        _assign_eval_phases(rows[stage])
    return rows


def build_rows(events: list[dict[str, Any]], warmup: int) -> list[StepRow]:
    """The training rows."""
    return build_all_rows(events, warmup)["train"]


def _assign_phases(rows: list[StepRow], warmup: int) -> None:
    full = full_batch_size(rows)
    position = row_batch_position(rows)
    for row in rows:
        sizes = [
            s for c in row.cores.values() if (s := core_batch_size(c.batch, position)) is not None
        ]
        if row.step < warmup:
            row.phase = "warmup"
        elif full is not None and sizes and min(sizes) < full:
            row.phase = "ragged"
        elif row.batch_idx == 0 and row.epoch > 0:
            row.phase = "epoch_start"
        else:
            row.phase = "steady"


def _assign_eval_phases(rows: list[StepRow]) -> None:
    """A validation or test loop's first run is its warm-up: its graphs compile there."""
    full = full_batch_size(rows)
    position = row_batch_position(rows)
    first = min((r.run for r in rows if r.run is not None), default=0)
    for row in rows:
        sizes = [
            s for c in row.cores.values() if (s := core_batch_size(c.batch, position)) is not None
        ]
        if row.run == first:
            row.phase = "first_run"
        elif full is not None and sizes and min(sizes) < full:
            row.phase = "ragged"
        else:
            row.phase = "steady"


def raw_rank_buckets(
    events: list[dict[str, Any]], stage: str = "train"
) -> list[tuple[int, int, dict[str, Any]]]:
    """(step, rank, bucket) for every replica bucket of every row event of `stage`; for
    validation and test the step is the batch's index among all batches of that loop, as in
    its rows."""
    found = []
    index: dict[tuple[Any, ...], int] = {}
    for event in events:
        if event["kind"] not in _ROW_KINDS or _stage_of(event) != stage:
            continue
        key = _row_key(event)
        step = event["step"] if stage == "train" else index.setdefault(key, len(index))
        found += [(step, int(rank), bucket) for rank, bucket in event["ranks"].items()]
    return found

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


def _core_batch_size(batch: list[list[int]] | None) -> int | None:
    if not batch or not batch[0]:
        return None
    return batch[0][0]


def full_batch_size(rows: list[StepRow]) -> int | None:
    sizes = [
        size
        for row in rows
        for core in row.cores.values()
        if (size := _core_batch_size(core.batch)) is not None
    ]
    return max(sizes) if sizes else None


def build_rows(events: list[dict[str, Any]], warmup: int) -> list[StepRow]:
    merged: dict[int, dict[str, Any]] = {}
    for event in events:
        if event["kind"] != "step":
            continue
        row = merged.setdefault(
            event["step"],
            {
                "epoch": event["epoch"],
                "batch_idx": event["batch_idx"],
                "seconds": 0.0,
                "counters": defaultdict(int),
                "ranks": {},
            },
        )
        row["seconds"] = max(row["seconds"], event["seconds"])
        for name, value in event["counters"].items():
            row["counters"][name] += value
        row["ranks"].update(event["ranks"])

    rows = []
    for step in sorted(merged):
        data = merged[step]
        counters = data["counters"]
        cores = {
            int(rank): CoreStep(
                batch=bucket.get("batch"),
                transfers=sum(t["count"] for t in bucket.get("transfers", [])),
                compiles=bucket.get("marker_compiles", 0),
            )
            for rank, bucket in data["ranks"].items()
        }
        sizes = {_core_batch_size(core.batch) for core in cores.values()}
        rows.append(
            StepRow(
                step=step,
                epoch=data["epoch"],
                batch_idx=data["batch_idx"],
                phase="steady",
                uncached_compiles=counters.get("UncachedCompile", 0),
                cached_executions=counters.get("CachedCompile", 0),
                transfers=counters.get("TransferFromDeviceTime", 0),
                host_ops=sum(v for k, v in counters.items() if k.startswith("aten::")),
                seconds=data["seconds"],
                batch_size=sizes.pop() if len(sizes) == 1 else None,
                cores=cores,
            )
        )
    _assign_phases(rows, warmup)
    return rows


def _assign_phases(rows: list[StepRow], warmup: int) -> None:
    full = full_batch_size(rows)
    for row in rows:
        sizes = [s for c in row.cores.values() if (s := _core_batch_size(c.batch)) is not None]
        if row.step < warmup:
            row.phase = "warmup"
        elif full is not None and sizes and min(sizes) < full:
            row.phase = "ragged"
        elif row.batch_idx == 0 and row.epoch > 0:
            row.phase = "epoch_start"
        else:
            row.phase = "steady"


def raw_rank_buckets(events: list[dict[str, Any]]) -> list[tuple[int, int, dict[str, Any]]]:
    """(step, rank, bucket) for every replica bucket of every step event."""
    return [
        (event["step"], int(rank), bucket)
        for event in events
        if event["kind"] == "step"
        for rank, bucket in event["ranks"].items()
    ]

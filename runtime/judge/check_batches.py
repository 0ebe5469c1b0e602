"""Batch geometry: the per-core batch shape each core saw, against the TPU's tile multiple.

A TPU lays the batch dimension over 8 sublanes (128 lanes for the minor dimension), so a
per-core batch that is not a multiple of 8 (or the configured `batch-multiple`) is padded
and the padding is computed and thrown away. That costs speed, not correctness: a warning.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from tpulint.runtime.judge.context import Context, status_of
from tpulint.runtime.judge.report import Cause, Check, StepRow


def loader_site(events: list[dict[str, Any]], stage: str = "train") -> dict[str, Any] | None:
    """Where the user built the DataLoader of `stage` (None when no user frame built it)."""
    for event in events:
        if (
            event["kind"] == "loader_epoch"
            and event.get("built_at")
            and event.get("stage", "train") == stage
        ):
            return event["built_at"]
    return None


def _loader(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next(
        (e for e in events if e["kind"] == "loader_epoch" and e.get("stage", "train") == "train"),
        None,
    )


def _shape_text(shape: list[int]) -> str:
    return "x".join(map(str, shape)) or "scalar"


def check_batches(
    ctx: Context, rows: list[StepRow], events: list[dict[str, Any]]
) -> tuple[Check, list[Cause]]:
    sizes: Counter[int] = Counter()
    shapes: Counter[str] = Counter()
    for row in rows:
        for core in row.cores.values():
            if core.batch:
                sizes[core.batch[0][0] if core.batch[0] else 0] += 1
                shapes[", ".join(_shape_text(s) for s in core.batch)] += 1
    if not sizes:
        return Check("batch_geometry", "skipped", "no batch was seen", {}), []

    full = max(sizes)
    multiple = ctx.batch_multiple
    tile = " (bf16 fills a TPU tile with 16 rows)" if ctx.tile_dtype == "bf16" else ""
    site = loader_site(events)
    causes: list[Cause] = []
    if full % multiple:
        padded = math.ceil(full / multiple) * multiple
        waste = (padded - full) / padded
        causes.append(
            ctx.cause(
                "batch_geometry",
                "batch_not_multiple",
                "warn",
                f"the per-core batch of {full} is not a multiple of {multiple}{tile}: the TPU pads"
                " it to"
                f" {padded}, so {waste:.0%} of every step computes padding; use a per-core batch"
                f" size of {padded}"
                + (f" (or {padded - multiple})" if padded - multiple > 0 else ""),
                site,
                codes=("TPU302",),
                count=full,
            )
        )
    smaller = sorted(size for size in sizes if size < full)
    if smaller:
        causes.append(
            ctx.cause(
                "batch_geometry",
                "ragged_batch_seen",
                "info",
                f"the last batch of an epoch had {'/'.join(map(str, smaller))} samples per core"
                f" instead of {full} (no drop_last)",
                site,
                codes=("TPU303",),
                count=len(smaller),
            )
        )
    else:
        predicted = _predicted_ragged(events, rows)
        if predicted is not None:
            causes.append(
                ctx.cause(
                    "batch_geometry",
                    "ragged_batch_predicted",
                    "info",
                    f"the last batch of each epoch would have {predicted} samples per core instead"
                    f" of {full} (no drop_last); this run stopped before it (--steps"
                    f" {ctx.steps_per_epoch})",
                    site,
                    codes=("TPU303",),
                    count=predicted,
                )
            )

    status = status_of(causes)
    summary = f"per-core batch {full}" + (
        f", a multiple of {multiple}" if full % multiple == 0 else f", not a multiple of {multiple}"
    )
    if tile:
        summary += " (bf16: 16-row tiles)"
    if smaller:
        summary += f"; last batch {'/'.join(map(str, smaller))}"
    details = {
        "batch_multiple": multiple,
        "per_core_batch": full,
        "sizes_seen": {str(k): v for k, v in sorted(sizes.items())},
        "shapes_seen": dict(shapes.most_common()),
    }
    return Check("batch_geometry", status, summary, details), causes


def _predicted_ragged(events: list[dict[str, Any]], rows: list[StepRow]) -> int | None:
    """The per-core size of an epoch's last batch when the run did not reach it."""
    loader = _loader(events)
    if not loader or loader.get("drop_last") or not loader.get("batch_size"):
        return None
    plan = next(
        (e for e in events if e["kind"] == "sampler_plan" and e.get("stage", "train") == "train"),
        None,
    )
    if plan is None:
        return None
    remainder = plan["count"] % loader["batch_size"]
    steps_in_epoch0 = sum(1 for r in rows if r.epoch == 0)
    if remainder and loader.get("batches") and steps_in_epoch0 < loader["batches"]:
        return remainder
    return None

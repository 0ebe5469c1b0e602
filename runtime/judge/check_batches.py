"""Batch geometry: the per-core batch shape each core saw, against the TPU's tile multiple.

A TPU lays the batch dimension over 8 sublanes (128 lanes for the minor dimension), so a
per-core batch that is not a multiple of 8 (or the configured `batch-multiple`) is padded
and the padding is computed and thrown away. That costs speed, not correctness: a warning.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from tpulint.runtime.judge.context import Context, plural, span, status_of
from tpulint.runtime.judge.report import Cause, Check, StepRow
from tpulint.runtime.judge.steps import core_batch_size, row_batch_position


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


def batch_names(events: list[dict[str, Any]], stage: str = "train") -> list[str]:
    """The names of the batch's tensors, as the step receives them (child/batch_tensors.py)."""
    layout = next(
        (e for e in events if e["kind"] == "batch_layout" and e.get("stage") == stage), None
    )
    return list(layout["names"]) if layout else []


def varying_tensors(
    rows: list[StepRow], names: list[str]
) -> list[tuple[str, list[int], list[list[int]]]]:
    """Tensors whose shape changes between full batches: (name, the dimensions that vary,
    the distinct shapes). A ragged last batch (smaller in the batch dimension) is not
    variation: it is judged on its own."""
    shapes: dict[int, list[list[int]]] = {}
    for row in rows:
        if row.phase == "ragged":
            continue
        for core in row.cores.values():
            for index, shape in enumerate(core.batch or []):
                known = shapes.setdefault(index, [])
                if shape not in known:
                    known.append(shape)
    found = []
    for index, seen in sorted(shapes.items()):
        if len(seen) < 2 or len({len(s) for s in seen}) > 1:
            continue
        dims = [d for d in range(len(seen[0])) if len({s[d] for s in seen}) > 1]
        name = names[index] if index < len(names) else f"tensor {index}"
        found.append((name, dims, seen))
    return found


def _described(shapes: list[list[int]], names: list[str], limit: int = 6) -> str:
    parts = []
    for index, shape in enumerate(shapes[:limit]):
        name = names[index] if index < len(names) else ""
        parts.append(f"{name} {_shape_text(shape)}".strip())
    more = len(shapes) - limit
    return ", ".join(parts) + (f" and {more} more" if more > 0 else "")


def check_batches(
    ctx: Context, rows: list[StepRow], events: list[dict[str, Any]]
) -> tuple[Check, list[Cause]]:
    position = row_batch_position(rows)
    names = batch_names(events)
    sizes: Counter[int] = Counter()
    shapes: Counter[str] = Counter()
    for row in rows:
        for core in row.cores.values():
            if core.batch:
                size = core_batch_size(core.batch, position)
                sizes[size if size is not None else 0] += 1
                shapes[", ".join(_shape_text(s) for s in core.batch)] += 1
    if not sizes:
        return Check("batch_geometry", "skipped", "no batch was seen", {}), []

    full = max(sizes)
    multiple = ctx.batch_multiple
    site = loader_site(events)
    causes: list[Cause] = []
    varying = varying_tensors(rows, names)
    if varying:
        parts = []
        for name, dims, seen in varying[:4]:
            spans = ", ".join(f"dim {d}: {span([s[d] for s in seen])}" for d in dims)
            parts.append(f"`{name}` ({spans}; {plural(len(seen), 'shape')})")
        fixed = [
            n for i, n in enumerate(names) if n not in {v[0] for v in varying} and i < len(names)
        ]
        causes.append(
            ctx.cause(
                "batch_geometry",
                "varying_batch_shapes",
                "warn",
                "the batches the step receives change shape from batch to batch: "
                + "; ".join(parts)
                + (
                    f" (while {', '.join(f'`{n}`' for n in fixed[:3])}"
                    f" {'stays' if len(fixed) == 1 else 'stay'} fixed)"
                    if fixed
                    else ""
                )
                + ": every distinct shape is a distinct XLA graph, compiled when it first comes"
                " (on a TPU each compile takes seconds to minutes); pad them to a fixed size, or"
                " to a few bucket sizes, in the collate function or the dataset",
                site,
                codes=("TPU304",),
                count=sum(len(v[2]) for v in varying),
            )
        )
    if full % multiple:
        padded = math.ceil(full / multiple) * multiple
        waste = (padded - full) / padded
        causes.append(
            ctx.cause(
                "batch_geometry",
                "batch_not_multiple",
                "warn",
                f"the per-core batch of {full} is not a multiple of {multiple}: the TPU pads it to"
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
    if varying:
        summary += "; shapes vary: " + ", ".join(f"`{v[0]}`" for v in varying[:4])
    if smaller:
        summary += f"; last batch {'/'.join(map(str, smaller))}"
    first = next((core.batch for row in rows for core in row.cores.values() if core.batch), None)
    details = {
        "batch_multiple": multiple,
        "per_core_batch": full,
        "sizes_seen": {str(k): v for k, v in sorted(sizes.items())},
        "shapes_seen": dict(shapes.most_common()),
        "tensors": names,
        "first_batch": _described(first or [], names, limit=len(first or [])),
        "varying": [
            {"name": name, "dims": dims, "shapes": [_shape_text(s) for s in seen]}
            for name, dims, seen in varying
        ],
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

"""CPU fallbacks: ops torch_xla has no XLA lowering for, so it runs them on the host.

Each one cuts the graph, copies its inputs to the host, runs the op on the CPU and copies
the result back: a device-host round trip in the middle of the step, one of the most common
TPU slowdowns. torch_xla counts them per op (`aten::median.dim_values`, `aten::histc`, ...);
the op tracer places each at the user's line (child/tracing.py).

The rule: an op that falls back in at least half of the steps of the final steady window
runs on the host every step (or nearly): a failure. One that falls back less often (once,
once per epoch, only in warm-up) is a warning. Ops whose output size depends on the data
(`nonzero` behind `x[mask]`, `unique`, ...) also run on the host, but they are judged, with
their varying sizes, by compile stability. Parent process only; standard library only.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from tpulint.runtime.judge.context import Context, plural, span, status_of
from tpulint.runtime.judge.report import Cause, Check, StepRow
from tpulint.runtime.judge.steps import raw_rank_buckets

# Host ops compile stability already judges (data-dependent output sizes).
SHAPE_FALLBACKS = ("nonzero", "unique2", "unique_dim", "unique_consecutive", "masked_select")


def _base(counter: str) -> str:
    return counter.removeprefix("aten::").split(".")[0].lstrip("_")


def fallback_causes(
    ctx: Context,
    rows: list[StepRow],
    events: list[dict[str, Any]],
    *,
    stage: str,
    check: str,
    judged: list[StepRow],
    steady: list[StepRow],
) -> list[Cause]:
    """`judged`: the rows after warm-up (or validation's later runs); `steady`: the rows in
    which a fallback counts as every-step (the final steady window, the last run)."""
    unit = "step" if stage == "train" else "batch"
    steps_of: dict[str, set[int]] = defaultdict(set)
    totals: dict[str, int] = defaultdict(int)
    judged_steps = {r.step for r in judged}
    for row in rows:
        for counter, count in row.fallbacks.items():
            if _base(counter) in SHAPE_FALLBACKS or row.step not in judged_steps:
                continue
            steps_of[counter].add(row.step)
            totals[counter] += count

    sites: dict[str, dict[tuple[str, int], dict[str, Any]]] = defaultdict(dict)
    for step, rank, bucket in raw_rank_buckets(events, stage):
        if step not in judged_steps:
            continue
        for entry in bucket.get("fallbacks", []):
            site = entry["site"]
            found = sites[entry["op"]].setdefault(
                (site["path"], site["line"]), {"site": site, "count": 0, "cores": set()}
            )
            found["count"] += entry["count"]
            found["cores"].add(rank)

    causes = []
    steady_steps = {r.step for r in steady}
    per = max(len(judged) * max(ctx.cores, 1), 1)
    for counter in sorted(steps_of):
        steps = sorted(steps_of[counter])
        in_steady = len(steady_steps & set(steps))
        every = bool(steady_steps) and in_steady * 2 >= len(steady_steps)
        placed = sorted(sites.get(counter, {}).values(), key=lambda e: -e["count"])
        site = next((e["site"] for e in placed if e["site"].get("user")), None)
        if site is None and placed:
            site = placed[0]["site"]
        how_often = (
            f"{plural(totals[counter] / per, 'time')} per {unit} per core, in"
            f" {in_steady} of the last {plural(len(steady_steps), unit)}"
            if every
            else f"at {unit} {span(steps)} ({plural(totals[counter], 'call')} over the cores)"
        )
        name = counter.removeprefix("aten::")
        causes.append(
            ctx.cause(
                check,
                "cpu_fallback",
                "fail" if every else "warn",
                f"`{name}` has no XLA lowering, so torch_xla runs it on the CPU {how_often}:"
                " each call cuts the graph and copies its inputs to the host and the result"
                " back; compute it with ops XLA lowers (e.g. sort/topk/gather instead of"
                " median or mode, one-hot sums instead of histc or bincount), or move it out"
                f" of the {'step' if stage == 'train' else 'loop'}",
                site,
                steps=steps,
                cores=sorted({c for e in placed for c in e["cores"]}),
                count=totals[counter],
            )
        )
    return causes


def check_fallbacks(
    ctx: Context,
    rows: list[StepRow],
    events: list[dict[str, Any]],
    window: list[StepRow] | None,
) -> tuple[Check, list[Cause]]:
    judged = [r for r in rows if r.phase != "warmup"]
    if not judged:
        return Check("cpu_fallbacks", "skipped", "no step after warm-up", {}), []
    steady = window if window is not None else judged
    causes = fallback_causes(
        ctx, rows, events, stage="train", check="cpu_fallbacks", judged=judged, steady=steady
    )
    status = status_of(causes)
    if causes:
        first = causes[0]
        where = f" at {first.location}" if first.location else ""
        ops = ", ".join(sorted({c.message.split("`")[1] for c in causes}))
        summary = f"{plural(len(causes), 'op')} ran on the CPU after warm-up ({ops}){where}" + (
            "; every step" if status == "fail" else ""
        )
    else:
        summary = "no op fell back to the CPU after warm-up"
    details = {
        "per_step": [
            {k: v for k, v in r.fallbacks.items() if _base(k) not in SHAPE_FALLBACKS} for r in rows
        ],
    }
    return Check("cpu_fallbacks", status, summary, details), causes

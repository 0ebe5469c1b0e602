"""CPU fallbacks: ops torch_xla has no XLA lowering for, so it runs them on the host.

Each one cuts the graph, copies its inputs to the host, runs the op on the CPU and copies
the result back: a device-host round trip in the middle of the step, one of the most common
TPU slowdowns. torch_xla counts them per op (`aten::median.dim_values`, `aten::histc`, ...);
the op tracer places each at the user's line (child/tracing.py), an op of the backward at the
forward call it is the gradient of.

Judged as a TPU would judge it: torch_xla lowers some ops on TPU and falls back only on other
devices (xla_ops.py, from its sources); on emulated cores those are listed as emulation-only,
never a finding. The rule for the rest: an op that falls back in at least half of the steps
of the final steady window runs on the host every step (or nearly): a failure. One that
falls back less often (once, once per epoch, only in warm-up) is a warning. Each cause says
why torch_xla falls back for that op and what to write instead. Ops whose output size
depends on the data (`nonzero` behind `x[mask]`, `unique`, ...) also run on the host, but
they are judged, with their varying sizes, by compile stability. Parent process only;
standard library only.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from tpulint.runtime.judge.context import Context, plural, span, status_of
from tpulint.runtime.judge.report import Cause, Check, StepRow
from tpulint.runtime.judge.steps import raw_rank_buckets
from tpulint.runtime.xla_ops import ON_TPU_LOWERED, SHAPE_OPS, lookup

# Host ops compile stability already judges (data-dependent output sizes).
SHAPE_FALLBACKS = SHAPE_OPS


_LOOPS = {"validate": "validation", "test": "test"}


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

    steady_steps = {r.step for r in steady}
    # Validation and test: the last batch of a run also holds the loop's epoch-end work (a
    # metric's compute(), on_validation_epoch_end), recorded with it; an op seen only there
    # runs once per run, not every batch, however few batches the run has.
    run_ends = {max(r.step for r in rows if r.run == run) for run in {r.run for r in rows}}
    at_run_end = stage != "train" and len({r.step for r in rows}) > 1
    per = max(len(judged) * max(ctx.cores, 1), 1)
    where = "step" if stage == "train" else "loop"
    # One cause per family of ops (xla_ops.py) and line: lgamma and its gradient digamma at
    # the same line are one thing to change.
    groups: dict[tuple[Any, ...], list[tuple[str, dict[str, Any] | None]]] = defaultdict(list)
    for counter in sorted(steps_of):
        placed = sorted(sites.get(counter, {}).values(), key=lambda e: -e["count"])
        site = next((e["site"] for e in placed if e["site"].get("user")), None)
        if site is None and placed:
            site = placed[0]["site"]
        entry = lookup(counter)
        family = entry.shows_as if entry else counter
        groups[(family, (site or {}).get("path"), (site or {}).get("line"))].append((counter, site))
    causes = []
    for (_family, _path, _line), members in groups.items():
        counters = [counter for counter, _ in members]
        site = members[0][1]
        steps = sorted(set().union(*(steps_of[c] for c in counters)))
        in_steady = len(steady_steps & set(steps))
        epoch_end = at_run_end and set(steps) <= run_ends
        every = bool(steady_steps) and in_steady * 2 >= len(steady_steps) and not epoch_end
        total = sum(totals[c] for c in counters)
        cores = sorted({c for k in counters for e in sites.get(k, {}).values() for c in e["cores"]})
        many = "batches" if unit == "batch" else None
        how_often = (
            f"{plural(total / per, 'time')} per {unit} per core, in"
            f" {in_steady} of the last {plural(len(steady_steps), unit, many)}"
            if every
            else f"once per {_LOOPS.get(stage, stage)} run, at its end (a metric's compute(),"
            f" the epoch-end hooks; {plural(total, 'call')} over the cores)"
            if epoch_end
            else f"at {unit} {span(steps)} ({plural(total, 'call')} over the cores)"
        )
        names = ", ".join(f"`{c.removeprefix('aten::')}`" for c in counters)
        entry = lookup(counters[0])
        shown = f"{names} ({entry.shows_as})" if entry else names
        verb = "run" if len(counters) > 1 else "runs"
        if entry is not None and entry.on_tpu == ON_TPU_LOWERED and ctx.emulated:
            causes.append(
                ctx.cause(
                    check,
                    "emulation_only_fallback",
                    "info",
                    f"{shown} ran on the CPU {how_often} only because the cores are emulated:"
                    f" {entry.why}; on a TPU it runs in the graph, so this is not a TPU finding",
                    site,
                    explain=False,
                    steps=steps,
                    cores=cores,
                    count=total,
                )
            )
            continue
        if entry is not None:
            why, instead = entry.why, entry.advice
        else:
            why = "torch_xla 2.9 has no XLA lowering for it"
            instead = f"compute it with ops XLA lowers, or move it out of the {where}"
        causes.append(
            ctx.cause(
                check,
                "cpu_fallback",
                "fail" if every else "warn",
                f"{shown} {verb} on the CPU {how_often}: {why}. Each call cuts the graph and"
                f" copies its inputs to the host and the result back; {instead}",
                site,
                steps=steps,
                cores=cores,
                count=total,
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
    findings = [c for c in causes if c.kind == "cpu_fallback"]
    emulated = sorted({n for c in causes if c.kind != "cpu_fallback" for n in _op_names(c.message)})
    only_here = (
        f"; {plural(len(emulated), 'emulation-only fallback')} ({', '.join(emulated)}): a TPU"
        " lowers it"
        if emulated
        else ""
    )
    if findings:
        summary = (
            _where_they_ran(findings) + ("; every step" if status == "fail" else "") + only_here
        )
    else:
        summary = "no op falls back to the CPU on a TPU after warm-up" + only_here
        if not emulated:
            summary = "no op fell back to the CPU after warm-up"
    details = {
        "per_step": [
            {k: v for k, v in r.fallbacks.items() if _base(k) not in SHAPE_FALLBACKS} for r in rows
        ],
    }
    return Check("cpu_fallbacks", status, summary, details), causes


def _where_they_ran(findings: list[Cause], shown: int = 3) -> str:
    """The check's line: `2 ops ran on the CPU after warm-up (digamma, lgamma) at m.py:43` for
    one line; with ops at several lines, each line with its own ops, never all at the first."""
    places: dict[str, list[str]] = {}
    for cause in findings:
        ops = places.setdefault(str(cause.location) if cause.location else "", [])
        ops.extend(n for n in _op_names(cause.message) if n not in ops)
    names = sorted({n for ops in places.values() for n in ops})
    head = f"{plural(len(names), 'op')} ran on the CPU after warm-up"
    if len(places) == 1:
        (place,) = places
        return f"{head} ({', '.join(names)})" + (f" at {place}" if place else "")
    parts = [
        f"{', '.join(ops)} at {place}" if place else ", ".join(ops)
        for place, ops in list(places.items())[:shown]
    ]
    more = len(places) - shown
    tail = f"; and at {plural(more, 'more line')}" if more > 0 else ""
    return f"{head}: " + "; ".join(parts) + tail


def _op_names(message: str) -> list[str]:
    """The op names a fallback cause starts with: "`lgamma`, `digamma` (...)"."""
    head = message.split(" (", 1)[0].split(" ran ", 1)[0].split(" run", 1)[0]
    return [part.strip("` ") for part in head.split(",") if part.strip("` ")]

"""Compile stability: the XLA compile count must stop growing after warm-up.

Counting alone is not enough on emulated cores: with N replicas sharing one compile cache, a
data-dependent shape (a boolean mask) compiles each distinct size once and the compiles are
front-loaded, so a short run can look stable while a real TPU run, with more distinct sizes,
keeps compiling for hundreds of steps (research/runtime.md §8). So the check fails on either
signal: an uncached compile in a steady step, or an op whose output size varied with the
data, seen at its source line in the replicas' threads.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from tpulint.runtime.judge.context import Context, plural, span, status_of
from tpulint.runtime.judge.report import Cause, Check, StepRow
from tpulint.runtime.judge.steps import raw_rank_buckets

# How a data-dependent-size op reads in a message, and the static alternative.
_SHAPE_OPS: dict[str, tuple[str, str]] = {
    "boolean_mask": (
        "boolean-mask indexing `x[mask]`",
        "keep shapes static: weight by the mask (`torch.where(mask, x, 0)`) and reduce",
    ),
    "boolean_mask_assign": (
        "boolean-mask assignment `x[mask] = v`",
        "`x.masked_fill_(mask, v)` or `torch.where` stays on the device",
    ),
    "nonzero": ("`nonzero`", "use a fixed-size form (`nonzero_static`, masks)"),
    "argwhere": ("`argwhere`", "use a fixed-size form (masks, `nonzero_static`)"),
    "masked_select": ("`masked_select`", "weight by the mask instead of selecting"),
    "unique": ("`unique`", "avoid value-dependent sizes in the step"),
    "unique_consecutive": ("`unique_consecutive`", "avoid value-dependent sizes in the step"),
    "bincount": ("`bincount`", "pass a fixed `minlength` and bound the values"),
    "where_1arg": ("one-argument `torch.where`", "use the three-argument form"),
    "repeat_interleave": ("`repeat_interleave` with tensor repeats", "pass `output_size`"),
}

# Compile-free phases first, then where a compile is tolerated once.
_PHASES = ("warmup", "epoch_start", "ragged", "steady")


def shape_op_sites(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every data-dependent-size op, merged over steps and cores, per source line and kind."""
    merged: dict[tuple[str, int, str], dict[str, Any]] = {}
    for step, rank, bucket in raw_rank_buckets(events):
        for op in bucket.get("shape_ops", []):
            site = op["site"]
            key = (site["path"], site["line"], op["kind"])
            entry = merged.setdefault(
                key,
                {
                    "site": site,
                    "kind": op["kind"],
                    "count": 0,
                    "shapes": set(),
                    "steps": set(),
                    "cores": set(),
                },
            )
            entry["count"] += op["count"]
            entry["shapes"].update(op["shapes"])
            entry["steps"].add(step)
            entry["cores"].add(rank)
    return list(merged.values())


def _first_dims(shapes: set[str]) -> list[int]:
    dims = []
    for shape in shapes:
        head = shape.split("x")[0]
        if head.isdigit():
            dims.append(int(head))
    return dims


def _shape_causes(ctx: Context, sites: list[dict[str, Any]]) -> list[Cause]:
    causes = []
    for entry in sorted(sites, key=lambda e: (e["site"]["path"], e["site"]["line"])):
        what, instead = _SHAPE_OPS.get(entry["kind"], (f"`{entry['kind']}`", ""))
        dims = _first_dims(entry["shapes"])
        cores = sorted(entry["cores"])
        varying = len(set(dims)) > 1
        if varying:
            message = (
                f"{what} has a data-dependent size ({span(dims)} seen across"
                f" {plural(len(cores), 'core')} and {plural(len(entry['steps']), 'step')}):"
                " each new size compiles a new graph, and torch_xla computes the size on the"
                f" host every step; {instead}"
            )
        else:
            message = (
                f"{what} needs a host round trip to size its result every step"
                f"{' (the size did not vary in this run)' if dims else ''}; {instead}"
            )
        causes.append(
            ctx.cause(
                "compile_stability",
                "data_dependent_shape",
                "fail" if varying else "warn",
                message,
                entry["site"],
                steps=sorted(entry["steps"]),
                cores=cores,
                count=entry["count"],
            )
        )
    return causes


def _compiling_reads(
    events: list[dict[str, Any]], steps: set[int]
) -> dict[tuple[str, int], dict[str, Any]]:
    """Host reads during which a graph was compiled (an implicit sync), in `steps`."""
    found: dict[tuple[str, int], dict[str, Any]] = {}
    for step, _rank, bucket in raw_rank_buckets(events):
        if step not in steps:
            continue
        for read in bucket.get("transfers", []):
            if read["compiles"]:
                key = (read["site"]["path"], read["site"]["line"])
                entry = found.setdefault(
                    key, {"site": read["site"], "op": read["op"], "compiles": 0, "steps": set()}
                )
                entry["compiles"] += read["compiles"]
                entry["steps"].add(step)
    return found


def check_compiles(
    ctx: Context, rows: list[StepRow], events: list[dict[str, Any]], extra: list[Cause]
) -> tuple[Check, list[Cause]]:
    """`extra`: causes decided elsewhere that belong to this check (diverged replicas)."""
    by_phase: dict[str, int] = defaultdict(int)
    for row in rows:
        by_phase[row.phase] += row.uncached_compiles

    causes: list[Cause] = list(extra)
    sites = shape_op_sites(events)
    causes += _shape_causes(ctx, sites)
    shape_steps = {
        step
        for entry in sites
        if len(set(_first_dims(entry["shapes"]))) > 1
        for step in entry["steps"]
    }

    # Tolerated once: the first epoch start after epoch 0, and the ragged batches of the first
    # epoch that has one. The same phase compiling again later is a recompilation.
    first_boundary = min((r.epoch for r in rows if r.phase == "epoch_start"), default=None)
    first_ragged = min((r.epoch for r in rows if r.phase == "ragged"), default=None)
    boundary = [r for r in rows if r.phase == "epoch_start" and r.epoch == first_boundary]
    ragged = [r for r in rows if r.phase == "ragged" and r.epoch == first_ragged]
    tolerated = {id(r) for r in boundary + ragged}
    recompiling = [
        r
        for r in rows
        if r.phase != "warmup" and id(r) not in tolerated and r.uncached_compiles > 0
    ]

    boundary_compiles = sum(r.uncached_compiles for r in boundary)
    if boundary_compiles:
        steps = [r.step for r in boundary if r.uncached_compiles]
        causes.append(
            ctx.cause(
                "compile_stability",
                "epoch_boundary",
                "info",
                f"{plural(boundary_compiles, 'compile')} at the first step of epoch"
                f" {first_boundary} (step {span(steps)}): Lightning's end-of-epoch bookkeeping,"
                " compiled once and reused by later epochs",
                steps=steps,
                count=boundary_compiles,
            )
        )
    ragged_compiles = sum(r.uncached_compiles for r in ragged)
    if ragged_compiles:
        causes.append(_ragged_cause(ctx, ragged, events, ragged_compiles))

    after = sum(r.uncached_compiles for r in recompiling)
    unexplained = [r for r in recompiling if r.step not in shape_steps]
    reads = _compiling_reads(events, {r.step for r in unexplained})
    for entry in reads.values():
        causes.append(
            ctx.cause(
                "compile_stability",
                "compile_at_read",
                "fail",
                f"a graph was compiled to read a value on the host (`{entry['op']}`) after"
                f" warm-up (steps {span(sorted(entry['steps']))}): the value's graph changes"
                " from step to step",
                entry["site"],
                steps=sorted(entry["steps"]),
                count=entry["compiles"],
            )
        )
    read_steps = {s for entry in reads.values() for s in entry["steps"]}
    silent = [r for r in unexplained if r.step not in read_steps]
    if silent:
        count = sum(r.uncached_compiles for r in silent)
        causes.append(
            ctx.cause(
                "compile_stability",
                "recompilation",
                "fail",
                f"{plural(count, 'compile')} after warm-up (steps {span([r.step for r in silent])})"
                " with no data-dependent op or host read in those steps: the step's graph changed"
                " (a Python value or shape that varies per step?); PT_XLA_DEBUG_LEVEL=1 prints the"
                " frames of each compile",
                steps=[r.step for r in silent],
                count=count,
            )
        )
    if recompiling and not unexplained and after:
        for cause in causes:
            if cause.kind == "data_dependent_shape" and cause.severity == "fail":
                cause.message += f"; {plural(after, 'compile')} after warm-up in this run"
                break

    judged = [r for r in rows if r.phase != "warmup"]
    status = status_of(causes)
    if status == "pass" and not judged:
        status = "warn"
    summary = _summary(ctx, status, causes, after, by_phase, boundary_compiles, judged, rows)
    details = {
        "warmup_steps": ctx.warmup,
        "compiles_warmup": by_phase["warmup"],
        "compiles_after_warmup": after,
        "compiles_epoch_boundary": boundary_compiles,
        "compiles_ragged_batch": ragged_compiles,
        "compiles_total": sum(r.uncached_compiles for r in rows),
        "per_step": [r.uncached_compiles for r in rows],
    }
    return Check("compile_stability", status, summary, details), causes


def _ragged_cause(
    ctx: Context, ragged: list[StepRow], events: list[dict[str, Any]], compiles: int
) -> Cause:
    from tpulint.runtime.judge.check_batches import loader_site

    sizes = sorted({row.batch_size for row in ragged if row.batch_size is not None})
    steps = [r.step for r in ragged if r.uncached_compiles]
    return ctx.cause(
        "compile_stability",
        "ragged_last_batch",
        "warn",
        f"{plural(compiles, 'extra compile')} at step {span(steps)} for the last batch of epoch"
        f" {ragged[0].epoch} ({'/'.join(map(str, sizes)) or 'fewer'} samples per core): the"
        " epoch does not divide into full batches, so that batch has new shapes; set"
        " `drop_last=True` on the training DataLoader",
        loader_site(events),
        codes=("TPU303",),
        steps=steps,
        count=compiles,
    )


def _summary(
    ctx: Context,
    status: str,
    causes: list[Cause],
    after: int,
    by_phase: dict[str, int],
    boundary: int,
    judged: list[StepRow],
    rows: list[StepRow],
) -> str:
    failing = [c for c in causes if c.severity == "fail"]
    if failing:
        first = failing[0]
        where = f" at {first.location}" if first.location else ""
        lead = f"{plural(after, 'compile')} after warm-up; " if after else ""
        labels = {
            "data_dependent_shape": "data-dependent shapes",
            "diverged_replicas": "replica graphs diverged",
            "compile_at_read": "compiles at a host read",
            "recompilation": "recompilation",
        }
        return f"{lead}{labels.get(first.kind, first.kind)}{where}"
    if not judged:
        return (
            f"not judged: {plural(len(rows), 'step')} ran, all within the"
            f" {plural(ctx.warmup, 'warm-up step')}; use more --steps or --epochs"
        )
    parts = [f"{by_phase['warmup']} during warm-up"]
    if boundary:
        parts.append(f"{boundary} once at the first epoch boundary")
    ragged = [c for c in causes if c.kind == "ragged_last_batch"]
    if ragged:
        parts.append(f"{ragged[0].count} for a ragged last batch")
    return f"stable: no recompilation after warm-up ({', '.join(parts)})"

"""Validation (and, with --test, test): the loop Lightning runs at the end of every epoch,
judged like training.

* sharding: Lightning gives the validation loader its own DistributedSampler (no shuffling,
  padded to equal shards); each core's shard per run, as for training.
* graphs: the first run compiles validation's graphs (its warm-up); a later run that still
  compiles new graphs recompiles at every validation on a TPU, and fails when the last run
  does. A ragged last validation batch (a set that does not divide into cores x batch size)
  has graphs of its own: a warning. With a single run (the test loop), graphs new after
  its first --warmup batches, other than a ragged last batch's, fail.
* data-dependent shapes and host reads per validation batch, at their lines.
Parent process only; standard library only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tpulint.runtime.judge.check_batches import loader_site
from tpulint.runtime.judge.check_compiles import shape_causes, shape_op_sites
from tpulint.runtime.judge.check_fallbacks import fallback_causes
from tpulint.runtime.judge.check_sharding import check_sharding
from tpulint.runtime.judge.check_transfers import check_transfers
from tpulint.runtime.judge.context import Context, plural, span, status_of
from tpulint.runtime.judge.graphs import Graph, compile_sites
from tpulint.runtime.judge.report import Cause, Check, ShardEpoch, StepRow
from tpulint.runtime.judge.steps import core_batch_size, row_batch_position

NAMES = {"validate": "validation", "test": "test"}


def check_eval(
    ctx: Context,
    stage: str,
    rows: list[StepRow],
    events: list[dict[str, Any]],
    graphs: list[Graph],
    run_dir: Path,
) -> tuple[Check, list[Cause], list[ShardEpoch]] | None:
    """None when the module has no such loop (nothing ran and no loader was built)."""
    name = NAMES[stage]
    loaders = [
        e for e in events if e["kind"] == "loader_epoch" and e.get("stage", "train") == stage
    ]
    if not rows and not loaders:
        return None
    runs = sorted({r.run for r in rows if r.run is not None})
    causes: list[Cause] = []

    sharding, sharding_causes, shards = check_sharding(ctx, rows, events, run_dir, stage)
    causes += _relabel(sharding_causes, name)
    causes += shape_causes(ctx, shape_op_sites(events, stage), check=name)
    varying = any(c.kind == "data_dependent_shape" and c.severity == "fail" for c in causes)
    causes += _graph_causes(ctx, name, stage, rows, runs, graphs, events, varying)
    later = [r for r in rows if runs and r.run != runs[0]] or rows
    last = [r for r in rows if runs and r.run == runs[-1]]
    causes += fallback_causes(ctx, rows, events, stage=stage, check=name, judged=later, steady=last)
    transfers, transfer_causes = check_transfers(ctx, rows, events, stage, name)
    causes += transfer_causes

    status = status_of(causes)
    if not rows:
        status = "fail" if status == "fail" else "skipped"
    summary = _summary(name, status, causes, rows, runs, sharding, transfers)
    details = {
        "runs": len(runs),
        "batches": len(rows),
        "batches_per_run": sorted({sum(1 for r in rows if r.run == run) for run in runs}),
        "sharding": {"status": sharding.status, "summary": sharding.summary},
        "transfers": {"status": transfers.status, "summary": transfers.summary},
        "new_graphs_per_batch": [r.new_graphs for r in rows],
        "per_batch": [r.uncached_compiles for r in rows],
    }
    return Check(name, status, summary, details), causes, shards


def _relabel(causes: list[Cause], check: str) -> list[Cause]:
    for cause in causes:
        cause.check = check
    return causes


def _graph_causes(
    ctx: Context,
    name: str,
    stage: str,
    rows: list[StepRow],
    runs: list[int],
    graphs: list[Graph],
    events: list[dict[str, Any]],
    varying: bool,
) -> list[Cause]:
    """With `varying` (an op's output size varied) the new graphs are that op's, already a
    failure; only the ragged batch is still worth its own line."""
    mine = [g for g in graphs if g.row is not None and g.row.stage == stage]
    ragged = [g for g in mine if _ragged(g.row, rows)]
    causes: list[Cause] = []
    smaller = [r for r in rows if _ragged(r, rows)]
    if smaller:
        sizes = sorted({s for r in rows for s in _sizes(r, row_batch_position(rows))})
        compiled = (
            f" ({plural(len(ragged), 'graph')} in {name} run {ragged[0].row.run})"  # type: ignore[union-attr]
            if ragged and not varying
            else ""
        )
        causes.append(
            ctx.cause(
                name,
                "ragged_last_batch",
                "warn",
                f"the last {name} batch has {'/'.join(map(str, sizes[:-1]))} samples per core"
                f" instead of {sizes[-1]}: its shapes are new, so it compiles graphs of its"
                f" own{compiled}; size the {name} set to a multiple of cores x batch size, or"
                " pad it, to keep one set of graphs",
                loader_site(events, stage),
                explain=False,
                steps=sorted({r.step for r in smaller}),
                count=len(ragged),
            )
        )
    if varying:
        return causes
    rest = [g for g in mine if g not in ragged]
    if len(runs) > 1:
        late = [g for g in rest if g.row.run != runs[0]]  # type: ignore[union-attr]
        last = [g for g in late if g.row.run == runs[-1]]  # type: ignore[union-attr]
        once = [g for g in late if g.row.run != runs[-1]]  # type: ignore[union-attr]
        if last:
            causes.append(_recompiles(ctx, name, last, f"the last {name} run (run {runs[-1]})"))
        if once:
            run_ids = sorted({g.row.run for g in once if g.row})
            causes.append(
                ctx.cause(
                    name,
                    "one_time_compile",
                    "info",
                    f"{plural(len(once), 'graph')} first compiled in {name} run"
                    f" {span(run_ids)} and not again in the last run: a one-time compile",
                    count=len(once),
                )
            )
    elif runs:
        late = [g for g in rest if g.row.batch_idx >= ctx.warmup]  # type: ignore[union-attr]
        if late:
            causes.append(
                _recompiles(ctx, name, late, f"its only run, after its first {ctx.warmup} batches")
            )
    return causes


def _recompiles(ctx: Context, name: str, graphs: list[Graph], where: str) -> Cause:
    user, library = compile_sites(graphs[0], ctx.user_code)
    batches = sorted({g.row.batch_idx for g in graphs if g.row})
    return ctx.cause(
        name,
        "new_graphs_in_window",
        "fail",
        f"{plural(len(graphs), 'new graph')} in {where} (batch {span(batches)}): {name}"
        " keeps compiling new graphs, at every run on a TPU",
        user or library,
        steps=sorted({g.row.step for g in graphs if g.row}),
        count=len(graphs),
    )


def _sizes(row: StepRow, position: int = 0) -> list[int]:
    return [
        size for c in row.cores.values() if (size := core_batch_size(c.batch, position)) is not None
    ]


def _ragged(row: StepRow | None, rows: list[StepRow]) -> bool:
    """A smaller batch than the loop's full one (also in its first run)."""
    if row is None:
        return False
    position = row_batch_position(rows)
    full = max((s for r in rows for s in _sizes(r, position)), default=None)
    sizes = _sizes(row, position)
    return full is not None and bool(sizes) and min(sizes) < full


def _summary(
    name: str,
    status: str,
    causes: list[Cause],
    rows: list[StepRow],
    runs: list[int],
    sharding: Check,
    transfers: Check,
) -> str:
    failing = [c for c in causes if c.severity == "fail"]
    if failing:
        first = failing[0]
        labels = {
            "data_dependent_shape": "data-dependent shapes",
            "new_graphs_in_window": "new graphs at every run",
            "cpu_fallback": "an op runs on the CPU every batch",
        }
        where = f" at {first.location}" if first.location else ""
        return f"{labels.get(first.kind, first.kind.replace('_', ' '))}{where}"
    if not rows:
        return f"no {name} batch ran"
    per_run = sorted({sum(1 for r in rows if r.run == run) for run in runs})
    parts = [
        f"{plural(len(runs), 'run')} of {'/'.join(map(str, per_run))}"
        f" batch{'es' if per_run != [1] else ''} per core"
    ]
    if sharding.status in ("pass", "warn"):
        parts.append(sharding.summary.split(", in each")[0])
    parts.append(
        "no new graph after the first run"
        if not any(c.kind == "ragged_last_batch" for c in causes)
        else "a ragged last batch"
    )
    parts.append(transfers.summary)
    return "; ".join(parts)

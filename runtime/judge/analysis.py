"""From a finished (or aborted) run to a VerifyReport: rows, the four checks, the verdict.

error  verify could not run the module: a bad target, a crash that is not a verdict about
       the module, an internal error; or could not finish judging it: the run was too slow
       for --timeout or still compiling, and nothing it recorded failed (exit 2)
fail   a check failed (on what was recorded, however the run ended); the cores diverged or
       hung; the training raised (the user's code, or Lightning or torch_xla because of it:
       it would raise on a TPU too) (exit 1)
pass   otherwise, warnings included (exit 0)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tpulint.runtime.environment import Backend
from tpulint.runtime.frames import CodeFilter
from tpulint.runtime.judge.attribution import RuleIndex
from tpulint.runtime.judge.check_batches import check_batches, loader_site
from tpulint.runtime.judge.check_compiles import check_compiles, window_rows
from tpulint.runtime.judge.check_distributed import check_distributed
from tpulint.runtime.judge.check_eval import check_eval
from tpulint.runtime.judge.check_fallbacks import check_fallbacks
from tpulint.runtime.judge.check_memory import check_memory, tpu_precision
from tpulint.runtime.judge.check_run import run_causes
from tpulint.runtime.judge.check_sharding import check_sharding
from tpulint.runtime.judge.check_transfers import check_transfers
from tpulint.runtime.judge.context import Context, plural
from tpulint.runtime.judge.crash import (
    crash_cause,
    crash_place,
    find_crash,
    launcher_error,
    launcher_place,
)
from tpulint.runtime.judge.graph_causes import GraphCauses
from tpulint.runtime.judge.graphs import follow_graphs
from tpulint.runtime.judge.hardware import hardware_evidence
from tpulint.runtime.judge.loader_counts import uneven_loader_causes
from tpulint.runtime.judge.report import ERROR, FAIL, PASS, Cause, StepRow, VerifyReport
from tpulint.runtime.judge.steps import build_all_rows
from tpulint.runtime.runner import RunOutcome, root_errors
from tpulint.runtime.spec import RunSpec
from tpulint.runtime.steady import MAX_EXTRA_EPOCHS, MIN_STEADY_STEPS
from tpulint.runtime.tpu_hbm import MemoryLimit
from tpulint.runtime.tpu_layout import batch_tile_rows

CHECK_LABELS = {
    "sharding": "sharding",
    "compile_stability": "compile stability",
    "transfers": "transfers",
    "cpu_fallbacks": "cpu fallbacks",
    "batch_geometry": "batch geometry",
    "validation": "validation",
    "test": "test",
    "memory": "memory",
    "distributed": "torch.distributed",
}


# Runs that ended before they could be judged whole: what they recorded is judged, and a
# failure in it fails; otherwise the verdict is "could not judge" (exit 2).
PARTIAL = ("too_slow", "compiling", "unfinished")


@dataclass
class Settings:
    """How the run is judged (the parent's half of the options)."""

    warmup: int = 2
    batch_multiple: int = 8
    # False: the multiple follows the dtype a TPU computes in (16 rows for bf16, else 8).
    batch_multiple_explicit: bool = False
    timeout: float = 600.0
    # Fixed copies of user files (--compare) -> how to show them.
    aliases: dict[str, str] = field(default_factory=dict)
    memory_limit: MemoryLimit | None = None  # --tpu-type / --hbm


def base_report(spec: RunSpec, settings: Settings, backend: Backend | None) -> VerifyReport:
    return VerifyReport(
        target=spec.target.raw if spec.target else None,
        verdict=ERROR,
        summary="",
        datamodule=spec.datamodule.raw if spec.datamodule else None,
        init_args=spec.init_args,
        backend={
            "device": backend.device if backend else None,
            "emulated": backend.emulated if backend else None,
            "cores": spec.cores,
        },
        settings={
            "epochs": spec.epochs,
            "steps_per_epoch": spec.steps,
            "warmup": settings.warmup,
            "batch_multiple": settings.batch_multiple,
            "timeout": settings.timeout,
            **(
                {"memory_limit": settings.memory_limit.to_json()}
                if settings.memory_limit is not None
                else {}
            ),
        },
    )


def error_report(report: VerifyReport, message: str, detail: str | None = None) -> VerifyReport:
    report.verdict = ERROR
    report.error = message
    report.error_detail = detail
    report.summary = f"error: {message}"
    return report


def analyze(
    outcome: RunOutcome, spec: RunSpec, settings: Settings, backend: Backend, rules: RuleIndex
) -> VerifyReport:
    report = base_report(spec, settings, backend)
    report.log = outcome.log
    report.run = {
        "status": outcome.status,
        "detail": outcome.detail,
        "returncode": outcome.returncode,
        "seconds": round(outcome.seconds, 2),
    }
    fit = outcome.first("fit_start")
    if fit:
        report.backend.update(
            cores=fit["cores"], versions=fit["versions"], strategy=fit["strategy"]
        )
    if outcome.status == "error":
        error = outcome.first("error") or {}
        return error_report(report, outcome.detail, error.get("detail") or _tail(outcome.log))
    if outcome.status == "compiling" and not outcome.first("train_start"):
        return error_report(report, outcome.detail, None)

    starts = outcome.all("train_start")
    start = starts[0] if starts else {}
    target = outcome.first("target") or {}
    crash = None
    if outcome.status == "crashed":
        crash = find_crash(
            outcome.log, outcome.events, CodeFilter(target.get("roots", [])), spec.run_dir
        )
        launcher = launcher_error(outcome) if crash is None else None
        if launcher is not None:
            return error_report(
                report,
                f"the run crashed: {outcome.detail}"
                + launcher_place(launcher, CodeFilter(target.get("roots", [])), spec.cwd),
                launcher.get("traceback") or _tail(outcome.log, 80),
            )
        if crash is None or crash.user is None:
            return error_report(
                report,
                f"the run crashed: {outcome.detail}" + crash_place(crash, outcome),
                (crash.text if crash is not None else "") or _tail(outcome.log, 80),
            )
    cores = int(report.backend.get("cores") or start.get("world_size") or spec.cores or 1)
    ctx = Context(
        cores=cores,
        warmup=settings.warmup,
        batch_multiple=settings.batch_multiple,
        cwd=spec.cwd,
        rules=rules,
        steps_per_epoch=spec.steps,
        user_code=CodeFilter(target.get("roots", [])),
        aliases=settings.aliases,
        run_dir=spec.run_dir,
        emulated=backend.emulated,
    )
    # The precision a TPU runs: the one asked for, whatever the emulated cores ran.
    precision = tpu_precision(outcome.events, spec.trainer_args.get("precision"))
    if not settings.batch_multiple_explicit:
        # A full TPU tile of the dtype the step computes in (tpu_layout.py: 16 rows for bf16,
        # 8 for 32-bit types).
        ctx.batch_multiple = batch_tile_rows(precision)
        ctx.tile_dtype = "bf16" if ctx.batch_multiple == 16 else "32-bit"
    report.settings["batch_multiple"] = ctx.batch_multiple
    all_rows = build_all_rows(outcome.events, settings.warmup)
    rows = all_rows["train"]
    graphs = follow_graphs(outcome.events, all_rows)
    report.steps = rows
    report.validation = all_rows.get("validate", [])
    report.test = all_rows.get("test", [])
    report.graphs = [g.to_json() for g in graphs]
    report.hardware = hardware_evidence(outcome.events, graphs, backend.emulated)
    report.setup = _summed(e.get("counters") or {} for e in starts)
    report.run["steps"] = len(rows)
    report.run["epochs"] = len({r.epoch for r in rows})
    extended = outcome.all("extend")
    if extended:
        report.run["extended_by"] = len(extended)
        report.run["extended_because"] = extended[-1].get("reason")

    from_run = run_causes(ctx, outcome, rows)
    if crash is not None:
        from_run.insert(0, crash_cause(ctx, crash, rows, outcome))
    compiles, compile_causes = check_compiles(
        ctx,
        rows,
        outcome.events,
        [c for c in from_run if c.check == "compile_stability"],
        graphs,
        GraphCauses(ctx, spec.run_dir, outcome.events, all_rows),
    )
    sharding, sharding_causes, shards = check_sharding(
        ctx, rows, outcome.events, Path(spec.run_dir)
    )
    transfers, transfer_causes = check_transfers(ctx, rows, outcome.events)
    fallbacks, fallback_causes = check_fallbacks(
        ctx, rows, outcome.events, window_rows(rows, settings.warmup)
    )
    batches, batch_causes = check_batches(ctx, rows, outcome.events)
    report.checks = {c.name: c for c in (sharding, compiles, transfers, fallbacks, batches)}
    report.shards = shards
    report.causes = (
        [c for c in from_run if c.check == "run"]
        + uneven_loader_causes(ctx, outcome.events)
        + sharding_causes
        + compile_causes
        + fallback_causes
        + transfer_causes
        + batch_causes
    )
    distributed = check_distributed(ctx, outcome.events)
    if distributed is not None:
        report.checks["distributed"] = distributed[0]
        report.causes += distributed[1]
    for stage in ("validate", "test"):
        judged = check_eval(
            ctx, stage, all_rows.get(stage, []), outcome.events, graphs, Path(spec.run_dir)
        )
        if judged is not None:
            check, causes, eval_shards = judged
            report.checks[check.name] = check
            report.causes += causes
            report.eval_shards[check.name] = eval_shards

    # The estimate (report.memory) holds however far the run got; its check, like the others,
    # reads "skipped" rather than "pass" in a run that stopped early (_not_judged).
    memory, memory_causes, report.memory = check_memory(
        ctx,
        outcome.events,
        rows,
        settings.memory_limit,
        graphs,
        report.hardware,
        precision,
    )
    report.checks[memory.name] = memory
    report.causes += memory_causes

    if outcome.status == "raised":
        replica = root_errors(outcome.events)[0]
        if replica.get("internal"):  # a bug in tpulint's recorders, not a verdict
            return error_report(
                report,
                f"internal error while recording the run ({replica['type']}:"
                f" {replica['message']}); please report it with the output of -v",
                replica.get("traceback"),
            )
        report.error_detail = replica.get("traceback")
    if crash is not None:
        report.error_detail = crash.text or _tail(outcome.log, 80)
    if outcome.status in PARTIAL:
        _partly_judged(report, outcome, rows)
    elif outcome.status != "finished":
        _not_judged(report, outcome, rows)
    elif not rows:
        report.causes.insert(0, _no_training(ctx, outcome.events, cores))
        _not_judged(report, outcome, rows)
    failing = [c for c in report.checks.values() if c.status == "fail"]
    run_cause = next((c for c in report.causes if c.check == "run"), None)
    run_failed = any(c.check == "run" and c.severity == "fail" for c in report.causes)
    if outcome.status in PARTIAL and not failing and not run_failed:
        # Judged as far as it went: nothing failed, but the rest could not be seen.
        return error_report(report, outcome.detail, None)
    stopped = ("diverged", "hung", "raised", "crashed")
    if failing or outcome.status in stopped or not rows or run_failed:
        report.verdict = FAIL
        parts = [f"{CHECK_LABELS[c.name]}: {c.summary}" for c in failing]
        if run_cause is not None and (
            outcome.status in ("hung", "raised", "crashed") or not rows or run_failed
        ):
            where = f" ({run_cause.location})" if run_cause.location else ""
            label = {"hung": "hung: ", "raised": ""}.get(outcome.status, "")
            parts.insert(0, f"{label}{run_cause.message.split('; ')[0]}{where}")
        if outcome.status in PARTIAL:
            parts.append(f"the rest was not judged: {outcome.detail}")
        report.summary = "fail: " + "; ".join(parts)
    elif compiles.details.get("window") is None:
        # Trained, but too little to judge even after extending: no verdict without evidence.
        return error_report(report, _too_short(ctx, rows, outcome), None)
    else:
        report.verdict = PASS
        warned = [CHECK_LABELS[c.name] for c in report.checks.values() if c.status == "warn"]
        report.summary = "pass" + (f" with warnings ({', '.join(warned)})" if warned else "")
    return report


def _no_training(ctx: Context, events: list[dict[str, Any]], cores: int) -> Cause:
    """Training finished without a single step: on the TPU it would train nothing."""
    loader = next(
        (e for e in events if e["kind"] == "loader_epoch" and e.get("stage", "train") == "train"),
        None,
    )
    plan = next(
        (e for e in events if e["kind"] == "sampler_plan" and e.get("stage", "train") == "train"),
        None,
    )
    why = "no core's training loader yielded a batch"
    if loader and plan and loader.get("batch_size"):
        why = (
            f"each core's share of the training set ({plan['count']} of"
            f" {plan.get('total') or '?'} samples over {cores} cores) is smaller than one batch"
            f" ({loader['batch_size']})"
            + (", and drop_last=True drops it" if loader.get("drop_last") else "")
        )
    return ctx.cause(
        "run",
        "no_training",
        "fail",
        f"no training step ran: {why}; on {cores} TPU cores this trains nothing. Use more data,"
        " a smaller per-core batch size, or fewer cores",
        loader_site(events),
        codes=("TPU303",) if loader and loader.get("drop_last") else (),
    )


def _too_short(ctx: Context, rows: list[StepRow], outcome: RunOutcome) -> str:
    epochs = len({r.epoch for r in rows})
    after = sum(1 for r in rows if r.step >= ctx.warmup)
    per_epoch = max(sum(1 for r in rows if r.epoch == e) for e in {r.epoch for r in rows})
    refused = outcome.first("extension_refused") or {}
    budget = (
        " (half of --timeout had passed, so no epoch was added)"
        if refused.get("because") == "time"
        else f" (with the {MAX_EXTRA_EPOCHS} epochs verify may add)"
    )
    return (
        f"compile stability cannot be judged: {plural(after, 'training step')} after the"
        f" {plural(ctx.warmup, 'warm-up step')} in {plural(epochs, 'epoch')}{budget}, fewer"
        f" than the {MIN_STEADY_STEPS} a steady window needs"
        f" ({plural(per_epoch, 'batch', 'batches')} per core per epoch); give each core more"
        " batches (more data or a smaller batch size), or pass --epochs or a lower --warmup"
    )


def _not_judged(report: VerifyReport, outcome: RunOutcome, rows: list[StepRow]) -> None:
    """A run that stopped early proves nothing that needs the whole run: its checks keep the
    failures and warnings found before it stopped, and none of them reads "pass"."""
    reason = {
        "raised": "training raised",
        "crashed": "a replica process crashed",
        "hung": "the cores stopped making progress",
        "diverged": "the cores' collectives did not match",
        "too_slow": "--timeout ran out while the cores were still stepping",
        "compiling": "--timeout ran out while XLA was still compiling",
        "unfinished": "the recorded run did not finish",
    }.get(outcome.status, "no training step ran")
    where = f"after {len(rows)} training step{'s' if len(rows) != 1 else ''}" if rows else ""
    for check in report.checks.values():
        if check.status == "pass":
            check.status = "skipped"
            check.summary = f"not judged: {reason} {where}".rstrip()


def _partly_judged(report: VerifyReport, outcome: RunOutcome, rows: list[StepRow]) -> None:
    """A run cut short while it kept working (too slow for --timeout, a recorded run that did
    not finish): what it recorded is judged (the shards of its epochs, its batches, its
    transfers and fallbacks per step), and says how far it got. Compile stability needs the
    run's last whole epochs: only what fails whatever comes next (an op whose output size
    varied, cores whose collectives differed) is kept; new graphs in a cut-off epoch are not a
    verdict."""
    so_far = f" (as far as the run got: {plural(len(rows), 'training step')})"
    lasting = ("data_dependent_shape", "diverged_replicas")
    report.causes = [
        c
        for c in report.causes
        if not (c.check == "compile_stability" and c.severity == "fail" and c.kind not in lasting)
    ]
    for check in report.checks.values():
        if check.name == "compile_stability":
            failing = [c for c in report.causes_for(check.name) if c.severity == "fail"]
            if failing:
                words = {"data_dependent_shape": "data-dependent shapes"}
                label = words.get(failing[0].kind, "replica graphs diverged")
                where = f" at {failing[0].location}" if failing[0].location else ""
                check.status = "fail"
                check.summary = f"{label}{where}{so_far}"
            else:
                check.status = "skipped"
                check.summary = f"not judged: {outcome.detail}"
        elif check.status != "skipped":
            check.summary += so_far


def _summed(counters: Any) -> dict[str, int]:
    total: dict[str, int] = {}
    for values in counters:
        for name, value in values.items():
            total[name] = total.get(name, 0) + int(value)
    return total


def _tail(log: str, lines: int = 40) -> str:
    return "\n".join(log.rstrip().splitlines()[-lines:])

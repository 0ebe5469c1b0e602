"""From a finished (or aborted) run to a VerifyReport: rows, the four checks, the verdict.

error  verify could not run the module: a bad target, an exception in the user's code, a
       crash that is not a verdict about the module (exit 2)
fail   a check failed, or the replicas diverged or hung (exit 1)
pass   otherwise, warnings included (exit 0)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tpulint.runtime.environment import Backend
from tpulint.runtime.frames import CodeFilter
from tpulint.runtime.judge.attribution import RuleIndex
from tpulint.runtime.judge.check_batches import check_batches
from tpulint.runtime.judge.check_compiles import check_compiles
from tpulint.runtime.judge.check_run import run_causes
from tpulint.runtime.judge.check_sharding import check_sharding
from tpulint.runtime.judge.check_transfers import check_transfers
from tpulint.runtime.judge.context import Context
from tpulint.runtime.judge.report import ERROR, FAIL, PASS, VerifyReport
from tpulint.runtime.judge.steps import build_rows
from tpulint.runtime.runner import RunOutcome, root_errors
from tpulint.runtime.spec import RunSpec

CHECK_LABELS = {
    "sharding": "sharding",
    "compile_stability": "compile stability",
    "transfers": "transfers",
    "batch_geometry": "batch geometry",
}


@dataclass
class Settings:
    """How the run is judged (the parent's half of the options)."""

    warmup: int = 2
    batch_multiple: int = 8
    timeout: float = 600.0
    # Fixed copies of user files (--compare) -> how to show them.
    aliases: dict[str, str] = field(default_factory=dict)


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
    if outcome.status == "crashed":
        return error_report(report, f"the run crashed: {outcome.detail}", _tail(outcome.log))

    start = outcome.first("train_start") or {}
    target = outcome.first("target") or {}
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
    )
    rows = build_rows(outcome.events, settings.warmup)
    report.steps = rows
    report.setup = start.get("counters", {})
    report.run["steps"] = len(rows)

    from_run = run_causes(ctx, outcome, rows)
    compiles, compile_causes = check_compiles(
        ctx, rows, outcome.events, [c for c in from_run if c.check == "compile_stability"]
    )
    sharding, sharding_causes, shards = check_sharding(
        ctx, rows, outcome.events, Path(spec.run_dir)
    )
    transfers, transfer_causes = check_transfers(ctx, rows, outcome.events)
    batches, batch_causes = check_batches(ctx, rows, outcome.events)
    report.checks = {c.name: c for c in (sharding, compiles, transfers, batches)}
    report.shards = shards
    report.causes = (
        [c for c in from_run if c.check == "run"]
        + sharding_causes
        + compile_causes
        + transfer_causes
        + batch_causes
    )

    if outcome.status == "raised":
        cause = report.causes[0]
        where = f" ({cause.location})" if cause.location else ""
        replica = root_errors(outcome.events)[0]
        return error_report(report, f"{cause.message}{where}", replica.get("traceback"))
    failing = [c for c in report.checks.values() if c.status == "fail"]
    if failing or outcome.status in ("diverged", "hung"):
        report.verdict = FAIL
        parts = [f"{CHECK_LABELS[c.name]}: {c.summary}" for c in failing]
        if outcome.status == "hung":
            parts.insert(0, f"hung: {report.causes[0].message}")
        report.summary = "fail: " + "; ".join(parts)
    else:
        report.verdict = PASS
        warned = [CHECK_LABELS[c.name] for c in report.checks.values() if c.status == "warn"]
        report.summary = "pass" + (f" with warnings ({', '.join(warned)})" if warned else "")
    return report


def _tail(log: str, lines: int = 40) -> str:
    return "\n".join(log.rstrip().splitlines()[-lines:])

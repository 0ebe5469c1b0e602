"""Judge a run `TPUReadiness` recorded (`tpulint report DIR`), with verify's judge.

The directory holds what every core of the run wrote (rank-*.jsonl, process-*.jsonl, the
shards' plan-*.bin files); on a pod, the directories of every host gathered into one. Nothing
was extended and nothing was stopped: the run ended as the user's run ended. How it ended is
read from the record: every core wrote `rank_done` (finished), a core raised (raised, as in
verify), or some cores stopped writing (unfinished: what was recorded is judged, as for a
verify run that ran out of time). Standard library only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tpulint.runtime.environment import Backend
from tpulint.runtime.errors import VerifyError
from tpulint.runtime.events import read_events
from tpulint.runtime.judge.analysis import Settings, analyze, base_report, error_report
from tpulint.runtime.judge.attribution import RuleIndex
from tpulint.runtime.judge.report import VerifyReport
from tpulint.runtime.monitor import Ending
from tpulint.runtime.runner import RunOutcome, classify
from tpulint.runtime.spec import RunSpec


def _ranks(events: list[dict[str, Any]], kind: str) -> set[int]:
    return {int(e["rank"]) for e in events if e["kind"] == kind and e.get("rank") is not None}


def load_outcome(directory: Path) -> tuple[RunOutcome, dict[str, Any]]:
    events = read_events(directory)
    if not events:
        raise VerifyError(f"{directory}: no recorded run here (no *.jsonl files from TPUReadiness)")
    recording = next((e for e in events if e["kind"] == "recording"), {})
    starts = [e for e in events if e["kind"] == "train_start"]
    world = max((int(e.get("world_size") or 1) for e in starts), default=0)
    done = _ranks(events, "rank_done")
    ending = None
    if not starts:
        ending = Ending("error", "the recorded run never started training")
    elif len(done) >= world:
        ending = Ending("finished", "training finished")
    else:
        stepped = _ranks(events, "step")
        missing = sorted(set(range(world)) - (done | stepped))
        ending = Ending(
            "unfinished",
            f"the run did not finish: {len(done)} of {world} cores finished"
            + (f"; no record from cores {', '.join(map(str, missing))}" if missing else ""),
        )
    status, detail = classify(None, events, "", ending, 0.0)
    seconds = (
        max(e.get("time", 0) for e in events) - min(e.get("time", 0) for e in events)
        if events
        else 0.0
    )
    return RunOutcome(status, detail, None, events, "", seconds, False, ending), recording


def report_directory(
    directory: str | os.PathLike[str],
    *,
    warmup: int | None = None,
    batch_multiple: int | None = None,
) -> VerifyReport:
    """The verdict on a recorded run, as verify's (never raises for a bad directory)."""
    path = Path(directory)
    spec = RunSpec(None, run_dir=str(path))
    settings = Settings(warmup=warmup if warmup is not None else 2)
    if batch_multiple:
        settings.batch_multiple, settings.batch_multiple_explicit = batch_multiple, True
    if not path.is_dir():
        return error_report(base_report(spec, settings, None), f"{directory}: no such folder")
    try:
        outcome, recording = load_outcome(path)
    except VerifyError as exc:
        return error_report(base_report(spec, settings, None), exc.message)
    if warmup is None:
        settings.warmup = int(recording.get("warmup", 2))
    spec.warmup = settings.warmup
    spec.cwd = recording.get("cwd") or os.getcwd()
    starts = outcome.all("train_start")
    device = next((e.get("device_type") for e in starts if e.get("device_type")), None)
    backend = Backend("TPU" if device == "TPU" else "CPU")
    report = analyze(outcome, spec, settings, backend, RuleIndex())
    report.target = None
    report.run["recorded"] = str(path)
    if starts:
        first = starts[0]
        report.backend.update(
            tpu_type=first.get("tpu_type"),
            layout={
                "processes": first.get("processes"),
                "devices_per_process": first.get("addressable_devices"),
            },
            hosts=len({e.get("host", 0) for e in starts}),
        )
    report.settings.update(epochs=None, steps_per_epoch=None, timeout=None)
    return report

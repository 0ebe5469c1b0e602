"""tpulint verify: train a LightningModule under XLA data parallelism and prove that every core
got its own equal share of the data and that the compile count stops growing after warm-up.

    from tpulint.runtime import verify
    report = verify("examples/tpu_ready/model.py:LitClassifier", cores=8)
    report.verdict, report.exit_code, report.to_json()

This package is the only part of tpulint that imports torch, torch_xla or lightning, and it
does so only in the child process that runs the training. The layout keeps the two sides
apart:

    child/     runs inside the training child: imports torch, torch_xla, lightning; records
               what happens into the event log
    judge/     runs in the parent after the child ended: event log in, checks, verdict and
               report out; no torch
    api.py, command.py, runner.py, environment.py
               the parent's entry points and the watchdog that starts the child; no torch
    spec.py, events.py, errors.py, frames.py, trainer_args.py
               what both sides share: the run specification, the event log format, the
               could-not-run error, which frames are the user's, the Trainer's arguments
               (the user's merged with verify's own settings); standard library only

Importing this package, or calling `verify`, in the parent imports no torch; names are
resolved lazily so that the child does not pay for the engine and the report code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tpulint.runtime.api import compare, verify
    from tpulint.runtime.judge.report import CompareReport, VerifyReport

__all__ = ["CompareReport", "VerifyReport", "compare", "verify"]


def __getattr__(name: str) -> Any:
    if name in ("verify", "compare"):
        from tpulint.runtime import api

        return getattr(api, name)
    if name in ("VerifyReport", "CompareReport"):
        from tpulint.runtime.judge import report

        return getattr(report, name)
    raise AttributeError(f"module 'tpulint.runtime' has no attribute {name!r}")

"""What the run was built from, for the report: the LightningCLI config files, the classes and
arguments the model and DataModule were built with, and the Trainer's arguments (what the user
asked for, what was used, what verify overrode and why), as the child recorded them in its
`target` and `trainer` events. Parent process only; standard library only.
"""

from __future__ import annotations

import os
from typing import Any

from tpulint.runtime.judge.report import Cause, VerifyReport
from tpulint.runtime.spec import RunSpec
from tpulint.runtime.trainer_args import describe


def record_run_inputs(
    report: VerifyReport,
    spec: RunSpec,
    configs: list[Any],
    events: list[dict[str, Any]],
) -> None:
    report.config = [os.fspath(c) for c in configs]
    report.datamodule_args = dict(spec.datamodule_args)
    target = next((e for e in events if e["kind"] == "target"), None)
    if target is not None:
        built = target.get("description") or {}
        report.model_class = built.get("class")
        report.datamodule_class = built.get("datamodule")
        if "init_args" in built:  # resolved by LightningCLI from the config files
            report.init_args = built["init_args"]
        if "datamodule_args" in built:
            report.datamodule_args = built["datamodule_args"]
    lost = next((e for e in events if e["kind"] == "config_optimizer_lost"), None)
    if lost is not None:
        report.causes.append(_optimizer_lost(lost))
    trainer = next((e for e in events if e["kind"] == "trainer"), None)
    if trainer is not None:
        report.trainer = {
            key: trainer.get(key) for key in ("package", "class", "requested", "used", "overridden")
        }
    else:  # the child never built a Trainer: what the user asked for is all there is
        report.trainer = {
            "package": None,
            "class": None,
            "requested": describe(spec.trainer_args),
            "used": None,
            "overridden": [],
        }


def _optimizer_lost(event: dict[str, Any]) -> Cause:
    sections = " and ".join(
        f"`{key}: {event[key]}`" for key in ("optimizer", "lr_scheduler") if event.get(key)
    )
    instead = (
        f"{event.get('model_class')}'s own configure_optimizers() runs instead"
        if event.get("model_has_own")
        else f"{event.get('model_class')} has no configure_optimizers() of its own, so it trains"
        " with no optimizer at all"
    )
    return Cause(
        check="run",
        kind="config_optimizer_lost",
        severity="warn",
        message=(
            f"the config's {sections or 'optimizer'} is not what trains on the cores: the"
            " XLA launcher pickles the module into the replica processes, and the"
            " configure_optimizers LightningCLI patches in does not survive pickling (Lightning"
            f" issue #16489); {instead}. Give the module its optimizer as an init argument"
            " (`optimizer: OptimizerCallable`, LightningCLI's dependency-injection form)"
        ),
    )

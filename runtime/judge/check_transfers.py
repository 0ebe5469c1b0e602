"""Device-to-host transfers per step, and the source line behind each.

torch_xla's TransferFromDeviceTime counts every transfer; the op tracer in each replica
thread places the ones Python asked for (`.item()`, `float(t)`, `print(t)`, `if t:`). What
the tracer cannot see is torch_xla reading values for itself, which happens for ops it runs
on the host: a boolean mask's `nonzero`, counted as `aten::nonzero`. A transfer stalls the
step until the device catches up, so any after warm-up is a warning, not a failure.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from tpulint.runtime.judge.check_compiles import shape_op_sites
from tpulint.runtime.judge.context import Context, plural
from tpulint.runtime.judge.report import Cause, Check, StepRow
from tpulint.runtime.judge.steps import raw_rank_buckets

_ADVICE = {
    "item": "keep it a tensor (self.log and torchmetrics take tensors)",
    "float": "keep it a tensor (self.log and torchmetrics take tensors)",
    "int": "keep it a tensor, or compute the value on the host side of the loader",
    "bool": "tensor-valued control flow: use torch.where or move the decision out of the step",
    "tolist": "keep it a tensor",
    "cpu": "keep it on the device during the step",
    "to(cpu)": "keep it on the device during the step",
    "numpy": "keep it on the device during the step",
    "repr": "printing a tensor reads it back; log it instead",
    "format": "formatting a tensor reads it back; log it instead",
}


def _library_reader(site: dict[str, Any]) -> str:
    path = site["path"].replace("\\", "/")
    if "/lightning/" in path or "/pytorch_lightning/" in path:
        return (
            "Lightning itself reads it (no line of yours on the stack): it reads logged values"
            " back to show them, every step for `self.log(..., prog_bar=True)`"
        )
    return "a library reads it (no line of yours was on the stack)"


def _per_step_counters(
    events: list[dict[str, Any]], stage: str = "train"
) -> dict[int, dict[str, int]]:
    """Counters per row of `stage`, numbered as its rows are."""
    totals: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    index: dict[tuple[Any, ...], int] = {}
    for event in events:
        if event["kind"] == "step" and stage == "train":
            step = event["step"]
        elif event["kind"] == "eval_step" and event.get("stage") == stage:
            key = (event.get("run"), event.get("dataloader_idx", 0), event["batch_idx"])
            step = index.setdefault(key, len(index))
        else:
            continue
        for counter, value in event["counters"].items():
            totals[step][counter] += value
    return totals


_STAGE_NOUN = {"validate": "validation", "test": "test"}


def check_transfers(
    ctx: Context,
    rows: list[StepRow],
    events: list[dict[str, Any]],
    stage: str = "train",
    name: str = "transfers",
) -> tuple[Check, list[Cause]]:
    """Transfers per step (per validation or test batch for those `stage`s: then `name` is
    that check's and only its later runs are judged when it has more than one)."""
    unit = "step" if stage == "train" else f"{_STAGE_NOUN.get(stage, stage)} batch"
    first = "warmup" if stage == "train" else "first_run"
    judged = [r for r in rows if r.phase != first] or ([] if stage == "train" else list(rows))
    judged_steps = {r.step for r in judged}
    if not judged:
        return Check(name, "skipped", f"no {unit} after warm-up", {}), []
    cores = max(ctx.cores, 1)
    per_core_step = len(judged) * cores

    sites: dict[tuple[str, int, str], dict[str, Any]] = {}
    for step, rank, bucket in raw_rank_buckets(events, stage):
        if step not in judged_steps:
            continue
        for read in bucket.get("transfers", []):
            key = (read["site"]["path"], read["site"]["line"], read["op"])
            entry = sites.setdefault(
                key,
                {
                    "site": read["site"],
                    "op": read["op"],
                    "count": 0,
                    "steps": set(),
                    "cores": set(),
                },
            )
            entry["count"] += read["count"]
            entry["steps"].add(step)
            entry["cores"].add(rank)

    causes: list[Cause] = []
    # The user's own lines first: those are the ones to change.
    ordered = sorted(sites.values(), key=lambda e: (not e["site"].get("user", True), -e["count"]))
    for entry in ordered:
        rate = entry["count"] / per_core_step
        if entry["site"].get("user", True):
            why = "the core waits for the step so far to finish; " + _ADVICE.get(
                entry["op"], "keep it on the device"
            )
        else:
            why = _library_reader(entry["site"])
        causes.append(
            ctx.cause(
                name,
                "host_read",
                "warn",
                f"`{entry['op']}` reads a value back to the host {plural(rate, 'time')}"
                f" per {unit} per core: {why}",
                entry["site"],
                steps=sorted(entry["steps"]),
                cores=sorted(entry["cores"]),
                count=entry["count"],
            )
        )

    traced = sum(e["count"] for e in sites.values())
    counted = sum(r.transfers for r in judged)
    unexplained = max(counted - traced, 0)
    if unexplained:
        causes += _unexplained(
            ctx, events, judged_steps, unexplained, per_core_step, stage, name, unit
        )

    rate = counted / per_core_step
    status = "warn" if counted else "pass"
    after = " after warm-up" if stage == "train" else ""
    if counted:
        top = causes[0] if causes else None
        where = f"; most at {top.location}" if top and top.location else ""
        summary = f"{plural(rate, 'transfer')} per {unit} per core{after}{where}"
    else:
        summary = f"no device-to-host transfer{after}"
    details = {
        "after_warmup": counted,
        "per_step_per_core": round(rate, 3),
        "traced": traced,
        "per_step": [r.transfers for r in rows],
    }
    return Check("transfers", status, summary, details), causes


def _unexplained(
    ctx: Context,
    events: list[dict[str, Any]],
    steps: set[int],
    count: int,
    per_core_step: int,
    stage: str,
    name: str,
    unit: str,
) -> list[Cause]:
    counters = _per_step_counters(events, stage)
    host_ops = sorted(
        {
            name
            for step in steps
            for name, value in counters.get(step, {}).items()
            if name.startswith("aten::") and name != "aten::_local_scalar_dense" and value
        }
    )
    shape_sites = [e for e in shape_op_sites(events, stage) if e["steps"] & steps]
    rate = count / per_core_step
    if shape_sites and host_ops:
        entry = max(shape_sites, key=lambda e: e["count"])
        return [
            ctx.cause(
                name,
                "host_shape_computation",
                "warn",
                f"{plural(rate, 'transfer')} per {unit} per core come from torch_xla running"
                f" {', '.join(host_ops)} on the host to size the result of this line",
                entry["site"],
                steps=sorted(entry["steps"]),
                cores=sorted(entry["cores"]),
                count=count,
            )
        ]
    return [
        ctx.cause(
            name,
            "unattributed_transfers",
            "info",
            f"{plural(rate, 'transfer')} per {unit} per core were not made from Python (torch_xla"
            f" internals{': ' + ', '.join(host_ops) if host_ops else ''})",
            count=count,
        )
    ]

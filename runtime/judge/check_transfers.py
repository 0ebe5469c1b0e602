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


def _per_step_counters(events: list[dict[str, Any]]) -> dict[int, dict[str, int]]:
    totals: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for event in events:
        if event["kind"] == "step":
            for name, value in event["counters"].items():
                totals[event["step"]][name] += value
    return totals


def check_transfers(
    ctx: Context, rows: list[StepRow], events: list[dict[str, Any]]
) -> tuple[Check, list[Cause]]:
    judged = [r for r in rows if r.phase != "warmup"]
    judged_steps = {r.step for r in judged}
    if not judged:
        return Check("transfers", "skipped", "no step after warm-up", {}), []
    cores = max(ctx.cores, 1)
    per_core_step = len(judged) * cores

    sites: dict[tuple[str, int, str], dict[str, Any]] = {}
    for step, rank, bucket in raw_rank_buckets(events):
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
                "transfers",
                "host_read",
                "warn",
                f"`{entry['op']}` reads a value back to the host {plural(rate, 'time')}"
                f" per step per core: {why}",
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
        causes += _unexplained(ctx, events, judged_steps, unexplained, per_core_step)

    rate = counted / per_core_step
    status = "warn" if counted else "pass"
    if counted:
        first = causes[0] if causes else None
        where = f"; most at {first.location}" if first and first.location else ""
        summary = f"{plural(rate, 'transfer')} per step per core after warm-up{where}"
    else:
        summary = "no device-to-host transfer after warm-up"
    details = {
        "after_warmup": counted,
        "per_step_per_core": round(rate, 3),
        "traced": traced,
        "per_step": [r.transfers for r in rows],
    }
    return Check("transfers", status, summary, details), causes


def _unexplained(
    ctx: Context, events: list[dict[str, Any]], steps: set[int], count: int, per_core_step: int
) -> list[Cause]:
    counters = _per_step_counters(events)
    host_ops = sorted(
        {
            name
            for step in steps
            for name, value in counters.get(step, {}).items()
            if name.startswith("aten::") and name != "aten::_local_scalar_dense" and value
        }
    )
    shape_sites = [e for e in shape_op_sites(events) if e["steps"] & steps]
    rate = count / per_core_step
    if shape_sites and host_ops:
        entry = max(shape_sites, key=lambda e: e["count"])
        return [
            ctx.cause(
                "transfers",
                "host_shape_computation",
                "warn",
                f"{plural(rate, 'transfer')} per step per core come from torch_xla running"
                f" {', '.join(host_ops)} on the host to size the result of this line",
                entry["site"],
                steps=sorted(entry["steps"]),
                cores=sorted(entry["cores"]),
                count=count,
            )
        ]
    return [
        ctx.cause(
            "transfers",
            "unattributed_transfers",
            "info",
            f"{plural(rate, 'transfer')} per step per core were not made from Python (torch_xla"
            f" internals{': ' + ', '.join(host_ops) if host_ops else ''})",
            count=count,
        )
    ]

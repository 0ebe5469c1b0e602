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
from tpulint.runtime.judge.context import Context, plural, status_of
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


def _loop_groups(rows: list[StepRow], stage: str) -> list[set[int]]:
    """The steps of every epoch (validation and test: of every run)."""
    groups: dict[Any, set[int]] = defaultdict(set)
    for row in rows:
        groups[row.epoch if stage == "train" else row.run].add(row.step)
    return list(groups.values())


def _once_per_loop(steps: set[int], groups: list[set[int]]) -> bool:
    """Read only at an end of epochs (or runs), at most once in each, in loops of at least
    two steps: end-of-loop bookkeeping, not a per-step cost."""
    return all(len(g) >= 2 for g in groups) and all(
        len(steps & g) <= 1 and (steps & g) <= {min(g), max(g)} for g in groups
    )


def _function(site: dict[str, Any]) -> str:
    """`torch.nn.modules.transformer._detect_is_causal_mask`-like, from a library frame."""
    path = site["path"].replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            path = path.split(marker, 1)[1]
    module = path.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
    return f"`{module}.{site['function']}` (line {site['line']})"


# Library functions known to read tensor values, with what to do about it.
_KNOWN_READERS: tuple[tuple[str, str, str], ...] = (
    (
        "/lightning/fabric/utilities/apply_func.py",
        "to_item",
        "Lightning turns logged values into Python numbers to show them; for"
        " `self.log(..., prog_bar=True)` that is every step: drop prog_bar, or log on_epoch",
    ),
    (
        "/lightning/pytorch/strategies/xla.py",
        "reduce",
        "`self.log(..., sync_dist=True)` reduces the value over the cores through the host"
        " (xm.mesh_reduce) each time it logs: log on_step=False, on_epoch=True, or without"
        " sync_dist",
    ),
    (
        "/torch/nn/modules/transformer.py",
        "_detect_is_causal_mask",
        "torch.nn.Transformer reads the mask to find out whether it is causal; tell it instead:"
        " pass `tgt_is_causal=True` with a causal `tgt_mask` (`is_causal=True` for an encoder"
        " or decoder layer), and it does not look",
    ),
)


def known_reader(site: dict[str, Any] | None) -> str | None:
    if not site:
        return None
    path = site["path"].replace("\\", "/")
    for suffix, function, hint in _KNOWN_READERS:
        if path.endswith(suffix) and site.get("function") == function:
            return hint
    return None


def _library_reader(site: dict[str, Any]) -> str:
    return known_reader(site) or "a library reads it (no line of yours was on the stack)"


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

    sites: dict[tuple[Any, ...], dict[str, Any]] = {}
    for step, rank, bucket in raw_rank_buckets(events, stage):
        if step not in judged_steps:
            continue
        for read in bucket.get("transfers", []):
            reader = read.get("reader") or {}
            key = (
                read["site"]["path"],
                read["site"]["line"],
                read["op"],
                reader.get("path"),
                reader.get("function"),
            )
            entry = sites.setdefault(
                key,
                {
                    "site": read["site"],
                    "reader": read.get("reader"),
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
    groups = _loop_groups(rows, stage)
    for entry in ordered:
        rate = entry["count"] / per_core_step
        once = _once_per_loop(entry["steps"], groups)
        reader = entry.get("reader")
        known = known_reader(reader or entry["site"])
        if known:
            why = known
        elif entry["site"].get("user", True):
            why = "the core waits for the step so far to finish; " + _ADVICE.get(
                entry["op"], "keep it on the device"
            )
        else:
            why = _library_reader(entry["site"])
        who = f"`{entry['op']}`"
        if reader:
            who += f" in {_function(reader)}, called from this line,"
        how_often = (
            f"once per {'epoch' if stage == 'train' else 'run'}, at its start or end"
            if once
            else f"{plural(rate, 'time')} per {unit} per core"
        )
        causes.append(
            ctx.cause(
                name,
                "host_read",
                "info" if once else "warn",
                f"{who} reads a value back to the host {how_often}: {why}",
                entry["site"],
                steps=sorted(entry["steps"]),
                cores=sorted(entry["cores"]),
                count=entry["count"],
            )
        )

    traced = sum(e["count"] for e in sites.values())
    per_step_reads = [c for c in causes if c.severity == "warn"]
    counted = sum(r.transfers for r in judged)
    unexplained = max(counted - traced, 0)
    if unexplained:
        causes += _unexplained(
            ctx, events, judged_steps, unexplained, per_core_step, stage, name, unit
        )

    rate = counted / per_core_step
    status = status_of(causes) if causes else ("warn" if counted else "pass")
    after = " after warm-up" if stage == "train" else ""
    if status != "pass":
        top = per_step_reads[0] if per_step_reads else (causes[0] if causes else None)
        where = f"; most at {top.location}" if top and top.location else ""
        summary = f"{plural(rate, 'transfer')} per {unit} per core{after}{where}"
    elif counted:
        summary = (
            f"no transfer per {unit}{after}; {plural(counted, 'read')} at the ends of"
            f" {'epochs' if stage == 'train' else 'runs'} (bookkeeping)"
        )
    else:
        summary = (
            f"no device-to-host transfer{after}" if stage == "train" else f"no transfer per {unit}"
        )
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
            counter
            for step in steps
            for counter, value in counters.get(step, {}).items()
            if counter.startswith("aten::") and counter != "aten::_local_scalar_dense" and value
        }
    )
    shape_sites = [e for e in shape_op_sites(events, stage) if e["steps"] & steps]
    rate = count / per_core_step
    fallen: dict[tuple[str, int], dict[str, Any]] = {}
    for step, _rank, bucket in raw_rank_buckets(events, stage):
        if step in steps:
            for entry in bucket.get("fallbacks", []):
                key = (entry["site"]["path"], entry["site"]["line"])
                fallen.setdefault(key, {"site": entry["site"], "ops": set()})["ops"].add(
                    entry["op"].removeprefix("aten::")
                )
    if fallen and not shape_sites:
        entry = next(iter(fallen.values()))
        return [
            ctx.cause(
                name,
                "host_fallback_transfers",
                "warn",
                f"{plural(rate, 'transfer')} per {unit} per core: torch_xla runs"
                f" {', '.join(sorted(entry['ops']))} on the CPU at this line (a CPU fallback)",
                entry["site"],
                count=count,
            )
        ]
    if shape_sites and host_ops:
        entry = max(shape_sites, key=lambda e: e["count"])
        return [
            ctx.cause(
                name,
                "host_shape_computation",
                "warn",
                f"{plural(rate, 'transfer')} per {unit} per core: torch_xla runs"
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

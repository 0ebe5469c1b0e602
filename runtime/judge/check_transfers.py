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
from tpulint.runtime.judge.context import Context, plural, span, status_of
from tpulint.runtime.judge.report import Cause, Check, StepRow
from tpulint.runtime.judge.steps import raw_rank_buckets
from tpulint.runtime.xla_ops import is_shape_op, lowered_on_tpu

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
    """Read only at the ends of epochs (or runs), in loops of at least two steps: end-of-loop
    bookkeeping, not a per-step cost. At one end of each loop; or at both, in loops of at
    least four steps: the cores record their rows without waiting for each other, so where
    several share a process (threads, a v2/v3 host's two devices per process) the counters
    of one epoch end split between the slowest core's last row and the next epoch's first."""
    if not all(len(g) >= 2 for g in groups):
        return False
    for group in groups:
        hit = steps & group
        if not hit <= {min(group), max(group)} or (len(hit) == 2 and len(group) < 4):
            return False
    return True


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
        "Lightning's XLA strategy reduces a value over the cores through the host"
        " (xm.mesh_reduce): `self.log(..., sync_dist=True)` does it each time it logs (log"
        " on_step=False, on_epoch=True, or without sync_dist), and callbacks do it for their"
        " decisions across cores (EarlyStopping, ModelCheckpoint) at the end of validation",
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
    if "/torchmetrics/" in path and "_validation" in str(site.get("function")):
        return (
            "torchmetrics validates the metric's arguments on every call"
            " (`validate_args=True`, the default), reading them on the host: pass"
            " `validate_args=False` to the metric once its inputs are known to be valid"
        )
    # pytorch_lightning and lightning_fabric are the same code as lightning.pytorch/fabric
    path = path.replace("/pytorch_lightning/", "/lightning/pytorch/").replace(
        "/lightning_fabric/", "/lightning/fabric/"
    )
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
    steady: list[StepRow] | None = None,
) -> tuple[Check, list[Cause]]:
    """Transfers per step (per validation or test batch for those `stage`s: then `name` is
    that check's and only its later runs are judged when it has more than one).

    The headline is the steady rate: the reads of the final steady window (training; the last
    run for validation and test), per step and core. Reads at the ends of epochs or runs are
    bookkeeping, reported apart; reads outside the steady window only (a step that logs every
    `log_every_n_steps`, a one-off) are reported with their steps."""
    unit = "step" if stage == "train" else f"{_STAGE_NOUN.get(stage, stage)} batch"
    first = "warmup" if stage == "train" else "first_run"
    judged = [r for r in rows if r.phase != first] or ([] if stage == "train" else list(rows))
    judged_steps = {r.step for r in judged}
    if not judged:
        return Check(name, "skipped", f"no {unit} after warm-up", {}), []
    if steady is None:
        steady = _steady_rows(rows, judged, stage, ctx.warmup)
    steady_steps = {r.step for r in steady}
    cores = max(ctx.cores, 1)
    per_core_steady = max(len(steady) * cores, 1)

    sites: dict[tuple[Any, ...], dict[str, Any]] = {}
    traced_at: dict[int, int] = defaultdict(int)
    for step, rank, bucket in raw_rank_buckets(events, stage):
        if step not in judged_steps:
            continue
        for read in bucket.get("transfers", []):
            traced_at[step] += read["count"]
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
                    "steady": 0,
                    "steps": set(),
                    "cores": set(),
                },
            )
            entry["count"] += read["count"]
            entry["steady"] += read["count"] if step in steady_steps else 0
            entry["steps"].add(step)
            entry["cores"].add(rank)

    causes: list[Cause] = []
    # The user's own lines first: those are the ones to change.
    ordered = sorted(sites.values(), key=lambda e: (not e["site"].get("user", True), -e["count"]))
    groups = _loop_groups(rows, stage)
    bookkeeping = 0
    for entry in ordered:
        once = _once_per_loop(entry["steps"], groups)
        per_step = bool(entry["steady"]) and not once
        reader = entry.get("reader")
        known = known_reader(reader or entry["site"])
        if known:
            why = known
        elif entry["site"].get("user", True):
            why = "the core waits for the step so far to finish; " + _ADVICE.get(
                entry["op"].split(" ")[0], "keep it on the device"
            )
        else:
            why = _library_reader(entry["site"])
        who = f"`{entry['op']}`"
        if reader:
            who += f" in {_function(reader)}, called from this line,"
        if once:
            bookkeeping += entry["count"]
            how_often = f"once per {'epoch' if stage == 'train' else 'run'}, at its start or end"
        elif per_step:
            how_often = (
                f"{plural(entry['steady'] / per_core_steady, 'time')} per {unit} per core in"
                f" the steady {'window' if stage == 'train' else 'run'}"
            )
        else:
            how_often = (
                f"at {unit} {span(sorted(entry['steps']))} only"
                f" ({plural(entry['count'], 'read')} over the cores, none in the steady"
                f" {'window' if stage == 'train' else 'run'})"
            )
        causes.append(
            ctx.cause(
                name,
                "host_read",
                "warn" if per_step else "info",
                f"{who} reads a value back to the host {how_often}: {why}",
                entry["site"],
                steps=sorted(entry["steps"]),
                cores=sorted(entry["cores"]),
                count=entry["count"],
            )
        )

    # What the counters saw and no Python call explains, step by step: at the ends of loops
    # it is bookkeeping (Lightning's reductions, torch_xla's own), in the steady window's
    # steps a per-step cost to explain.
    traced_steady = sum(
        e["steady"] for e in sites.values() if not _once_per_loop(e["steps"], groups)
    )
    traced = sum(e["count"] for e in sites.values())
    counted = sum(r.transfers for r in judged)
    sharing = _cores_per_process(events)
    if sharing == 1:
        # one core per process (a v4, v5e, v5p, v6e): each row is its step's own count
        missing = {r.step: r.transfers - traced_at.get(r.step, 0) for r in judged}
        missing = {step: count for step, count in missing.items() if count > 0}
        at_ends = _once_per_loop(set(missing), groups)
        unexplained_steady = 0 if at_ends else sum(missing.get(step, 0) for step in steady_steps)
        unexplained_elsewhere = sum(missing.values()) - unexplained_steady
    else:
        missing = {
            step: count
            for step, count in unexplained_by_step(judged, traced_at).items()
            if step not in steady_steps
        }
        at_ends = _once_per_loop(set(missing), groups)
        unexplained_steady = window_excess(steady, traced_at, sharing, groups)
        unexplained_elsewhere = sum(missing.values())
    emulation_only = 0
    if unexplained_steady:
        found, emulation_only = _unexplained(
            ctx, events, steady_steps, unexplained_steady, per_core_steady, stage, name, unit
        )
        causes += found
    if unexplained_elsewhere:
        causes.append(
            ctx.cause(
                name,
                "unattributed_transfers",
                "info",
                f"{plural(unexplained_elsewhere, 'transfer')}"
                + (
                    f" at the ends of {'epochs' if stage == 'train' else 'runs'}"
                    if at_ends
                    else f" outside the steady {'window' if stage == 'train' else 'run'}"
                )
                + " were not made from Python (torch_xla's own reads, in Lightning's"
                " collectives and bookkeeping)",
                count=unexplained_elsewhere,
            )
        )
        bookkeeping += unexplained_elsewhere

    rate = max(traced_steady + unexplained_steady - emulation_only, 0) / per_core_steady
    per_step_reads = [c for c in causes if c.severity == "warn"]
    status = status_of(causes) if causes else "pass"
    after = " after warm-up" if stage == "train" else ""
    apart = (
        f"; {plural(bookkeeping, 'read')} at the ends of {'epochs' if stage == 'train' else 'runs'}"
        " and outside the steady window (bookkeeping)"
        if bookkeeping
        else ""
    )
    if status == "warn" or status == "fail":
        top = per_step_reads[0] if per_step_reads else (causes[0] if causes else None)
        where = f"; most at {top.location}" if top and top.location else ""
        summary = f"{plural(rate, 'transfer')} per {unit} per core{after}{where}{apart}"
    elif counted:
        summary = f"no transfer per {unit}{after}{apart}"
    else:
        summary = (
            f"no device-to-host transfer{after}" if stage == "train" else f"no transfer per {unit}"
        )
    details = {
        "after_warmup": counted,
        "per_step_per_core": round(rate, 3),
        "steady_steps": len(steady),
        "bookkeeping": bookkeeping,
        "traced": traced,
        "per_step": [r.transfers for r in rows],
    }
    return Check("transfers", status, summary, details), causes


def _cores_per_process(events: list[dict[str, Any]]) -> int:
    """How many cores share a training process (threads of one on emulated cores, two per
    chip on a v2 or v3): then a row's counters are not its step's alone."""
    return max(
        (int(e.get("local_cores") or 1) for e in events if e["kind"] == "train_start"), default=1
    )


def window_excess(
    steady: list[StepRow], traced_at: dict[int, int], sharing: int, groups: list[set[int]]
) -> int:
    """The steady window's transfers no Python call made, when `sharing` cores share each
    process: rows are exact only summed, so the window is compared with its traced reads as a
    whole. Left out: the first and last step of each epoch (or run), whose rows split the
    loop's own bookkeeping between them (`_once_per_loop`). The sum of the rest is off only by
    the reads made a row early at its two edges, each at most a row's reads of all but the
    slowest core (the cores meet at every step's collectives, so no core is more than a step
    ahead): an excess within that is noise; a larger one is counted whole (the edges' errors
    cancel on average) and scaled back to the whole window."""
    ends = {step for group in groups if len(group) >= 2 for step in (min(group), max(group))}
    body = [r for r in steady if r.step not in ends]
    if not body:
        return 0
    net = sum(r.transfers - traced_at.get(r.step, 0) for r in body)
    noise = (sharing - 1) * max(max(r.transfers, traced_at.get(r.step, 0)) for r in body)
    if net <= noise // sharing:
        return 0
    return round(net * len(steady) / len(body))


def unexplained_by_step(rows: list[StepRow], traced_at: dict[int, int]) -> dict[int, int]:
    """The transfers torch_xla counted at each step beyond those a Python call made there.

    A process's counters are read once per step, by the last of its cores to finish it; when
    cores share a process (threads of one, or a v2/v3's two per chip) a core already into the
    next step has its reads counted a row early, and that row is short by as many. So a step's
    excess counts only where it is never paid back: the running balance (counted minus traced)
    from that step on never falls below it. A core's read a row early shows as +1 then -1 and
    nets out; a read no Python call made stays in the balance at its own step."""
    ordered = sorted(rows, key=lambda r: r.step)
    balance = 0
    balances: list[int] = []
    for row in ordered:
        balance += row.transfers - traced_at.get(row.step, 0)
        balances.append(balance)
    # the lowest the balance falls from each step on
    floor_from: list[int] = balances[:]
    for index in range(len(floor_from) - 2, -1, -1):
        floor_from[index] = min(floor_from[index], floor_from[index + 1])
    missing: dict[int, int] = {}
    settled = 0
    for row, floor in zip(ordered, floor_from, strict=True):
        if floor > settled:
            missing[row.step] = floor - settled
            settled = floor
    return missing


def _steady_rows(
    rows: list[StepRow], judged: list[StepRow], stage: str, warmup: int
) -> list[StepRow]:
    """The rows whose reads make the headline: training's final steady window (all rows
    after warm-up when the run has none), a validation or test loop's last run."""
    if stage == "train":
        from tpulint.runtime.judge.check_compiles import window_rows

        return window_rows(rows, warmup) or judged
    last = max((r.run for r in judged if r.run is not None), default=None)
    return [r for r in judged if r.run == last] or judged


def _unexplained(
    ctx: Context,
    events: list[dict[str, Any]],
    steps: set[int],
    count: int,
    per_core_step: int,
    stage: str,
    name: str,
    unit: str,
) -> tuple[list[Cause], int]:
    """The steady window's transfers no Python call made, explained by the host ops of those
    steps, each at its own line: a CPU fallback copies its inputs to the host, an op whose
    output size depends on the data sizes it there. Returns the causes and how many of the
    transfers only the emulation makes (fallbacks a TPU lowers)."""
    counters = _per_step_counters(events, stage)
    host_ops = sorted(
        {
            counter
            for step in steps
            for counter, value in counters.get(step, {}).items()
            if counter.startswith("aten::") and counter != "aten::_local_scalar_dense" and value
        }
    )
    rate = count / per_core_step
    shape_ops = [c for c in host_ops if is_shape_op(c)]
    fallbacks = [c for c in host_ops if not is_shape_op(c)]
    if fallbacks and not shape_ops and all(lowered_on_tpu(c) for c in fallbacks):
        names = ", ".join(c.removeprefix("aten::") for c in fallbacks)
        return [
            ctx.cause(
                name,
                "emulation_only_transfers",
                "info",
                f"{plural(rate, 'transfer')} per {unit} per core come from {names} falling back to"
                " the CPU, which happens only on emulated cores: a TPU runs it in the graph, with"
                " no transfer (see cpu fallbacks)",
                count=count,
            )
        ], count
    shape_sites = [e for e in shape_op_sites(events, stage) if e["steps"] & steps]
    if shape_sites and shape_ops:
        entry = max(shape_sites, key=lambda e: e["count"])
        return [
            ctx.cause(
                name,
                "host_shape_computation",
                "warn",
                f"{plural(rate, 'transfer')} per {unit} per core: torch_xla runs"
                f" {', '.join(shape_ops)} on the host to size"
                " the result of this line",
                entry["site"],
                steps=sorted(entry["steps"]),
                cores=sorted(entry["cores"]),
                count=count,
            )
        ], 0
    fallen: dict[tuple[str, int], dict[str, Any]] = {}
    for step, _rank, bucket in raw_rank_buckets(events, stage):
        if step in steps:
            for entry in bucket.get("fallbacks", []):
                if lowered_on_tpu(entry["op"]):
                    continue
                key = (entry["site"]["path"], entry["site"]["line"])
                fallen.setdefault(key, {"site": entry["site"], "ops": set()})["ops"].add(
                    entry["op"].removeprefix("aten::")
                )
    if fallen:
        entry = next(iter(fallen.values()))
        return [
            ctx.cause(
                name,
                "host_fallback_transfers",
                "warn",
                f"{plural(rate, 'transfer')} per {unit} per core: torch_xla runs"
                f" {', '.join(sorted(entry['ops']))} on the CPU at this line (a CPU fallback),"
                " copying its inputs to the host and its result back",
                entry["site"],
                count=count,
            )
        ], 0
    return [
        ctx.cause(
            name,
            "unattributed_transfers",
            "warn",
            f"{plural(rate, 'transfer')} per {unit} per core were not made from Python (torch_xla's"
            f" own reads{': ' + ', '.join(host_ops) if host_ops else ''}), and no line of yours"
            " could be tied to them",
            count=count,
        )
    ], 0

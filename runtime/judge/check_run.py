"""Causes for runs that did not finish: diverged replicas, hangs, exceptions.

* diverged: XLA aborted because the replicas did not enter the same collective. The child
  records, per replica, each new (collective, call site, shapes) it entered, so the last ones
  say who was where with what; data-dependent shapes seen in the step are the usual reason.
* hung: the stacks every thread dumped on SIGUSR1 (faulthandler), or the barrier a replica
  gave up on, say where the cores stopped.
* raised: the replica's exception and its innermost user frame.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from tpulint.runtime.frames import is_plumbing
from tpulint.runtime.judge.check_batches import loader_site
from tpulint.runtime.judge.check_compiles import shape_op_sites
from tpulint.runtime.judge.context import Context, plural
from tpulint.runtime.judge.hooks import (
    LEGACY_HOOKS,
    hook_site,
    library_line,
    loader_hook,
    removed_hook,
)
from tpulint.runtime.judge.report import Cause, StepRow
from tpulint.runtime.runner import RunOutcome, out_of_data, root_errors

_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+) in (?P<function>\S+)')


def run_causes(ctx: Context, outcome: RunOutcome, rows: list[StepRow]) -> list[Cause]:
    if outcome.status == "diverged":
        return [_diverged(ctx, outcome, rows)]
    if outcome.status == "hung":
        return [_hung(ctx, outcome, rows)]
    if outcome.status == "raised":
        return [_raised(ctx, outcome)]
    return []


def _step_in_progress(rows: list[StepRow]) -> int:
    return rows[-1].step + 1 if rows else 0


def _diverged(ctx: Context, outcome: RunOutcome, rows: list[StepRow]) -> Cause:
    step = _step_in_progress(rows)
    last: dict[int, dict[str, Any]] = {}
    for event in outcome.all("collective"):
        if event["rank"] is not None:
            last[event["rank"]] = event
    groups: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for rank, event in sorted(last.items()):
        site = event.get("site") or {}
        key = (event["name"], site.get("path"), site.get("line"), str(event["shapes"]))
        groups[key].append(rank)
    if len(groups) > 1:
        names = {key[0] for key in groups}
        sample = next(iter(last.values()))
        where = {key: _at(ctx, last[ranks[0]].get("site")) for key, ranks in groups.items()}
        if len(names) == 1:
            shapes = "; ".join(
                f"{key[3]} on cores {', '.join(map(str, ranks))}{where[key]}"
                for key, ranks in groups.items()
            )
            what = f"entered `{sample['name']}` with different shapes ({shapes})"
        else:
            what = (
                "entered different collectives ("
                + "; ".join(
                    f"`{key[0]}` on cores {', '.join(map(str, ranks))}{where[key]}"
                    for key, ranks in groups.items()
                )
                + ")"
            )
        site = _user_site_of([e for e in last.values() if e.get("site")]) or sample.get("site")
        return ctx.cause(
            "compile_stability",
            "diverged_replicas",
            "fail",
            f"replica graphs diverged at step {step}: the cores {what}, so XLA cannot match"
            " them and aborts the run; every core must build the same collective",
            site,
            steps=[step],
            cores=sorted(last),
        )
    dynamic = [e for e in shape_op_sites(outcome.events) if len(e["shapes"]) > 1]
    if dynamic:
        entry = dynamic[0]
        return ctx.cause(
            "compile_stability",
            "diverged_replicas",
            "fail",
            f"replica graphs diverged at step {step}: a data-dependent shape here gives each core"
            " a different graph around the gradient all-reduce, so XLA aborts the run",
            entry["site"],
            steps=[step],
            cores=sorted(entry["cores"]),
        )
    return ctx.cause(
        "compile_stability",
        "diverged_replicas",
        "fail",
        f"replica graphs diverged at step {step}: the cores built different graphs for the same"
        " collective and XLA aborted the run (rank-dependent code in the step?)",
        steps=[step],
    )


def _at(ctx: Context, site: dict[str, Any] | None) -> str:
    location = ctx.location(site)
    return f" at {location}" if location else ""


def _user_site_of(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((e["site"] for e in events if e["site"].get("user")), None)


def _hung(ctx: Context, outcome: RunOutcome, rows: list[StepRow]) -> Cause:
    """Where the cores stopped. Two sources of stacks: the snapshot a core takes of the other
    replica threads when it gives up waiting at a barrier (in-process, knows which thread is
    which core), and the dump every thread writes on the watchdog's SIGUSR1."""
    starved = out_of_data(outcome.events)
    if starved is not None:
        return _out_of_data(ctx, outcome, starved)
    step = _step_in_progress(rows)
    waiting = [e for e in outcome.all("replica_error") if e.get("out_of_step")]
    waited = sorted({e["rank"] for e in waiting if e.get("rank") is not None})
    places = sorted({e["waited_at"] for e in waiting if e.get("waited_at")})
    stuck = [rank for rank in range(ctx.cores) if rank not in waited] if waited else []
    seen = [s for e in waiting for s in e.get("elsewhere", []) if s["rank"] in stuck]
    dumped = _user_frames_in_stacks(ctx, outcome.log)
    if seen:
        site = seen[0]["site"]
        stuck = sorted({s["rank"] for s in seen if s["site"] == site})
    elif dumped:
        site = dumped[0][0]
    else:
        # A core that gave up at a barrier from inside the user's code names the line itself.
        site = next((e["site"] for e in waiting if (e.get("site") or {}).get("user")), None)

    parts = [f"the cores stopped making progress at step {step}"]
    if stuck and waited:
        blocked = f" (blocked at this line in {site['function']}())" if site else ""
        parts.append(
            f"{_cores(stuck)} never finished it{blocked} while {_cores(waited)} waited at"
            f" {' / '.join(places) or 'a barrier'}"
        )
    elif dumped:
        by_core = _cores_in_stacks(ctx, outcome)
        if by_core:
            parts.append(
                "; ".join(
                    f"{_cores(ranks)} {'was' if len(ranks) == 1 else 'were'} at {where}"
                    for where, ranks in by_core.items()
                )
            )
        else:
            count = dumped[0][1]
            verb = "was" if count == 1 else "were"
            parts.append(f"{plural(count, 'thread')} {verb} blocked at this line")
    parts.append(outcome.detail)
    if site is None:
        parts.append(
            "a core that syncs, logs with sync_dist or runs a collective only on some ranks"
            " makes the others wait"
        )
    return ctx.cause(
        "run", "hung", "fail", "; ".join(parts), site, steps=[step], cores=stuck or waited
    )


_STAGE_WORDS = {
    "train": ("epoch", "gradient all-reduce of that step"),
    "validate": (
        "validation run",
        "next collective (a sync_dist log, the end-of-validation barrier)",
    ),
    "test": ("test run", "next collective (a sync_dist log, the end-of-test barrier)"),
}


def _out_of_data(ctx: Context, outcome: RunOutcome, event: dict[str, Any]) -> Cause:
    """A core's loader ended while another core got one more batch (cores.py): what hangs a
    TPU job, caught at the fetch that shows it, before the cores enter the collective."""
    data = event["out_of_data"]
    stage = data.get("stage", "train")
    short = {int(k): v for k, v in data.get("short", {}).items()}
    longer = {int(k): v for k, v in data.get("longer", {}).items()}
    run, collective = _STAGE_WORDS.get(stage, (f"{stage} run", "next collective"))
    counts = sorted(set(short.values()))
    more = max(longer.values()) if longer else (max(counts) + 1 if counts else 1)
    loader = loader_site(outcome.events, stage)
    message = (
        f"a core ran out of data: in {run} {data.get('epoch', 0)}, {_cores(sorted(short))}"
        f" had no batch after {'/'.join(map(str, counts))} while {_cores(sorted(longer))}"
        f" got batch {more}; on a TPU, {_cores(sorted(longer))} wait in the {collective}"
        f" for {_cores(sorted(short))}, which left the {run}, and the job hangs. Every core"
        " needs the same number of batches: let Lightning shard a map-style dataset"
        " (its DistributedSampler evens the shards out), or make an IterableDataset yield"
        " the same number of samples on every rank (drop the remainder)"
    )
    return ctx.cause(
        "run",
        "out_of_data",
        "fail",
        message,
        loader,
        explain=False,
        cores=sorted(set(short) | set(longer)),
    )


def _cores(ranks: list[int]) -> str:
    return ("core " if len(ranks) == 1 else "cores ") + ", ".join(map(str, ranks))


def _cores_in_stacks(ctx: Context, outcome: RunOutcome) -> dict[str, list[int]]:
    """Where each core's replica thread was in the stacks dumped on the watchdog's SIGUSR1:
    its innermost user frame, else its innermost library frame that is not plumbing (the
    collective or the barrier it waits in). Cores grouped by place."""
    cores = {e["ident"]: e["rank"] for e in outcome.all("replica_thread")}
    places: dict[str, list[int]] = defaultdict(list)
    ident: int | None = None
    frames: list[tuple[str, int, str]] = []

    def flush() -> None:
        if ident in cores and frames:
            user = next((f for f in frames if ctx.user_code and ctx.user_code.is_user(f[0])), None)
            lib = next((f for f in frames if not is_plumbing(f[0])), frames[0])
            path, line, function = user or lib
            where = ctx.location({"path": path, "line": line, "function": function})
            places[f"{where} ({function})"].append(cores[ident])

    for line in [*outcome.log.splitlines(), ""]:
        header = re.match(r"^(?:Current thread|Thread) (0x[0-9a-f]+)", line)
        if header or not line.strip():
            flush()
            ident, frames = (int(header.group(1), 16), []) if header else (None, [])
            continue
        match = _FRAME.match(line)
        if match and ident is not None:
            frames.append((match["path"], int(match["line"]), match["function"]))
    return {where: sorted(ranks) for where, ranks in sorted(places.items(), key=lambda kv: kv[1])}


def _user_frames_in_stacks(ctx: Context, log: str) -> list[tuple[dict[str, Any], int]]:
    """Innermost user frame of each thread in faulthandler's dump, most common first."""
    counts: dict[tuple[str, int, str], int] = defaultdict(int)
    innermost: tuple[str, int, str] | None = None
    in_stack = False
    for line in log.splitlines():
        if line.startswith(("Thread 0x", "Current thread 0x")):
            in_stack, innermost = True, None
            continue
        match = _FRAME.match(line) if in_stack else None
        if match is None:
            if in_stack and not line.strip():
                in_stack = False
            continue
        # faulthandler prints the most recent call first: the first user frame is innermost.
        if innermost is None and ctx.user_code is not None and ctx.user_code.is_user(match["path"]):
            innermost = (match["path"], int(match["line"]), match["function"])
            counts[innermost] += 1
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    return [({"path": p, "line": ln, "function": f, "user": True}, n) for (p, ln, f), n in ranked]


def brief(text: str, limit: int = 240) -> str:
    """An exception message cut to its first sentences, for one line of a report."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text.rfind(". ", 0, limit)
    return text[: cut + 1] if cut > limit // 3 else text[: limit - 3].rstrip() + "..."


_RAISED_WHERE = {
    "loader": "Lightning raised it about the DataLoader built at this line",
    "hook": "Lightning raised it about this hook",
}


def _raised(ctx: Context, outcome: RunOutcome) -> Cause:
    """The exception is a failure, not a could-not-run: it raises on a TPU too."""
    error = root_errors(outcome.events)[0]
    stale = outcome.first("stale_optimizer")
    if error["type"] == "StaleOptimizerParameters" and stale is not None:
        site = stale.get("site") or next(
            (
                e["site"]
                for e in outcome.all("optimizer_built")
                if e["optimizer"] == stale["optimizer"] and e["params"] == stale.get("params")
            ),
            None,
        )
        return ctx.cause(
            "run",
            "stale_optimizer",
            "fail",
            f"before the first step: {stale['message']}",
            site,
            codes=("TPU506",),
            cores=sorted({e["rank"] for e in outcome.all("stale_optimizer")}),
        )
    rank = error.get("rank")
    on = f" on core {rank}" if rank is not None else ""
    legacy = removed_hook(error["message"] or "")
    if legacy is not None:
        return ctx.cause(
            "run",
            "legacy_hook",
            "fail",
            f"Lightning 2 refuses the Lightning 1.x hook `{legacy}` defined here"
            f" ({error['type']}{on}): rename it `{LEGACY_HOOKS[legacy]}(self)`; it gets no"
            " outputs, so keep what the steps return yourself (append to a list in the step,"
            " read and clear it in the new hook)",
            hook_site(outcome.events, legacy),
            explain=False,
            cores=[rank] if rank is not None else [],
        )
    message = brief(error["message"]) if error["message"] else ""
    text = f"{error['type']}: {message}" if message else error["type"]
    site = error.get("site")
    where = _RAISED_WHERE.get(error.get("site_reason") or "")
    raised_in = ""
    if not (site or {}).get("user") or error.get("site_reason"):
        # Raised inside a library about the user's objects: the library line that raised,
        # and the hook that produced what it was handling.
        library = library_line(error.get("traceback"))
        if library is not None:
            raised_in = (
                f"; raised in `{library['function']}`"
                f" ({ctx.location(library)}) of {_package(library['path'])}"
            )
        hook = loader_hook(error.get("traceback")) if site is None else None
        found = hook_site(outcome.events, hook) if hook else None
        if found is not None:
            site = found
            where = f"Lightning raised it handling what `{hook}()` returned"
    return ctx.cause(
        "run",
        "exception",
        "fail",
        f"training raised {text}{on}" + (f" ({where})" if where else "") + raised_in,
        site,
        cores=[rank] if rank is not None else [],
    )


_PACKAGES = {
    "lightning": "Lightning",
    "pytorch_lightning": "Lightning",
    "torch_xla": "torch_xla",
    "torchmetrics": "torchmetrics",
    "torch": "torch",
}


def _package(path: str) -> str:
    norm = path.replace("\\", "/")
    return next((shown for name, shown in _PACKAGES.items() if f"/{name}/" in norm), "a library")

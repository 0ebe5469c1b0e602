"""A core out of data, from what each core's loader gave in each epoch (`loader_end`).

Under verify, the run's board catches the first fetch that shows it and ends the run then
(child/board.py). A run TPUReadiness recorded has no board (nothing waits on other cores): on
a TPU it hangs in the next collective and is killed, and this is where the record shows why.
Parent process only; standard library only.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from tpulint.runtime.judge.check_batches import loader_site
from tpulint.runtime.judge.context import Context
from tpulint.runtime.judge.report import Cause

_RUNS = {"train": "epoch", "validate": "validation run", "test": "test run"}


def uneven_loader_causes(ctx: Context, events: list[dict[str, Any]]) -> list[Cause]:
    """A failure for the first loader epoch whose cores got different numbers of batches."""
    if any(e["kind"] == "replica_error" and e.get("out_of_data") for e in events):
        return []  # already caught at the fetch
    counts: dict[tuple[str, int], dict[int, int]] = defaultdict(dict)
    for event in events:
        if event["kind"] == "loader_end" and event.get("rank") is not None:
            key = (str(event.get("stage", "train")), int(event.get("epoch", 0)))
            counts[key][int(event["rank"])] = int(event["batches"])
    for (stage, epoch), per_core in sorted(counts.items()):
        if len(set(per_core.values())) < 2:
            continue
        fewest = min(per_core.values())
        short = sorted(r for r, n in per_core.items() if n == fewest)
        longer = sorted(r for r, n in per_core.items() if n > fewest)
        run = _RUNS.get(stage, f"{stage} run")
        return [
            ctx.cause(
                "run",
                "out_of_data",
                "fail",
                f"a core ran out of data: in {run} {epoch}, {_cores(short)} had {fewest}"
                f" batch{'es' if fewest != 1 else ''} while {_cores(longer)} had"
                f" {'/'.join(str(per_core[r]) for r in longer)}; on a TPU the cores with more"
                " wait in their next collective for the ones that left, and the job hangs."
                " Every core needs the same number of batches: let Lightning shard a"
                " map-style dataset, or make an IterableDataset yield the same number of"
                " samples on every rank",
                loader_site(events, stage),
                explain=False,
                cores=sorted(per_core),
            )
        ]
    return []


def _cores(ranks: list[int]) -> str:
    return ("core " if len(ranks) == 1 else "cores ") + ", ".join(map(str, ranks))

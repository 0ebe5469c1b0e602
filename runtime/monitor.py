"""The verify parent follows the run while it trains, from the files every process of the run
writes (events, graph analysis, stacks), and acts on what it reads. Nothing here waits on a
thread primitive of a training process: the processes write, the parent reads and writes
back files (decisions), or signals the run's process group. Standard library only.

* **Epochs.** When every core has reached the end of the planned epochs (`epoch_end`), the
  parent decides, from every process's rows, whether the run holds a steady window yet
  (steady.py) and writes the decision every core waits for: one more epoch, or stop.
* **The end.** When every core has written `rank_done`, the run is over: the parent ends it
  (nothing of Lightning's teardown is worth waiting for). A core that raised ends it too,
  after a short grace for the others to record their own errors.
* **Budgets follow what is observed.** `--timeout` counts twice: until the first training
  step is recorded (loading, setup, the first compiles), then again from there. When no core
  has recorded anything for a while (`stall`: the larger of --barrier-timeout and 3 times the
  slowest step seen), the parent asks every process for its stacks: cores waiting on others
  that are elsewhere is a hang, at their line; cores compiling or computing are not.
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tpulint.runtime.events import EventLog, EventTail
from tpulint.runtime.frames import CodeFilter
from tpulint.runtime.judge import stacks as stack_dumps
from tpulint.runtime.spec import RunSpec
from tpulint.runtime.steady import MAX_EXTRA_EPOCHS, steady_window, window_is_steady

FAILURE_GRACE = 6.0  # seconds the other cores get to record their errors after one failed


@dataclass
class Ending:
    """Why the parent ended the run (None in Monitor.ending: it has not)."""

    status: str  # finished | hung | too_slow | compiling | failed | error
    detail: str
    data: dict[str, Any] = field(default_factory=dict)


def _graph_files(run_dir: Path) -> list[Path]:
    return sorted(run_dir.glob("xla-graphs-*.txt"))


def compiling(run_dir: Path) -> tuple[float, dict[str, Any] | None] | None:
    """(seconds, frames entry) of a compilation in progress in some process, or None."""
    from tpulint.runtime.graph_files import unfinished_compile

    found = None
    for path in _graph_files(run_dir):
        entry = unfinished_compile(path)
        if entry is not None:
            seconds = max(0.0, time.time() - path.stat().st_mtime)
            if found is None or seconds > found[0]:
                found = (seconds, entry)
    return found


class Monitor:
    def __init__(self, spec: RunSpec, timeout: float, started: float) -> None:
        self.spec = spec
        self.run_dir = Path(spec.run_dir)
        self.timeout = timeout
        self.started = started
        self.tail = EventTail(self.run_dir)
        self.log = EventLog(self.run_dir)
        self.events: list[dict[str, Any]] = []
        self.world: int | None = None
        self.trained = False  # train_start seen
        self.first_step: float | None = None  # when the first training row arrived
        self.last_progress = started
        self.slowest = 0.0
        self.done: set[int] = set()
        self.epoch_ends: dict[int, set[int]] = defaultdict(set)
        self.decided: set[int] = set()
        self.failed_at: float | None = None
        self.next_stall_check: float | None = None
        self.stall_checks = 0
        self.ending: Ending | None = None
        # What the extension decision needs (as steady.py defines the window).
        self._epoch_steps: dict[int, set[int]] = defaultdict(set)
        self._new_graphs: dict[int, int] = defaultdict(int)
        self._seen: set[str] = set()
        self._sizes: dict[tuple[str, str, str], set[str]] = defaultdict(set)
        self._shapes_vary: set[str] = set()
        self._extra_epochs = 0
        self._roots: list[str] = []

    # --- reading ------------------------------------------------------------------------

    def poll(self, now: float) -> None:
        """Read what was written since the last poll and act on it."""
        for event in self.tail.take():
            self.events.append(event)
            self._note(event, now)
        self._decide_epochs(now)
        if self.world and len(self.done) >= self.world and self.ending is None:
            self.ending = Ending("finished", "training finished")
        if self.failed_at is not None and now - self.failed_at > FAILURE_GRACE:
            self.ending = self.ending or Ending("failed", "a core failed")

    def _note(self, event: dict[str, Any], now: float) -> None:
        kind = event["kind"]
        if kind == "target":
            self._roots = list(event.get("roots") or [])
        elif kind == "train_start":
            self.trained = True
            self.last_progress = max(self.last_progress, now)  # setup is not a stall
            self.world = int(event.get("world_size") or 1)
            self._seen |= {g["hash"] for g in event["graphs"].get("compiled", [])}
        elif kind in ("eval_start", "train_end"):
            self._seen |= {g["hash"] for g in event["graphs"].get("compiled", [])}
        elif kind in ("step", "eval_step"):
            self.last_progress = now
            # The compiles of warm-up and of a loop's first run are not the step's pace (and a
            # compilation in progress is never looked into anyway).
            if (kind == "step" and int(event["step"]) >= self.spec.warmup) or (
                kind == "eval_step" and event.get("run")
            ):
                self.slowest = max(self.slowest, float(event.get("seconds") or 0.0))
            if kind == "step" and self.first_step is None:
                self.first_step = now
            self._note_row(event)
        elif kind == "epoch_end" and event.get("rank") is not None:
            self.epoch_ends[int(event["epoch"])].add(int(event["rank"]))
            self.last_progress = now
        elif kind == "rank_done" and event.get("rank") is not None:
            self.done.add(int(event["rank"]))
        elif kind == "replica_error" and self.failed_at is None:
            self.failed_at = now
        elif kind == "finished":
            self.ending = self.ending or Ending("finished", "training finished")

    def _note_row(self, event: dict[str, Any]) -> None:
        """Steps per epoch, new graphs per epoch (a validation run counts for the epoch it
        ends) and whether an op's output size varied: what the extension needs."""
        epoch = int(event["epoch"])
        stage = "train" if event["kind"] == "step" else event.get("stage", "validate")
        if event["kind"] == "step":
            self._epoch_steps[epoch].add(int(event["step"]))
        for bucket in (event.get("ranks") or {}).values():
            for op in bucket.get("shape_ops", []):
                key = (stage, str(op["site"]), op["kind"])
                self._sizes[key].update(shape.split("x")[0] for shape in op["shapes"])
                if len(self._sizes[key]) > 1:
                    self._shapes_vary.add(stage)
        new = {g["hash"] for g in event["graphs"].get("compiled", [])} - self._seen
        self._seen |= new
        past_warmup = event["kind"] != "step" or int(event["step"]) >= self.spec.warmup
        first_run = event["kind"] == "eval_step" and event.get("run") == 0
        if new and past_warmup and not first_run and stage not in self._shapes_vary:
            self._new_graphs[epoch] += len(new)

    # --- epochs -------------------------------------------------------------------------

    def _decide_epochs(self, now: float) -> None:
        for epoch, ranks in sorted(self.epoch_ends.items()):
            if epoch in self.decided or not self.world or len(ranks) < self.world:
                continue
            self.decided.add(epoch)
            extend = self._extension(epoch, now)
            path = self.run_dir / "decisions" / f"epoch-{epoch}.json"
            temporary = path.with_suffix(".tmp")
            temporary.write_text(json.dumps({"extend": extend}), encoding="utf-8")
            os.replace(temporary, path)

    def _extension(self, epoch: int, now: float) -> bool:
        if "train" in self._shapes_vary:
            return False  # fails on its data-dependent shapes however long it trains
        if not self._epoch_steps.get(epoch):
            return False  # no batch in the epoch: more epochs bring no evidence
        firsts = {e: min(steps) for e, steps in self._epoch_steps.items()}
        after_warmup = {
            e: max(0, len(steps) - max(0, self.spec.warmup - firsts[e]))
            for e, steps in self._epoch_steps.items()
        }
        if window_is_steady(after_warmup, self._new_graphs):
            return False
        elapsed = now - (self.first_step or self.started)
        if self._extra_epochs >= self.spec.max_extra_epochs or elapsed > self.timeout / 2:
            because = "epochs" if self._extra_epochs >= MAX_EXTRA_EPOCHS else "time"
            self.log.write(
                "extension_refused", epoch=epoch, seconds=round(elapsed, 1), because=because
            )
            return False
        self._extra_epochs += 1
        window = steady_window(after_warmup)
        reason = "too_short" if window is None else "new_graphs"
        self.log.write("extend", epoch=epoch + 1, reason=reason, window=window)
        return True

    # --- time ---------------------------------------------------------------------------

    def deadline(self) -> float:
        """--timeout counts until the first step is recorded, then again from there."""
        return (self.first_step or self.started) + self.timeout

    def stall_limit(self) -> float:
        return max(self.spec.barrier_timeout, 3 * self.slowest)

    def stalled(self, now: float) -> bool:
        if not self.trained or self.ending is not None:
            return False
        due = self.next_stall_check or (self.last_progress + self.stall_limit())
        return now >= due and now - self.last_progress >= self.stall_limit()

    def code(self) -> CodeFilter:
        return CodeFilter(self._roots or ([self.spec.cwd] if self.spec.cwd else []))

    def compiling_now(self, now: float) -> bool:
        """A compilation in progress in some process: the stall is not looked into (nor are
        the processes disturbed for their stacks) before the next check."""
        if compiling(self.run_dir) is None:
            return False
        self.next_stall_check = now + self.stall_limit()
        return True

    def confirm_delay(self) -> float:
        """How long a suspected hang is watched before it is one."""
        return max(3.0, min(self.stall_limit() / 2, 30.0))

    def judge_stacks(self, now: float, earlier: stack_dumps.Snapshot | None = None):
        """After every process dumped its stacks: a hang, or carry on. A hang needs cores
        waiting for others that are elsewhere, twice: `earlier` is the first look; the
        second, `confirm_delay()` later with no core's progress in between, must find the
        cores elsewhere at the same frames (a core slow at its line moves on)."""
        self.stall_checks += 1
        self.next_stall_check = now + self.stall_limit()
        if compiling(self.run_dir) is not None:
            return None  # compiling is progress, however long it takes
        shot = stack_dumps.snapshot(self.run_dir, self.events, self.code())
        waiting, elsewhere = shot.waiting, shot.elsewhere
        self.log.write(
            "stall_check",
            seconds=round(now - self.last_progress, 1),
            waiting=waiting,
            elsewhere=elsewhere,
            confirming=earlier is not None,
        )
        if waiting and elsewhere:
            if earlier is None:
                return shot  # a suspect: look again, later
            unmoved = all(
                rank in earlier.cores and earlier.cores[rank].frames == shot.cores[rank].frames
                for rank in elsewhere
            )
            if not unmoved:
                return None
            return Ending(
                "hung",
                f"no core made progress for {now - self.last_progress:.0f}s",
                {"waiting": waiting, "elsewhere": elsewhere},
            )
        if waiting and not elsewhere:
            different = different_collectives(self.events)
            if different:  # every core waits, each in its own collective: they never meet
                return Ending("diverged", different)
        return None

    def at_deadline(self, now: float) -> Ending:
        """--timeout ran out: why the run is not over."""
        if not self.trained:
            in_progress = compiling(self.run_dir)
            if in_progress is not None:
                return Ending(
                    "compiling",
                    f"still compiling ({in_progress[0]:.0f}s) when --timeout"
                    f" ({self.timeout:.0f}s) ran out before training started",
                    {"seconds": in_progress[0], "entry": in_progress[1]},
                )
            return Ending(
                "error",
                f"timed out after {self.timeout:.0f}s before training started (loading the"
                " module and its data took too long?); raise --timeout",
            )
        quiet = now - self.last_progress
        rows = [e for e in self.events if e["kind"] == "step"]
        if self.first_step is None:
            in_progress = compiling(self.run_dir)
            if in_progress is not None:
                return Ending(
                    "compiling",
                    f"still compiling ({in_progress[0]:.0f}s): the first training step's"
                    f" graphs were not compiled when --timeout ({self.timeout:.0f}s) ran out;"
                    " raise --timeout",
                    {"seconds": in_progress[0], "entry": in_progress[1]},
                )
        if rows and quiet < self.stall_limit():
            per_step = _seconds_per_step(rows)
            return Ending(
                "too_slow",
                f"too slow to judge here: {per_step:.1f} s per step; raise --timeout or use a"
                " smaller configuration",
                {"seconds_per_step": per_step},
            )
        different = different_collectives(self.events)
        if different:
            return Ending("diverged", different)
        return Ending(
            "hung",
            f"no progress: no core recorded a step for {quiet:.0f}s"
            + (" (the first step never finished)" if not rows else ""),
            {"quiet": quiet},
        )


def different_collectives(events: list[dict[str, Any]]) -> str | None:
    """When the cores' last collectives differ (which collective, from where, with which
    shapes; each core records every change), what a TPU does then: the cores wait for each
    other in collectives that never match."""
    last: dict[int, tuple[Any, ...]] = {}
    for event in events:
        if event["kind"] == "collective" and event.get("rank") is not None:
            site = event.get("site") or {}
            last[int(event["rank"])] = (
                event.get("name"),
                site.get("path"),
                site.get("line"),
                str(event.get("shapes")),
            )
    if len(set(last.values())) < 2:
        return None
    names = sorted({str(key[0]) for key in last.values()})
    return "the cores waited in different collectives (" + ", ".join(names) + ")"


def _seconds_per_step(rows: list[dict[str, Any]]) -> float:
    """The typical training step's wall time (the median of the cores' rows after the first,
    which compiles)."""
    seconds = sorted(float(r.get("seconds") or 0.0) for r in rows if int(r["step"]) > 0)
    if not seconds:
        seconds = sorted(float(r.get("seconds") or 0.0) for r in rows)
    return seconds[len(seconds) // 2] if seconds else 0.0

"""Run the child, follow it (monitor.py) and say how it ended. Standard library only.

How a run can end, and what it means:

    finished   training completed; the event log has the whole run
    error      the child could not run the target (a VerifyError: bad target, ...), or
               --timeout ran out before training started
    raised     the user's training code raised; the core that raised is in the log
    diverged   the cores entered different collectives: XLA aborted one ("rendezvous.cc ...
               Termination timeout", cores as threads) or the emulated processes' collectives
               did not match (bridge.py)
    hung       a core ran out of data while the others got another batch (on a TPU they wait
               for it forever), or cores waited for others that made no progress; the stacks
               each process dumped on SIGUSR1 say where
    too_slow   the cores kept stepping but --timeout ran out: what was recorded is judged,
               the rest is not
    compiling  --timeout ran out while XLA was still compiling the first step's graphs
    crashed    the child died some other way (a signal, an internal error)
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tpulint.runtime.environment import PARENT_FD_VARIABLE, Backend, child_environment
from tpulint.runtime.events import read_events
from tpulint.runtime.judge import stacks as stack_dumps
from tpulint.runtime.monitor import Ending, Monitor
from tpulint.runtime.spec import EXIT_COULD_NOT_RUN, EXIT_FINISHED, RunSpec

_RENDEZVOUS_ABORT = re.compile(r"rendezvous\.cc.*Termination timeout for `?([^`]*?)RendezvousKey")
_STACK_DUMP_GRACE = 8.0  # at most, for faulthandler to write every thread's stack
_POLL = 0.25  # seconds between two looks at the run


@dataclass
class RunOutcome:
    status: str  # finished | error | raised | diverged | hung | crashed
    detail: str  # one line: why it ended so
    returncode: int | None
    events: list[dict[str, Any]]
    log: str  # the child's stdout and stderr (Lightning's banner, XLA's messages)
    seconds: float
    timed_out: bool = False  # the parent ended the run (see `ending`)
    ending: Ending | None = None

    def first(self, kind: str) -> dict[str, Any] | None:
        return next((e for e in self.events if e["kind"] == kind), None)

    def all(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["kind"] == kind]


def run_child(spec: RunSpec, backend: Backend, timeout: float) -> RunOutcome:
    """Start the child for `spec`, follow it within `timeout` (monitor.py), classify the end."""
    run_dir = Path(spec.run_dir)
    spec_path = run_dir / "spec.json"
    spec.save(spec_path)
    log_path = run_dir / "child.log"
    start = time.monotonic()
    # The child's watcher reads the other end: when this process dies, however it dies, the
    # kernel closes this end and the watcher kills the run's process group
    # (child/lifetime.py). The write end is not inherited by any child process.
    watch_read, watch_write = os.pipe()
    env = child_environment(backend, spec.cores, layout=spec.layout)
    env[PARENT_FD_VARIABLE] = str(watch_read)
    monitor = Monitor(spec, timeout, start)
    ending: Ending | None = None
    with open(log_path, "wb") as log_file:
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", "tpulint.runtime.child", str(spec_path)],
                cwd=spec.cwd or None,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                pass_fds=(watch_read,),
                # Its own process group: the parent can signal the child and every process
                # forked from it (the replica processes, DataLoader workers), and nothing else.
                start_new_session=True,
            )
        except BaseException:
            os.close(watch_write)
            raise
        finally:
            os.close(watch_read)
        try:
            ending = _follow(process, monitor, run_dir)
        except BaseException:
            _signal_group(process.pid, signal.SIGKILL)
            process.wait()
            raise
        finally:
            # Whatever ended the child, leave no replica or helper process of this run behind.
            _signal_group(process.pid, signal.SIGKILL)
            process.wait()
            _wait_until_gone(process.pid)
            os.close(watch_write)
    seconds = time.monotonic() - start
    log = log_path.read_text(encoding="utf-8", errors="replace")
    events = read_events(run_dir)
    status, detail = classify(process.returncode, events, log, ending, timeout)
    outcome = RunOutcome(
        status, detail, process.returncode, events, log, seconds, ending is not None
    )
    outcome.ending = ending
    return outcome


def _follow(process: subprocess.Popen[bytes], monitor: Monitor, run_dir: Path) -> Ending | None:
    """Until the child exits or the monitor ends the run."""
    while True:
        try:
            process.wait(timeout=_POLL)
            monitor.poll(time.monotonic())
            return monitor.ending
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        monitor.poll(now)
        if monitor.ending is not None:
            return monitor.ending
        if monitor.stalled(now):
            if monitor.compiling_now(now):
                continue  # compiling is progress, however long it takes
            ending = _look_at_the_stacks(process, monitor, run_dir)
            if ending is not None:
                return ending
        if now >= monitor.deadline():
            _dump_stacks(process.pid, run_dir)
            monitor.poll(time.monotonic())
            return monitor.at_deadline(time.monotonic())


def _look_at_the_stacks(
    process: subprocess.Popen[bytes], monitor: Monitor, run_dir: Path
) -> Ending | None:
    """Twice, `monitor.confirm_delay()` apart: cores elsewhere at the same frames both times,
    with no progress in between, while others wait for them, is a hang."""
    _dump_stacks(process.pid, run_dir)
    monitor.poll(time.monotonic())
    first = monitor.judge_stacks(time.monotonic())
    if not isinstance(first, stack_dumps.Snapshot):
        return first
    progress = monitor.last_progress
    deadline = time.monotonic() + monitor.confirm_delay()
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return None
        time.sleep(_POLL)
        monitor.poll(time.monotonic())
        if monitor.last_progress != progress or monitor.ending is not None:
            return monitor.ending  # progress: not a hang
    _dump_stacks(process.pid, run_dir)
    monitor.poll(time.monotonic())
    if monitor.last_progress != progress:
        return None
    second = monitor.judge_stacks(time.monotonic(), earlier=first)
    return second if isinstance(second, Ending) else None


def _dump_stacks(pgid: int, run_dir: Path) -> None:
    """Every thread of every process of the run writes its stack (child/stacks.py)."""
    _signal_group(pgid, signal.SIGUSR1)
    _wait_for_quiet(run_dir, _STACK_DUMP_GRACE)


def _wait_for_quiet(run_dir: Path, limit: float) -> None:
    """Until the stack files have stopped growing for a moment (the dumps are written), at
    most `limit` seconds: a loaded machine can take a while to dump a hundred threads."""
    deadline = time.monotonic() + limit
    size, stable_since = -1, time.monotonic()
    time.sleep(0.2)
    while time.monotonic() < deadline:
        current = sum(p.stat().st_size for p in run_dir.glob("stacks-*.txt") if p.exists())
        if current != size:
            size, stable_since = current, time.monotonic()
        elif time.monotonic() - stable_since >= 0.5:
            return
        time.sleep(0.1)


def _group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of a process group, read from /proc."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


def _wait_until_gone(pgid: int, limit: float = 15.0) -> None:
    """SIGKILL is asynchronous: a process tearing down gigabytes of address space, or in an
    uninterruptible read, lingers for a moment. Return once none of the group is left."""
    if not os.path.isdir("/proc"):
        return
    deadline = time.monotonic() + limit
    while _group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def root_errors(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Exceptions the cores raised (not a wait given up, not a core out of data, not cores
    whose collectives differ), root cause first: one raised in the user's code before one
    raised inside a library, then the earliest. A core's failure can set off errors in the
    others (a released wait, a torch internal assert)."""
    raised = [
        e
        for e in events
        if e["kind"] == "replica_error"
        and not e.get("out_of_step")
        and not e.get("out_of_data")
        and not e.get("diverged")
    ]
    return sorted(raised, key=lambda e: (not (e.get("site") or {}).get("user"), e.get("time", 0)))


def out_of_data(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The first report of a core that ran out of data while others got another batch."""
    return next((e for e in events if e["kind"] == "replica_error" and e.get("out_of_data")), None)


def diverged(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The first report of cores whose collectives did not match (emulated processes)."""
    return next((e for e in events if e["kind"] == "replica_error" and e.get("diverged")), None)


def classify(
    returncode: int | None,
    events: list[dict[str, Any]],
    log: str,
    ending: Ending | None,
    timeout: float,
) -> tuple[str, str]:
    kinds = {e["kind"] for e in events}
    error = next((e for e in events if e["kind"] == "error"), None)
    raised = root_errors(events)
    abort = _RENDEZVOUS_ABORT.search(log)
    starved = out_of_data(events)
    mismatch = diverged(events)

    if error is not None and returncode == EXIT_COULD_NOT_RUN:
        return "error", error["message"]
    if starved is not None:
        # What a TPU would do: the other cores wait for this one in their next collective.
        return "hung", starved["message"]
    if raised:
        # The root cause; released waits or aborts in the other cores follow from it.
        first = raised[0]
        return "raised", f"{first['type']}: {first['message']}" if first["message"] else first[
            "type"
        ]
    if mismatch is not None:
        return "diverged", f"the cores' collectives did not match ({mismatch['message']})"
    if abort is not None:
        what = abort.group(1).strip() or "collective"
        return "diverged", f"XLA aborted: the replicas never met in the same `{what}`"
    if ending is not None and ending.status != "failed":
        return ending.status, ending.detail
    if returncode == EXIT_FINISHED and "finished" in kinds:
        return "finished", "training finished"
    if returncode is not None and returncode < 0:
        name = signal.Signals(-returncode).name
        hint = " (out of memory?)" if -returncode == signal.SIGKILL else ""
        return "crashed", f"the child process was killed by {name}{hint}"
    fit_error = next((e for e in events if e["kind"] == "fit_error"), None)
    if fit_error is not None:
        first_line = (fit_error["message"] or "").strip().splitlines()[:1]
        return "crashed", ": ".join([fit_error["type"], *first_line])
    tail = [line for line in log.strip().splitlines() if line.strip()][-1:] or ["no output"]
    return "crashed", f"the child process exited with status {returncode}: {tail[0][:200]}"

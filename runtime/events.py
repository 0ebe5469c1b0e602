"""The record a run leaves: JSON lines, one file per core (rank) and one per process, each line
appended with a single write so that what happened before an XLA abort, a hang or a kill
survives it, and so that no two writers ever share a line. Standard library only (the parent
and `tpulint report` read what the training processes write).

    rank-00003.jsonl          what core 3 did: its step rows, loader epochs, shards, errors
    process-<host>-<pid>.jsonl what a process did outside any core (start, target, trainer)

Every line carries `kind`, `pid`, `host` and `time`; a core's lines carry its `rank` too.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

EVENTS_GLOB = "*.jsonl"


def host_index() -> int:
    """This host's index in a multi-host slice (0 on a single host). From the environment the
    TPU runtime sets (CLOUD_TPU_TASK_ID is per process; TPU_WORKER_ID per host); no import."""
    for name in ("TPU_WORKER_ID", "WORKER_ID"):
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 0


class EventLog:
    """Append-only, thread-safe, fork-aware event writer.

    `rank_of` says which core the calling thread runs (None outside any core): its events go
    to that core's file. Each process opens its own descriptors the first time it writes
    (Lightning forks the replica processes from the one that built this log)."""

    def __init__(self, directory: str | Path, rank_of: Callable[[], int | None] | None = None):
        self.directory = Path(directory)
        self.rank_of = rank_of
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._fds: dict[str, int] = {}
        os.register_at_fork(after_in_child=self._after_fork)

    def _after_fork(self) -> None:
        # The lock may have been held by another thread at fork time; the descriptors are the
        # parent's (closing them here would not close the parent's).
        self._lock = threading.Lock()
        self._pid = None
        self._fds = {}

    def _name(self, rank: int | None) -> str:
        if rank is not None:
            return f"rank-{rank:05d}.jsonl"
        return f"process-{host_index()}-{os.getpid()}.jsonl"

    def write(self, kind: str, **data: Any) -> None:
        rank = data.get("rank") if "rank" in data else (self.rank_of() if self.rank_of else None)
        record = {"kind": kind, "pid": os.getpid(), "host": host_index(), "time": time.time()}
        record.update(data)
        if rank is not None and "rank" not in record:
            record["rank"] = rank
        line = (json.dumps(record, default=str) + "\n").encode("utf-8")
        name = self._name(rank if isinstance(rank, int) else None)
        with self._lock:
            if self._pid != os.getpid():
                self._pid, self._fds = os.getpid(), {}
            fd = self._fds.get(name)
            if fd is None:
                fd = os.open(self.directory / name, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                self._fds[name] = fd
            os.write(fd, line)  # one write per line: appends never interleave


def parse_lines(data: bytes) -> list[dict[str, Any]]:
    """The events in `data` (whole lines); a line cut short by a crash is skipped."""
    events = []
    for line in data.decode("utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict) and "kind" in event:
            events.append(event)
    return events


def read_events(directory: str | Path) -> list[dict[str, Any]]:
    """All events of a run, in time order."""
    events: list[dict[str, Any]] = []
    for path in sorted(Path(directory).glob(EVENTS_GLOB)):
        events += parse_lines(path.read_bytes())
    events.sort(key=lambda event: event.get("time", 0.0))
    return events


class EventTail:
    """Reads the events written since the last call, from every file of a run directory (the
    verify parent follows a run while it trains). Only whole lines are taken."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._offsets: dict[Path, int] = {}

    def take(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for path in sorted(self.directory.glob(EVENTS_GLOB)):
            offset = self._offsets.get(path, 0)
            try:
                with open(path, "rb") as handle:
                    handle.seek(offset)
                    data = handle.read()
            except OSError:
                continue
            end = data.rfind(b"\n")
            if end < 0:
                continue
            self._offsets[path] = offset + end + 1
            found += parse_lines(data[: end + 1])
        found.sort(key=lambda event: event.get("time", 0.0))
        return found

"""The record the child leaves for the parent: JSON lines, one file per process, flushed on
every write so that what happened before an XLA abort or a hang survives it.
Standard library only (the parent reads what the child writes).
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

EVENTS_GLOB = "events-*.jsonl"


class EventLog:
    """Append-only, thread-safe, fork-aware event writer.

    Lightning forks the replica process from the child, so each process reopens its own file
    (events-<pid>.jsonl) the first time it writes; appending to one shared file from several
    processes could interleave lines.
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._file: Any = None
        os.register_at_fork(after_in_child=self._after_fork)

    def _after_fork(self) -> None:
        # The lock may have been held by another thread at fork time; the handle is the parent's.
        self._lock = threading.Lock()
        self._pid = None
        self._file = None

    def write(self, kind: str, **data: Any) -> None:
        record = {"kind": kind, "pid": os.getpid(), "time": time.time(), **data}
        line = json.dumps(record, default=str) + "\n"
        with self._lock:
            if self._pid != os.getpid():
                self._pid = os.getpid()
                path = self.directory / f"events-{self._pid}.jsonl"
                self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open
            self._file.write(line)
            self._file.flush()


def read_events(directory: str | Path) -> list[dict[str, Any]]:
    """All events of a run, in time order. A line cut short by a crash is skipped."""
    events: list[dict[str, Any]] = []
    for path in sorted(Path(directory).glob(EVENTS_GLOB)):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    events.sort(key=lambda event: event.get("time", 0.0))
    return events

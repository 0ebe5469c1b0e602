"""Every process of a run dumps the stack of each of its threads to a file of its own when the
verify parent sends SIGUSR1: that is how the parent sees where each core stopped (a line of
the user's, a collective, the emulation's wait) without stopping anything, and without the
dumps of 4 to 8 processes interleaving on one stderr. A process that dies of a fatal signal
(SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL) writes "Fatal Python error" and every thread's
stack to the same file before it dies (judge/crash.py reads it: the file names the process,
and the process's `replica_thread` events map its threads to cores). Standard library only.

    stacks-<host>-<pid>.txt   faulthandler's dumps, appended at each request or fatal error
"""

from __future__ import annotations

import faulthandler
import os
import signal
from pathlib import Path
from typing import IO

from tpulint.runtime.events import host_index

STACKS_PREFIX = "stacks-"
_handle: IO[str] | None = None
_directory: Path | None = None


def stacks_file(directory: str | Path, pid: int | None = None) -> Path:
    return Path(directory) / f"{STACKS_PREFIX}{host_index()}-{pid or os.getpid()}.txt"


def _register() -> None:
    global _handle
    assert _directory is not None
    if _handle is not None:
        _handle.close()
    # Kept open for the process's life: faulthandler writes to its descriptor from a signal.
    _handle = open(stacks_file(_directory), "a", encoding="utf-8")  # noqa: SIM115
    faulthandler.register(signal.SIGUSR1, file=_handle, all_threads=True, chain=False)
    faulthandler.enable(file=_handle, all_threads=True)


def install(directory: str | Path) -> None:
    """Register the dump for this process and every process forked from it."""
    global _directory
    _directory = Path(directory)
    _register()
    os.register_at_fork(after_in_child=_register)

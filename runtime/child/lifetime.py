"""No process of a run outlives the `tpulint verify` that started it.

The parent starts the child in a process group of its own and kills that group when the run
ends, however it ends. If the parent itself dies (killed, or its terminal closed), a watcher
does it instead: the parent holds the write end of a pipe whose read end the watcher blocks
on, and the kernel closes the write end when the parent process dies, whichever of its
threads started the run. The watcher is a small process forked before torch is imported, so
it runs even when every thread of the training process is stuck (in a collective, holding
the GIL).

What this replaces: a kill-on-parent-death signal (prctl PR_SET_PDEATHSIG) registered in every
forked process. Linux sends that signal when the *thread* that forked the process exits, and
MpDeviceLoader iterates each epoch's DataLoader in a new thread, so `persistent_workers=True`
workers were killed at the end of the first epoch and the second epoch waited for them
forever. Child process only; standard library only.
"""

from __future__ import annotations

import contextlib
import os
import signal

from tpulint.runtime.environment import PARENT_FD_VARIABLE


def watch_parent(fd: int) -> int | None:
    """Fork the watcher for the pipe `fd` (inherited from the parent) and close `fd` here, so
    that no other process of the run holds it. Returns the watcher's pid (None if it could not
    be started: the parent's own group kill still applies)."""
    try:
        pid = os.fork()
    except OSError:
        os.close(fd)
        return None
    if pid == 0:  # the watcher
        # The parent's SIGUSR1 asks the run's threads for their stacks; not this process.
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        try:
            _wait_for_eof(fd)
        finally:
            # The parent is gone (or closed the pipe to end the run): take the whole group,
            # this watcher included, with it.
            with contextlib.suppress(OSError):
                os.killpg(os.getpgrp(), signal.SIGKILL)
            os._exit(0)
    os.close(fd)
    return pid


def _wait_for_eof(fd: int) -> None:
    while True:
        try:
            if not os.read(fd, 1):
                return
        except InterruptedError:
            continue
        except OSError:
            return


def parent_fd_from_environment() -> int | None:
    value = os.environ.pop(PARENT_FD_VARIABLE, "")
    return int(value) if value.isdigit() else None

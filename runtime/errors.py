"""The one exception type verify raises for "could not run" (exit status 2)."""

from __future__ import annotations


class VerifyError(Exception):
    """Verify could not run: a bad target, a missing dependency, an unsupported setup.

    `message` is one line for the user; `detail` (a traceback, a log tail) is shown only with
    `-v`, because the user's own traceback is noise when the message already says what is wrong.
    """

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class ReplicasOutOfStep(RuntimeError):
    """A replica waited longer than the barrier timeout for the others (at `where`): some
    replica is stuck, or the replicas do different numbers of steps or syncs."""

    def __init__(
        self, rank: int | None, where: str, seconds: float, released: bool = False
    ) -> None:
        if released:  # the barrier was broken on purpose: another core had failed
            message = f"core {rank} stopped waiting at {where}: another core failed"
        else:
            message = f"core {rank} waited {seconds:.0f}s at {where} for the other cores"
        super().__init__(message)
        self.rank = rank
        self.where = where
        self.released = released

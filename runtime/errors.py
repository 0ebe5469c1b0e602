"""The exception verify raises for "could not run" (exit status 2), and those it raises in a
replica on purpose, about the user's code (a verdict, never a bug of tpulint)."""

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


class VerdictError(RuntimeError):
    """Raised by verify in a replica to stop a run that can only fail: the judge reads the
    event written with it, and it is never reported as an internal error."""


class StaleOptimizerParameters(VerdictError):
    """An optimizer holds parameters the module no longer has after its move to the XLA
    device (child/optimizers.py): the run would train nothing."""


class ReplicasOutOfStep(VerdictError):
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


class CoreOutOfData(VerdictError):
    """In one epoch of a loader (`stage` is train, validate, ...), the cores in `short` got
    no further batch after the counts given, while the cores in `longer` got more: on a TPU
    the cores with more data wait in their next collective for a core that has left the
    epoch, and the job hangs."""

    def __init__(
        self, stage: str, epoch: int, short: dict[int, int], longer: dict[int, int]
    ) -> None:
        self.stage = stage
        self.epoch = epoch
        self.short = dict(short)
        self.longer = dict(longer)
        ran_out = ", ".join(
            f"core {rank} after {count} batch{'es' if count != 1 else ''}"
            for rank, count in sorted(self.short.items())
        )
        more = ", ".join(f"core {rank}" for rank in sorted(self.longer))
        batch = max(self.longer.values())
        where = "epoch" if stage == "train" else f"{_STAGE_RUNS.get(stage, stage)}"
        super().__init__(
            f"a core ran out of data in {where} {epoch} ({ran_out}) while {more} got batch {batch}"
        )

    def to_json(self) -> dict[str, object]:
        return {
            "stage": self.stage,
            "epoch": self.epoch,
            "short": {str(k): v for k, v in self.short.items()},
            "longer": {str(k): v for k, v in self.longer.items()},
        }


_STAGE_RUNS = {"validate": "validation run", "test": "test run", "sanity_check": "sanity check"}

"""Code that runs for a core sees that core, and a core that runs out of data is caught.

On a TPU VM each core's replica is its own process, so everything that process runs (the
dataset's `__iter__`, the sampler, `worker_init_fn`, collate, MpDeviceLoader's background
threads, DataLoader worker processes) sees that core's rank and device. Emulated cores are
threads of one process, and torch_xla's rank and default device are per thread: the threads
MpDeviceLoader starts to iterate the DataLoader would all see core 0, so an IterableDataset
that splits its stream by `xr.global_ordinal()` would give every core the same stream. The
loader threads therefore run as the core whose loader they serve (its default XLA device, so
`xr.global_ordinal()`, `torch_xla.device()` and Lightning's rank agree), and worker processes
forked from them inherit it.

A core whose loader ends while another core gets one more batch hangs a TPU job: the other
cores wait in the next gradient all-reduce for a core that has left the epoch. Each core
writes how many batches its loader gave in each epoch (`loader_end`), which the judge
compares; under verify, each core's fetches are also posted on the run's board (board.py),
which every process maps, and the first fetch or end that shows a mismatch raises
CoreOutOfData in that core (before it enters the collective), which ends the run with the
cores' batch counts. Child process only: imports torch_xla.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass
from typing import Any

from tpulint.runtime.child.board import Board
from tpulint.runtime.child.ledger import Ledger
from tpulint.runtime.errors import CoreOutOfData

_LOADER_THREAD_END = 30.0  # seconds, at most: the thread has closed its queue and is ending


@dataclass(frozen=True)
class _Core:
    rank: int
    device: Any
    stage: str  # train, validate, test, ...
    epoch: int  # how many times this core has iterated a loader of this stage before


def install(ledger: Ledger, board: Board | None = None, *, run_as_core: bool = True) -> None:
    """`run_as_core=False` (a user's own run, TPUReadiness): the loader threads are only
    tagged with their core for the record; their default device is left as it is."""
    from torch_xla.distributed import parallel_loader

    _wrap_parallel_loader(parallel_loader.ParallelLoader, ledger, run_as_core)
    _wrap_per_device_loader(parallel_loader.PerDeviceLoader, ledger, board)


def track_evaluation_stage(ledger: Ledger, package: Any) -> None:
    """Validation and test loops build their MpDeviceLoader before any of their callback
    hooks run, so the stage a loader serves is taken from the loop itself (of the Lightning
    package the module uses, a `Flavour`)."""
    _EvaluationLoop = package.module("loops.evaluation_loop")._EvaluationLoop
    original = _EvaluationLoop.run

    @functools.wraps(original)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        previous = ledger.stage()
        stage = getattr(getattr(self.trainer.state, "stage", None), "value", None)
        ledger.set_stage(str(stage or "validate"))
        try:
            return original(self, *args, **kwargs)
        finally:
            ledger.set_stage(previous)

    _EvaluationLoop.run = run


def _enter(core: _Core, ledger: Ledger, run_as_core: bool) -> None:
    """Make the calling (loader) thread run as `core`, or only record it as serving it."""
    if run_as_core:
        import torch_xla

        torch_xla._XLAC._xla_set_default_device(str(core.device))
    ledger.bind_loader(core.rank, core.stage)


def _wrap_parallel_loader(cls: type, ledger: Ledger, run_as_core: bool) -> None:
    original_init = cls.__init__
    original_loader_worker = cls._loader_worker
    original_worker = cls._worker

    @functools.wraps(original_init)
    def __init__(self: Any, loader: Any, devices: Any, *args: Any, **kwargs: Any) -> None:
        # Built in the replica's own thread, which knows its core.
        rank = ledger.rank()
        if rank is None:
            import torch_xla.runtime as xr

            rank = xr.global_ordinal()
        stage = ledger.stage()
        device = next(iter(devices)) if devices else None
        self._tpulint_core = _Core(rank, device, stage, ledger.next_loader_epoch(rank, stage))
        # A loader that refuses new attributes stays untagged (its shard is not recorded).
        with contextlib.suppress(AttributeError, ValueError):
            loader._tpulint_rank = rank
            loader._tpulint_stage = stage
        original_init(self, loader, devices, *args, **kwargs)

    @functools.wraps(original_loader_worker)
    def _loader_worker(self: Any, *args: Any, **kwargs: Any) -> Any:
        core = getattr(self, "_tpulint_core", None)
        try:
            if core is not None and core.device is not None:
                _enter(core, ledger, run_as_core)
            return original_loader_worker(self, *args, **kwargs)
        except BaseException as exc:
            # The thread dies and its core's queues are closed (torch_xla closes them in a
            # `finally`; here too, in case it never started): the core's epoch ends early,
            # silently. Kept for the core's next() (_loader_error).
            self._tpulint_loader_error = exc
            for dqueue in self._queues.values():
                dqueue.cpu_loader_queue.close_write()
            raise

    @functools.wraps(original_worker)
    def _worker(self: Any, *args: Any, **kwargs: Any) -> Any:
        core = getattr(self, "_tpulint_core", None)
        if core is not None and core.device is not None:
            _enter(core, ledger, run_as_core)
        return original_worker(self, *args, **kwargs)

    cls.__init__ = __init__
    cls._loader_worker = _loader_worker
    cls._worker = _worker


def _wrap_per_device_loader(cls: type, ledger: Ledger, board: Board | None) -> None:
    original_next = cls.next

    @functools.wraps(original_next)
    def next(self: Any) -> Any:
        core: _Core | None = getattr(self._loader, "_tpulint_core", None)
        if core is None:
            return original_next(self)
        index = getattr(self, "_tpulint_fetched", 0)
        try:
            item = original_next(self)
        except StopIteration:
            error = _loader_error(self._loader) if board is not None else None
            if error is not None:
                raise error from None
            ledger.events.write(
                "loader_end", rank=core.rank, stage=core.stage, epoch=core.epoch, batches=index
            )
            longer = board.ended(core.rank, core.stage, core.epoch, index) if board else {}
            if longer:
                raise CoreOutOfData(core.stage, core.epoch, {core.rank: index}, longer) from None
            raise
        self._tpulint_fetched = index + 1
        short = board.fetched(core.rank, core.stage, core.epoch, index) if board else {}
        if short:
            raise CoreOutOfData(core.stage, core.epoch, short, {core.rank: index + 1})
        return item

    cls.next = next


def _loader_error(parallel_loader: Any) -> BaseException | None:
    """The exception that ended a ParallelLoader's loader thread (the DataLoader's iterator,
    the dataset's `__getitem__`, collate), or None when its data simply ran out. torch_xla
    only prints it and ends that core's epoch, which on a TPU leaves the other cores waiting
    for it; under verify the core raises it instead, so the verdict names the exception and
    its line, not a core that ran out of data. The thread closes the queue just before the
    exception reaches the wrapper that keeps it: wait for the thread to end first."""
    threads = getattr(parallel_loader, "_threads", None) or []
    if threads:
        threads[0].join(timeout=_LOADER_THREAD_END)  # the loader thread is started first
    return getattr(parallel_loader, "_tpulint_loader_error", None)

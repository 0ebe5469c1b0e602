"""The Lightning callback that turns a training run into step rows.

Every replica has its own deep copy of the Trainer (Lightning's XLA launcher copies it per
thread); `__deepcopy__` returns the same recorder, so all replicas of a process share it.
torch_xla's counters are process-wide (they sum over the replica threads), so at the end of
each step the replicas meet at a barrier, the process leader (local rank 0) reads the counter
deltas and every replica's ledger bucket, writes one row, and a second barrier releases them.
Child process only: imports torch_xla and lightning.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from typing import Any

import torch
from lightning.pytorch import Callback
from tpulint.runtime.child.ledger import Ledger
from tpulint.runtime.child.tracing import OpTracer
from tpulint.runtime.errors import ReplicasOutOfStep
from tpulint.runtime.events import EventLog

# Counters that matter for the verdicts; every "aten::*" counter (an op torch_xla ran on the
# host, e.g. aten::nonzero for a boolean mask) is read too.
_COUNTERS = ("UncachedCompile", "CachedCompile")
_EXIT_AFTER_FAILURE = 70  # the replica process's status once a replica failed (EX_SOFTWARE)
_METRICS = ("TransferFromDeviceTime", "CompileTime")


# The recorder of this run. Lightning's XLA launcher pickles the Trainer to send it to the
# replica process, which is forked from this one, so unpickling finds the instance here.
_ACTIVE: StepRecorder | None = None


def _active_recorder() -> StepRecorder:
    if _ACTIVE is None:
        raise RuntimeError("no StepRecorder in this process")
    return _ACTIVE


def read_counters() -> dict[str, int]:
    import torch_xla.debug.metrics as met

    values = {name: int(met.counter_value(name) or 0) for name in _COUNTERS}
    for name in _METRICS:
        data = met.metric_data(name)
        values[name] = int(data[0]) if data else 0
    for name in met.counter_names():
        if name.startswith("aten::"):
            values[name] = int(met.counter_value(name) or 0)
    return values


def uncached_compiles() -> int:
    import torch_xla

    return int(torch_xla._XLAC._xla_counter_value("UncachedCompile") or 0)


def _delta(now: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in now.items() if v != before.get(k, 0)}


def _batch_shapes(batch: Any, limit: int = 8) -> list[list[int]]:
    shapes: list[list[int]] = []

    def visit(item: Any) -> None:
        if len(shapes) >= limit:
            return
        if isinstance(item, torch.Tensor):
            shapes.append(list(item.shape))
        elif isinstance(item, dict):
            for value in item.values():
                visit(value)
        elif isinstance(item, (list, tuple)):
            for value in item:
                visit(value)

    visit(batch)
    return shapes


class StepRecorder(Callback):
    def __init__(self, ledger: Ledger, log: EventLog, barrier_timeout: float) -> None:
        self.ledger = ledger
        self.events = log
        self.barrier_timeout = barrier_timeout
        self.on_abort: list[Any] = []  # more barriers to break when a replica fails
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._barrier: threading.Barrier | None = None
        self._local = threading.local()
        self._previous: dict[str, int] = {}
        self._last_time = 0.0
        self._steps = 0
        self._exit_timer: threading.Timer | None = None
        self._aborted = False
        global _ACTIVE
        _ACTIVE = self

    def __deepcopy__(self, memo: dict[int, Any]) -> StepRecorder:
        return self  # shared by the replicas' Trainer copies

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return _active_recorder, ()

    # --- per-process setup (after Lightning forked the replica process) -----------------

    def _process_barrier(self) -> threading.Barrier | None:
        with self._lock:
            if self._pid != os.getpid():
                import torch_xla.core.xla_model as xm

                self._pid = os.getpid()
                # Replica threads in this process: N on PJRT CPU, 1-2 per process on TPU.
                parties = len(xm.get_xla_supported_devices())
                self._barrier = (
                    threading.Barrier(parties, timeout=self.barrier_timeout)
                    if parties > 1
                    else None
                )
                self._previous = {}
                self._steps = 0
            return self._barrier

    def _meet(self, where: str) -> None:
        barrier = self._process_barrier()
        if barrier is None:
            return
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            raise ReplicasOutOfStep(
                self.ledger.rank(), where, self.barrier_timeout, released=self._aborted
            ) from None

    def abort(self) -> None:
        self._aborted = True
        if self._barrier is not None:
            self._barrier.abort()
        for other in self.on_abort:
            other()

    # --- hooks ------------------------------------------------------------------------

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self.ledger.bind(trainer.global_rank)
        self._process_barrier()

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self.ledger.bind(trainer.global_rank)
        # Entered here and left in on_train_end: the whole loop runs inside it, including
        # Lightning's own reads (logging, optimizer step), which it attributes to their lines.
        self._local.tracer = OpTracer(self.ledger, uncached_compiles)
        self._local.tracer.__enter__()
        self._meet("the start of training")
        if self._leads():
            self._previous = read_counters()
            self._last_time = time.perf_counter()
            self.events.write(
                "train_start",
                counters=self._previous,
                world_size=trainer.world_size,
                strategy=type(trainer.strategy).__name__,
                accelerator=type(trainer.accelerator).__name__,
                precision=str(trainer.precision),
            )
        self._meet("the start of training")

    def on_train_batch_start(
        self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int
    ) -> None:
        self.ledger.batch(_batch_shapes(batch))

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        self._meet(f"the end of step {self._steps}")
        if self._leads():
            now = read_counters()
            clock = time.perf_counter()
            ranks = {rank: self.ledger.take(rank) for rank in self.ledger.process_ranks()}
            self.events.write(
                "step",
                step=self._steps,
                epoch=trainer.current_epoch,
                batch_idx=batch_idx,
                seconds=round(clock - self._last_time, 4),
                counters=_delta(now, self._previous),
                ranks=ranks,
            )
            self._previous, self._last_time = now, clock
            self._steps += 1
        self._meet(f"the end of step {self._steps}")

    def _leads(self) -> bool:
        """The lowest core of this process reads the process's counters. (Not local_rank 0:
        on a multi-process TPU host the local ordinal counts across the host's processes.)"""
        ranks = self.ledger.process_ranks()
        return bool(ranks) and self.ledger.rank() == ranks[0]

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self._meet("the end of training")
        if self._leads():
            now = read_counters()
            self.events.write("train_end", counters=_delta(now, self._previous), steps=self._steps)
        tracer = getattr(self._local, "tracer", None)
        if tracer is not None:
            tracer.__exit__(None, None, None)
            self._local.tracer = None
        self._meet("the end of training")

    # --- failures ---------------------------------------------------------------------

    def _where_the_others_are(self) -> list[dict[str, Any]]:
        """The user line each other replica thread is at right now: when a replica gives up
        waiting, the one it waited for is usually still stuck there."""
        here = threading.get_ident()
        found = []
        for ident, frame in sys._current_frames().items():
            rank = self.ledger.threads.get(ident)
            if ident == here or rank is None:
                continue
            site = self.ledger.code.site_of(frame, fallback=False)
            if site is not None:
                found.append({"rank": rank, "site": site.to_json()})
        return found

    def replica_failed(self, exc: BaseException, *, end_process: bool = False) -> None:
        """A replica raised: record it first (the process may abort in a collective soon),
        then break the barriers so the other replicas stop waiting for it. With
        `end_process` (in the replica process Lightning forked), the process exits shortly
        after: once one replica has failed the run is over, and a replica stuck in user code
        would otherwise keep it alive until the watchdog."""
        site = self.ledger.code.site_of_traceback(exc.__traceback__)
        out_of_step = isinstance(exc, (ReplicasOutOfStep, threading.BrokenBarrierError))
        self.events.write(
            "replica_error",
            rank=self.ledger.rank(),
            type=type(exc).__name__,
            message=str(exc).strip().splitlines()[0] if str(exc).strip() else "",
            out_of_step=out_of_step,
            released=bool(getattr(exc, "released", False)),
            waited_at=getattr(exc, "where", None),
            elsewhere=self._where_the_others_are() if out_of_step else [],
            site=site.to_json() if site else None,
            traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
        )
        self.abort()
        if end_process:
            self._exit_soon()

    def _exit_soon(self, grace: float = 5.0) -> None:
        # The grace lets the other replicas, released by abort(), record their own errors.
        with self._lock:
            if self._exit_timer is not None:
                return
            self._exit_timer = threading.Timer(grace, os._exit, args=(_EXIT_AFTER_FAILURE,))
            self._exit_timer.daemon = True
            self._exit_timer.start()

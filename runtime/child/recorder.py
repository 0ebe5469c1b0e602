"""The recorder: each core turns its training steps (and validation and test batches) into rows
of its own, written to its own file; nothing waits for another core.

One recorder serves every core of a process (Lightning's XLA launcher deep-copies the Trainer
per replica thread; `__deepcopy__` returns the same recorder). At the end of each step a core
writes its row: its batch, host reads, data-dependent shapes, fallbacks and optimizer steps
(the ledger's bucket for that core), and, if it is the last of its process's cores to finish
that step, what the process's counters and graph file gained since the last read
(evidence.py). On a TPU it also samples, on a few steps, the device's step time
(`xm.wait_device_ops()`) and its memory (`xm.get_memory_info`).

`Recorder` is shared by verify (`StepRecorder`, below: it adds verify's own controls, the
epochs the verify parent adds and the end of the run) and by `TPUReadiness`, the callback
that records a user's own run (readiness.py), so the two cannot drift. Child process (or the
user's training processes) only: imports torch and torch_xla.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tpulint.runtime.child import batch_tensors
from tpulint.runtime.child.evidence import ProcessEvidence, empty_graphs
from tpulint.runtime.child.ledger import Ledger
from tpulint.runtime.child.tracing import OpTracer, fallback_name
from tpulint.runtime.errors import (
    CoreOutOfData,
    ReplicasDiverged,
    ReplicasOutOfStep,
    VerdictError,
)
from tpulint.runtime.events import EventLog
from tpulint.runtime.frames import is_tpulint_frame

# torch_xla counts `.item()` and friends under this aten name: a transfer, not a fallback.
_NOT_FALLBACKS = ("aten::_local_scalar_dense",)
_EXIT_AFTER_FAILURE = 70  # the replica process's status once a replica failed (EX_SOFTWARE)
# Steps after warm-up on which a TPU's device step time and memory are sampled.
HARDWARE_SAMPLES = 3

# Hooks a Lightning error message can be about, most specific first.
_HOOKS = (
    "training_step",
    "validation_step",
    "test_step",
    "train_dataloader",
    "val_dataloader",
    "test_dataloader",
    "configure_optimizers",
    "forward",
)

# Recorders of this process by token. Lightning's XLA launcher pickles the Trainer to send it
# to the replica processes, which are forked from this one: unpickling finds the instance.
_ACTIVE: dict[int, Recorder] = {}
_tokens = itertools.count()


def _active_recorder(token: int = -1) -> Recorder:
    if token in _ACTIVE:
        return _ACTIVE[token]
    if len(_ACTIVE) == 1:
        return next(iter(_ACTIVE.values()))
    raise RuntimeError("no tpulint recorder in this process")


def uncached_compiles() -> int:
    import torch_xla

    return int(torch_xla._XLAC._xla_counter_value("UncachedCompile") or 0)


def _raised_by_tpulint(exc: BaseException) -> bool:
    """The exception started in tpulint's own recorders (a bug of tpulint, not a verdict):
    its innermost frame is tpulint's and it is none of the exceptions tpulint raises on
    purpose. (An exception from a torch op the user called through the op tracer has the
    tracer as innermost Python frame, but the user's frame is on the stack too.)"""
    if isinstance(exc, (VerdictError, threading.BrokenBarrierError)):
        return False
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and is_tpulint_frame(tb.tb_frame.f_code.co_filename)


def local_cores(trainer: Any) -> int:
    """How many cores this process trains: the replica threads the XLA launcher started here
    (one per device the process holds), or 1 without a launcher (one device)."""
    if getattr(trainer.strategy, "launcher", None) is None or trainer.world_size <= 1:
        return 1
    import torch_xla.core.xla_model as xm

    return max(1, len(xm.get_xla_supported_devices()))


@dataclass
class _CoreState:
    """One core's own bookkeeping (the recorder is shared by the cores of a process)."""

    steps: int = 0
    last: float = field(default_factory=time.perf_counter)
    batch_started: float = 0.0
    eval_runs: dict[str, int] = field(default_factory=dict)


class Recorder:
    """The recording itself; the Lightning callbacks below and in readiness.py call it."""

    def __init__(
        self,
        ledger: Ledger,
        log: EventLog,
        evidence: ProcessEvidence,
        *,
        warmup: int = 2,
        hardware: bool = False,
    ) -> None:
        self.ledger = ledger
        self.events = log
        self.evidence = evidence
        self.warmup = warmup
        self.hardware = hardware  # sample device step time and memory (a TPU only)
        self._cores: dict[int | None, _CoreState] = {}
        self._local = threading.local()
        self._lock = threading.Lock()
        self._token = next(_tokens)
        _ACTIVE[self._token] = self

    def __deepcopy__(self, memo: dict[int, Any]) -> Recorder:
        return self  # shared by the replicas' Trainer copies

    def __reduce__(self) -> tuple[Any, tuple[int]]:
        return _active_recorder, (self._token,)

    def _core(self) -> _CoreState:
        rank = self.ledger.rank()
        with self._lock:
            state = self._cores.get(rank)
            if state is None:
                state = self._cores[rank] = _CoreState()
            return state

    # --- hooks ------------------------------------------------------------------------

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self.ledger.bind(trainer.global_rank)
        self.evidence.set_local_cores(local_cores(trainer))

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self.ledger.bind(trainer.global_rank)
        self.ledger.set_stage("train")
        self._start_tracing()
        state = self._core()
        state.steps, state.last = 0, time.perf_counter()
        evidence = self.evidence.arrive(("train_start",))
        self.events.write(
            "train_start",
            graphs=evidence["graphs"] if evidence else empty_graphs(),
            counters=evidence["counters"] if evidence else {},
            world_size=trainer.world_size,
            local_cores=local_cores(trainer),
            strategy=type(trainer.strategy).__name__,
            accelerator=type(trainer.accelerator).__name__,
            precision=str(trainer.precision),
            accumulate_grad_batches=trainer.accumulate_grad_batches,
            automatic_optimization=bool(pl_module.automatic_optimization),
            max_epochs=trainer.max_epochs,
            limit_val_batches=trainer.limit_val_batches,
            **_topology(),
        )

    def on_train_batch_start(
        self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int
    ) -> None:
        self.ledger.batch(batch_tensors.record(batch, self.events, "train"))
        state = self._core()
        if self.hardware and self._sampled(state.steps):
            import torch_xla.core.xla_model as xm

            with contextlib.suppress(Exception):
                xm.wait_device_ops()  # the previous steps' work is not this step's
        state.batch_started = time.perf_counter()

    def _sampled(self, step: int) -> bool:
        return self.warmup <= step < self.warmup + HARDWARE_SAMPLES

    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        self.ledger.optimizer_step()

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        state = self._core()
        step = state.steps
        extra = self._hardware_sample(step, state) if self.hardware else {}
        self._row(
            ("train", step),
            "step",
            step=step,
            epoch=trainer.current_epoch,
            batch_idx=batch_idx,
            **extra,
        )
        state.steps += 1

    def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
        self._eval_start(trainer, "validate")

    def on_test_start(self, trainer: Any, pl_module: Any) -> None:
        self.ledger.bind(trainer.global_rank)
        self._start_tracing()
        self._eval_start(trainer, "test")

    def _eval_start(self, trainer: Any, stage: str) -> None:
        state = self._core()
        run = state.eval_runs[stage] = state.eval_runs.get(stage, -1) + 1
        evidence = self.evidence.arrive((stage, "start", run))
        if evidence is not None and (evidence["graphs"]["compiled"] or evidence["counters"]):
            # Graphs compiled between the last row and this loop's first batch (its setup).
            self.events.write("eval_start", stage=stage, run=run, **evidence)
        state.last = time.perf_counter()

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        self._eval_end("validate")

    def _eval_end(self, stage: str) -> None:
        """What the process did after the loop's last batch (Lightning's end-of-run
        bookkeeping) belongs to that run, not to the next training step."""
        run = self._core().eval_runs.get(stage, 0)
        evidence = self.evidence.arrive((stage, "end", run))
        if evidence is not None and (evidence["graphs"]["compiled"] or evidence["counters"]):
            self.events.write("eval_end", stage=stage, run=run, **evidence)
        self._core().last = time.perf_counter()

    def on_validation_batch_start(
        self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int, dataloader_idx: int = 0
    ) -> None:
        self.ledger.batch(batch_tensors.record(batch, self.events, self.ledger.stage()))

    on_test_batch_start = on_validation_batch_start

    def on_validation_batch_end(
        self,
        trainer: Any,
        pl_module: Any,
        outputs: Any,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        self._eval_row(trainer, "validate", batch_idx, dataloader_idx)

    def on_test_batch_end(
        self,
        trainer: Any,
        pl_module: Any,
        outputs: Any,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        self._eval_row(trainer, "test", batch_idx, dataloader_idx)

    def _eval_row(self, trainer: Any, stage: str, batch_idx: int, dataloader_idx: int) -> None:
        run = self._core().eval_runs.get(stage, 0)
        self._row(
            (stage, run, dataloader_idx, batch_idx),
            "eval_step",
            stage=stage,
            run=run,
            epoch=trainer.current_epoch,
            batch_idx=batch_idx,
            dataloader_idx=dataloader_idx,
        )

    def _row(self, key: Hashable, kind: str, **fields: Any) -> None:
        """This core's row; with the process's evidence when it is the last to finish it."""
        rank = self.ledger.rank()
        state = self._core()
        clock = time.perf_counter()
        bucket = self.ledger.take(rank) if rank is not None else None
        evidence = self.evidence.arrive(key)
        if evidence is not None:
            self.ledger.learn_fallbacks(
                [
                    c
                    for c in evidence["counters"]
                    if c.startswith("aten::") and c not in _NOT_FALLBACKS
                ],
                fallback_name,
            )
        self.events.write(
            kind,
            rank=rank,
            **fields,
            seconds=round(clock - state.last, 4),
            counters=evidence["counters"] if evidence else {},
            graphs=evidence["graphs"] if evidence else empty_graphs(),
            ranks={rank: bucket} if bucket is not None else {},
        )
        state.last = clock

    def _hardware_sample(self, step: int, state: _CoreState) -> dict[str, Any]:
        """On a few steps after warm-up: how long the device took for the step (waiting for
        its work to finish, so the host's lead is not counted) and the core's memory."""
        if not self._sampled(step):
            return {}
        import torch_xla
        import torch_xla.core.xla_model as xm

        sample: dict[str, Any] = {}
        try:
            xm.wait_device_ops()
            sample["device_seconds"] = round(time.perf_counter() - state.batch_started, 4)
        except Exception as exc:  # not available on this backend
            sample["device_seconds_error"] = f"{type(exc).__name__}: {exc}"[:200]
        try:
            info = xm.get_memory_info(torch_xla.device())
            sample["memory"] = {k: int(v) for k, v in dict(info).items()}
        except Exception as exc:
            sample["memory_error"] = f"{type(exc).__name__}: {exc}"[:200]
        return {"hardware": sample}

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        state = self._core()
        evidence = self.evidence.arrive(("train_end",))
        self.events.write(
            "train_end",
            counters=evidence["counters"] if evidence else {},
            graphs=evidence["graphs"] if evidence else empty_graphs(),
            steps=state.steps,
        )
        self._stop_tracing()

    def on_test_end(self, trainer: Any, pl_module: Any) -> None:
        self._eval_end("test")
        self._stop_tracing()

    def _start_tracing(self) -> None:
        # Entered at the start of a loop and left at its end: the whole loop runs inside it,
        # including Lightning's own reads (logging, optimizer step), placed at their lines.
        if getattr(self._local, "tracer", None) is None:
            self._local.tracer = OpTracer(self.ledger, uncached_compiles)
            self._local.tracer.__enter__()

    def _stop_tracing(self) -> None:
        tracer = getattr(self._local, "tracer", None)
        if tracer is not None:
            tracer.__exit__(None, None, None)
            self._local.tracer = None

    # --- failures ---------------------------------------------------------------------

    def record_failure(self, exc: BaseException) -> None:
        """A core raised: record where (the process may abort in a collective soon)."""
        site = self.ledger.code.site_of_traceback(exc.__traceback__)
        near = None if site is not None else self._nearest_user_site(exc)
        self.events.write(
            "replica_error",
            rank=self.ledger.rank(),
            type=type(exc).__name__,
            message=str(exc).strip().splitlines()[0] if str(exc).strip() else "",
            out_of_step=isinstance(exc, (ReplicasOutOfStep, threading.BrokenBarrierError)),
            out_of_data=exc.to_json() if isinstance(exc, CoreOutOfData) else None,
            diverged=exc.to_json() if isinstance(exc, ReplicasDiverged) else None,
            internal=_raised_by_tpulint(exc) and site is None,
            released=bool(getattr(exc, "released", False)),
            waited_at=getattr(exc, "where", None),
            site=site.to_json() if site else (near[0] if near else None),
            site_reason=near[1] if near else None,
            traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
        )

    def _nearest_user_site(self, exc: BaseException) -> tuple[dict[str, Any], str] | None:
        """For an exception raised inside Lightning or torch with none of the user's frames on
        its stack (Lightning refusing a loader, or a hook's return value): the user's code it
        is about. A DataLoader in the failing frames names the line that built it; a hook
        named in the message names that hook's definition in the user's module."""
        import inspect

        frames = []
        tb = exc.__traceback__
        while tb is not None:
            frames.append(tb.tb_frame)
            tb = tb.tb_next
        modules = []
        for frame in reversed(frames):  # innermost first
            for value in frame.f_locals.values():
                built = getattr(value, "_tpulint_built_at", None)
                if isinstance(built, dict) and built.get("user"):
                    return built, "loader"
                if _is_lightning_module(value) and value not in modules:
                    modules.append(value)
        message = str(exc)
        for module in modules:
            for name in _HOOKS:
                if name not in message:
                    continue
                method = getattr(type(module), name, None)
                try:
                    path = inspect.getsourcefile(method)  # type: ignore[arg-type]
                    line = inspect.getsourcelines(method)[1]  # type: ignore[arg-type]
                except (TypeError, OSError):
                    continue
                if path and self.ledger.code.is_user(path):
                    return {"path": path, "line": line, "function": name, "user": True}, "hook"
        return None


def _is_lightning_module(value: Any) -> bool:
    return any(
        cls.__name__ == "LightningModule"
        and cls.__module__.startswith(("lightning.pytorch", "pytorch_lightning"))
        for cls in type(value).__mro__
    )


def _topology() -> dict[str, Any]:
    """Where this core runs: host, process and device, and the TPU's type when on one."""
    import torch_xla.runtime as xr

    found: dict[str, Any] = {"host": 0, "process": None, "device_type": None}
    try:
        found["device_type"] = xr.device_type()
        found["process"] = xr.process_index()
        found["processes"] = xr.process_count()
        found["host"] = xr.host_index()
        found["addressable_devices"] = xr.addressable_device_count()
    except Exception:  # informative only
        pass
    if found["device_type"] == "TPU":
        try:
            from torch_xla._internal import tpu

            found["tpu_type"] = tpu.get_tpu_env().get("ACCELERATOR_TYPE")
        except Exception:
            pass
    return found


class StepRecorder(Recorder):
    """verify's recorder (a Lightning Callback once `with_base` made it one): the recording,
    plus what only verify does, through files the verify parent reads and writes:

    * at the end of the planned epochs each core writes `epoch_end` and waits for the parent's
      decision to train one more epoch or not (every core gets the same one: the parent sees
      every process's rows; runtime/monitor.py);
    * once the run's last loop is recorded, each core writes `rank_done`; the parent ends the
      run when every core has (Lightning's teardown would copy the weights back for nothing);
    * a core that raises is recorded at once, and the emulation's waits are released."""

    def __init__(
        self,
        ledger: Ledger,
        log: EventLog,
        evidence: ProcessEvidence,
        *,
        warmup: int = 2,
        hardware: bool = False,
        finish_after: str = "train",
        decisions: Path | None = None,
    ) -> None:
        super().__init__(ledger, log, evidence, warmup=warmup, hardware=hardware)
        self.finish_after = finish_after  # "train" or "test": the last loop of the run
        self.decisions = decisions  # where the parent writes its epoch decisions
        self.on_abort: list[Any] = []  # waits to release when a core fails
        self._exit_timer: threading.Timer | None = None

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        """At the end of the planned epochs the parent decides whether the run holds a
        steady window yet; if not, one more epoch is trained."""
        epoch = trainer.current_epoch
        if epoch + 1 < trainer.fit_loop.max_epochs or self.decisions is None:
            return
        self.events.write("epoch_end", epoch=epoch)
        decision = wait_for_decision(self.decisions, epoch)
        if decision.get("extend"):
            trainer.fit_loop.max_epochs = epoch + 2

    def loop_done(self, trainer: Any) -> None:
        """Called in every core once Lightning's fit (or test) has returned, every hook of the
        user's included, before the launcher copies the results back."""
        state = getattr(getattr(trainer.state, "fn", None), "value", None)
        if state != {"train": "fit", "test": "test"}[self.finish_after]:
            return
        self.events.write("rank_done", loop=state)
        sys.stdout.flush()
        sys.stderr.flush()

    def replica_failed(self, exc: BaseException, *, end_process: bool = False) -> None:
        """A core raised: record it, then release the emulation's waits so the other cores of
        this process stop waiting for it. With `end_process` (in a replica process), the
        process exits shortly after: once one core has failed the run is over."""
        self.record_failure(exc)
        for release in self.on_abort:
            release()
        if end_process:
            self._exit_soon()

    def _exit_soon(self, grace: float = 5.0) -> None:
        # The grace lets the other cores, released by abort(), record their own errors.
        with self._lock:
            if self._exit_timer is not None:
                return
            self._exit_timer = threading.Timer(grace, os._exit, args=(_EXIT_AFTER_FAILURE,))
            self._exit_timer.daemon = True
            self._exit_timer.start()


def decision_file(directory: Path, epoch: int) -> Path:
    return directory / f"epoch-{epoch}.json"


def wait_for_decision(directory: Path, epoch: int, poll: float = 0.02) -> dict[str, Any]:
    """The parent's decision for the end of `epoch` (it writes the file atomically)."""
    path = decision_file(directory, epoch)
    while True:
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            time.sleep(poll)

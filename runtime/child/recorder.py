"""The Lightning callback that turns a training run into step rows (and validation and test
batches into rows of their own).

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
from pathlib import Path
from typing import Any

from lightning.pytorch import Callback
from tpulint.runtime.child import batch_tensors
from tpulint.runtime.child.graphs import GraphLog
from tpulint.runtime.child.ledger import Ledger
from tpulint.runtime.child.tracing import OpTracer, fallback_name
from tpulint.runtime.errors import CoreOutOfData, ReplicasOutOfStep, VerdictError
from tpulint.runtime.events import EventLog
from tpulint.runtime.frames import is_tpulint_frame
from tpulint.runtime.steady import MAX_EXTRA_EPOCHS, steady_window, window_is_steady

# Counters that matter for the verdicts; every "aten::*" counter (an op torch_xla ran on the
# host, e.g. aten::nonzero for a boolean mask) is read too.
_COUNTERS = ("UncachedCompile", "CachedCompile")
# torch_xla counts `.item()` and friends under this aten name: a transfer, not a fallback.
_NOT_FALLBACKS = ("aten::_local_scalar_dense",)
_EXIT_AFTER_FAILURE = 70  # the replica process's status once a replica failed (EX_SOFTWARE)
_METRICS = ("TransferFromDeviceTime", "CompileTime")


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


class StepRecorder(Callback):
    def __init__(
        self,
        ledger: Ledger,
        log: EventLog,
        barrier_timeout: float,
        graphs: GraphLog | None = None,
        *,
        warmup: int = 2,
        max_extra_epochs: int = MAX_EXTRA_EPOCHS,
        extend_until: float = float("inf"),
        finish_after: str = "train",
        done_marker: Path | None = None,
    ) -> None:
        self.ledger = ledger
        self.finish_after = finish_after  # "train" or "test": the last loop of the run
        self.done_marker = done_marker
        self.graphs = graphs
        self.warmup = warmup
        self.max_extra_epochs = max_extra_epochs
        self.extend_until = extend_until  # seconds after the start; no extension after it
        self._started = time.monotonic()
        self._extend = False
        self._extra_epochs = 0
        self._epoch_steps: dict[int, tuple[int, int]] = {}  # epoch -> (first step, steps)
        self._new_graphs: dict[int, int] = {}
        self._seen_graphs: set[str] = set()
        self._shape_sizes: dict[tuple[str, str, str], set[str]] = {}
        self._shapes_vary: set[str] = set()  # stages in which an op's output size varied
        self._eval_runs: dict[str, int] = {}
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
        self.ledger.set_stage("train")
        self._start_tracing()
        self._meet("the start of training")
        if self._leads():
            self._previous = read_counters()
            self._last_time = time.perf_counter()
            graphs = self._take_graphs()
            self.events.write(
                "train_start",
                graphs=graphs,
                counters=self._previous,
                world_size=trainer.world_size,
                strategy=type(trainer.strategy).__name__,
                accelerator=type(trainer.accelerator).__name__,
                precision=str(trainer.precision),
                accumulate_grad_batches=trainer.accumulate_grad_batches,
                automatic_optimization=bool(pl_module.automatic_optimization),
                max_epochs=trainer.max_epochs,
                limit_val_batches=trainer.limit_val_batches,
            )
        self._meet("the start of training")

    def on_train_batch_start(
        self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int
    ) -> None:
        self.ledger.batch(batch_tensors.record(batch, self.events, "train"))

    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        self.ledger.optimizer_step()

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        step = self._steps
        self._row(
            f"the end of step {step}",
            "step",
            step=step,
            epoch=trainer.current_epoch,
            batch_idx=batch_idx,
        )

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        """When the planned epochs are done but the run holds no steady window yet (too few
        steps, or its last epochs still compiled new graphs), train one more epoch."""
        epoch = trainer.current_epoch
        if epoch + 1 < trainer.fit_loop.max_epochs:
            return
        self._meet(f"the end of epoch {epoch}")
        if self._leads():
            self._extend = self._extension(epoch)
        self._meet(f"the end of epoch {epoch}")
        if self._extend:
            trainer.fit_loop.max_epochs = epoch + 2

    def _extension(self, epoch: int) -> bool:
        """The leader's decision, written to the log with its reason."""
        if "train" in self._shapes_vary:
            return False  # fails on its data-dependent shapes however long it trains
        if not self._epoch_steps.get(epoch):
            return False  # no batch in the epoch: more epochs bring no evidence
        after_warmup = {
            e: max(0, count - max(0, self.warmup - first))
            for e, (first, count) in self._epoch_steps.items()
        }
        if window_is_steady(after_warmup, self._new_graphs):
            return False
        elapsed = time.monotonic() - self._started
        if self._extra_epochs >= self.max_extra_epochs or elapsed > self.extend_until:
            because = "epochs" if self._extra_epochs >= self.max_extra_epochs else "time"
            self.events.write(
                "extension_refused", epoch=epoch, seconds=round(elapsed, 1), because=because
            )
            return False
        self._extra_epochs += 1
        window = steady_window(after_warmup)
        reason = "too_short" if window is None else "new_graphs"
        self.events.write("extend", epoch=epoch + 1, reason=reason, window=window)
        return True

    def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
        self._eval_start(trainer, "validate")

    def on_test_start(self, trainer: Any, pl_module: Any) -> None:
        self.ledger.bind(trainer.global_rank)
        self._start_tracing()
        self._eval_start(trainer, "test")

    def _eval_start(self, trainer: Any, stage: str) -> None:
        self._meet(f"the start of a {stage} run")
        if self._leads():
            if not self._previous:
                self._previous = read_counters()
                self._last_time = time.perf_counter()
            self._eval_runs[stage] = self._eval_runs.get(stage, -1) + 1
        self._meet(f"the start of a {stage} run")

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
        self._row(
            f"the end of {stage} batch {batch_idx}",
            "eval_step",
            stage=stage,
            run=self._eval_runs.get(stage, 0),
            epoch=trainer.current_epoch,
            batch_idx=batch_idx,
            dataloader_idx=dataloader_idx,
        )

    def _row(self, where: str, kind: str, **fields: Any) -> None:
        """Every replica reaches the same boundary; the leader writes the row of what
        happened since the last one."""
        self._meet(where)
        if self._leads():
            now = read_counters()
            clock = time.perf_counter()
            self.ledger.learn_fallbacks(
                [c for c in now if c.startswith("aten::") and c not in _NOT_FALLBACKS],
                fallback_name,
            )
            ranks = {rank: self.ledger.take(rank) for rank in self.ledger.process_ranks()}
            graphs = self._take_graphs()
            self._note_progress(kind, fields, graphs, ranks)
            self.events.write(
                kind,
                **fields,
                seconds=round(clock - self._last_time, 4),
                counters=_delta(now, self._previous),
                graphs=graphs,
                ranks=ranks,
            )
            self._previous, self._last_time = now, clock
            if kind == "step":
                self._steps += 1
        self._meet(where)

    def _note_progress(
        self,
        kind: str,
        fields: dict[str, Any],
        graphs: dict[str, Any],
        ranks: dict[int, dict[str, Any]],
    ) -> None:
        """What the extension decision needs: steps per epoch, new graphs per epoch (a
        validation run counts for the epoch it ends), and whether shapes vary."""
        epoch = fields["epoch"]
        if kind == "step":
            first, count = self._epoch_steps.get(epoch, (fields["step"], 0))
            self._epoch_steps[epoch] = (first, count + 1)
        stage = fields.get("stage", "train")
        for bucket in ranks.values():
            for op in bucket.get("shape_ops", []):
                key = (stage, str(op["site"]), op["kind"])
                sizes = self._shape_sizes.setdefault(key, set())
                sizes.update(shape.split("x")[0] for shape in op["shapes"])
                if len(sizes) > 1:
                    self._shapes_vary.add(stage)
        new = {g["hash"] for g in graphs["compiled"]} - self._seen_graphs
        self._seen_graphs |= new
        past_warmup = kind != "step" or fields["step"] >= self.warmup
        first_run = kind == "eval_step" and fields.get("run") == 0
        # A loop whose op sizes vary fails on them; its graphs say nothing about stability.
        if new and past_warmup and not first_run and stage not in self._shapes_vary:
            self._new_graphs[epoch] = self._new_graphs.get(epoch, 0) + len(new)

    def on_test_end(self, trainer: Any, pl_module: Any) -> None:
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

    def _take_graphs(self) -> dict[str, Any]:
        """The graphs compiled (with where) and executed (how often) since the last call."""
        compiled: list[dict[str, Any]] = []
        executed: dict[str, int] = {}
        if self.graphs is None:
            return {"compiled": compiled, "executed": executed}
        for entry in self.graphs.take():
            if entry["kind"] == "execute":
                executed[entry["hash"]] = executed.get(entry["hash"], 0) + 1
                continue
            compiled.append(
                {
                    "hash": entry["hash"],
                    "cause": entry["cause"],
                    # Innermost first, without tpulint's own wrappers; the judge finds the
                    # user's line and the library function in them.
                    "frames": [f for f in entry["frames"] if not is_tpulint_frame(f[0])][:32],
                }
            )
        return {"compiled": compiled, "executed": executed}

    def _leads(self) -> bool:
        """The lowest core of this process reads the process's counters. (Not local_rank 0:
        on a multi-process TPU host the local ordinal counts across the host's processes.)"""
        ranks = self.ledger.process_ranks()
        return bool(ranks) and self.ledger.rank() == ranks[0]

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self._meet("the end of training")
        if self._leads():
            now = read_counters()
            self.events.write(
                "train_end",
                counters=_delta(now, self._previous),
                graphs=self._take_graphs(),
                steps=self._steps,
            )
            self._previous = now
        self._stop_tracing()
        self._meet("the end of training")

    def loop_done(self, trainer: Any) -> None:
        """Called in every replica once Lightning's fit (or test) has returned, every hook of
        the user's included, before the launcher copies the results back. After the run's last
        loop everything the parent needs is in the log: end the replica process now. That
        copy (the weights to the main process) and the replica pool's teardown take 1 to 2 s
        and tell verify nothing; the main process sees the marker and reports success."""
        state = getattr(getattr(trainer.state, "fn", None), "value", None)
        if state != {"train": "fit", "test": "test"}[self.finish_after]:
            return
        self._meet(f"the end of {state}")
        self._finish()

    def _finish(self) -> None:
        if not self._leads():
            return
        self.events.write("finished", where="replica")
        if self.done_marker is not None:
            self.done_marker.touch()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

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
        near = None if site is not None else self._nearest_user_site(exc)
        out_of_step = isinstance(exc, (ReplicasOutOfStep, threading.BrokenBarrierError))
        self.events.write(
            "replica_error",
            rank=self.ledger.rank(),
            type=type(exc).__name__,
            message=str(exc).strip().splitlines()[0] if str(exc).strip() else "",
            out_of_step=out_of_step,
            out_of_data=exc.to_json() if isinstance(exc, CoreOutOfData) else None,
            internal=_raised_by_tpulint(exc) and site is None,
            released=bool(getattr(exc, "released", False)),
            waited_at=getattr(exc, "where", None),
            elsewhere=self._where_the_others_are() if out_of_step else [],
            site=site.to_json() if site else (near[0] if near else None),
            site_reason=near[1] if near else None,
            traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
        )
        self.abort()
        if end_process:
            self._exit_soon()

    def _nearest_user_site(self, exc: BaseException) -> tuple[dict[str, Any], str] | None:
        """For an exception raised inside Lightning or torch with none of the user's frames on
        its stack (Lightning refusing a loader, or a hook's return value): the user's code it
        is about. A DataLoader in the failing frames names the line that built it; a hook
        named in the message names that hook's definition in the user's module."""
        import inspect

        from lightning.pytorch import LightningModule

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
                if isinstance(value, LightningModule) and value not in modules:
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

    def _exit_soon(self, grace: float = 5.0) -> None:
        # The grace lets the other replicas, released by abort(), record their own errors.
        with self._lock:
            if self._exit_timer is not None:
                return
            self._exit_timer = threading.Timer(grace, os._exit, args=(_EXIT_AFTER_FAILURE,))
            self._exit_timer.daemon = True
            self._exit_timer.start()

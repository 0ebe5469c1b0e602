"""`TPUReadiness(dirpath)`: a Lightning Callback that records, inside the user's own training
run on a TPU VM or a pod, the evidence `tpulint verify` records, for `tpulint report DIR` to
judge with verify's judge.

    from tpulint.lightning import TPUReadiness
    trainer = L.Trainer(accelerator="tpu", callbacks=[TPUReadiness("tpu-readiness")])

It records through the same recorder as verify (recorder.Recorder), so the two cannot drift:
each core's rows (its batches, host reads, data-dependent shapes, CPU fallbacks, optimizer
steps; with the process's compiles, transfers and graphs in the row of the last core of the
process to finish it), each loader epoch with the shard its DistributedSampler draws
(recomputed from the sampler's replica count, rank, seed and epoch), each collective change,
and on a TPU a few samples of device step time and HBM; and, through verify's memory probe
(memory.py), the shapes of what core 0's first training step keeps, for the memory estimate
(on a TPU beside the HBM measured).

What it does not do, by design: nothing waits for another core or host (every core writes its
own files; on a pod each host writes into its own copy of `dirpath`, to be gathered into one
directory for `tpulint report`), nothing changes the training (no setting, no sampler, no
thread's device is touched: the loaders' threads are only tagged for the record; the one
extra graph is a zero added to one, compiled once per process so that torch_xla writes its
graph analysis there too, graphs.claim_process), and nothing is extended or stopped.

Create it before the first XLA operation of the process (before `trainer.fit`): torch_xla
reads its graph-analysis settings once. By default only compilations are analysed
(`executions=True` records every execution too, for short runs: it costs a few kB per graph
per step). Child side (the user's training processes): imports torch, torch_xla, lightning.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from pathlib import Path
from typing import Any

from tpulint.runtime.child import graphs
from tpulint.runtime.child.evidence import ProcessEvidence
from tpulint.runtime.child.ledger import Ledger
from tpulint.runtime.child.memory import MemoryProbe
from tpulint.runtime.child.recorder import Recorder
from tpulint.runtime.events import EventLog, host_index
from tpulint.runtime.frames import CodeFilter

_PACKAGES = ("lightning.pytorch", "pytorch_lightning")
_classes: dict[tuple[type, ...], type] = {}
_claiming: set[str] = set()  # launcher classes already wrapped


def _callback_bases() -> tuple[type, ...]:
    """The Callback class of every Lightning package the process uses (each Trainer accepts
    only its own package's callbacks); `lightning` when none is imported yet."""
    bases = [sys.modules[name].Callback for name in _PACKAGES if name in sys.modules]
    if not bases:
        bases = [importlib.import_module("lightning.pytorch").Callback]
    return tuple(dict.fromkeys(bases))


def _roots_of(path: str | None) -> list[str]:
    if not path:
        return []
    from tpulint.runtime.child.targets import module_name_for_file

    name, search_root = module_name_for_file(path)
    top = os.path.join(search_root, name.split(".")[0])
    return [top if os.path.isdir(top) else os.path.dirname(path)]


class _Readiness(Recorder):
    """The recorder as a user's callback (the Callback bases are added per package)."""

    def __init__(
        self,
        dirpath: str | os.PathLike[str],
        *,
        executions: bool = False,
        warmup: int = 2,
        hardware: bool | None = None,
    ) -> None:
        self.dirpath = Path(dirpath).resolve()
        self.dirpath.mkdir(parents=True, exist_ok=True)
        # Before the first graph of this process and of the processes Lightning forks.
        graphs.configure(self.dirpath, level=2 if executions else 1)
        roots = [os.getcwd(), *(_roots_of(sys.argv[0]) if sys.argv and sys.argv[0] else [])]
        log = EventLog(self.dirpath)
        ledger = Ledger(log, CodeFilter(roots))
        log.rank_of = ledger.rank
        super().__init__(
            ledger, log, ProcessEvidence(self.dirpath), warmup=warmup, hardware=bool(hardware)
        )
        self._hardware_auto = hardware is None
        self.memory = MemoryProbe(log)
        self._observe()
        log.write(
            "recording",
            recorder="TPUReadiness",
            argv=list(sys.argv),
            cwd=os.getcwd(),
            host=host_index(),
            started=time.time(),
            executions=executions,
            warmup=warmup,
        )

    def _observe(self) -> None:
        """What records without changing anything: loaders, shards, collectives."""
        from tpulint.runtime.child import cores
        from tpulint.runtime.child.sampling import SamplerRecorder
        from tpulint.runtime.child.tracing import record_collectives

        SamplerRecorder(self.ledger, str(self.dirpath)).install()
        cores.install(self.ledger, None, run_as_core=False)
        record_collectives(self.ledger)
        for package in _PACKAGES:
            if package in sys.modules or package == "lightning.pytorch":
                self._claim_in_replicas(package)

    def _claim_in_replicas(self, package: str) -> None:
        """Each replica process Lightning's XLA launcher forks writes its own graph analysis
        (graphs.claim_process) before Lightning runs anything in it."""
        try:
            launchers = importlib.import_module(f"{package}.strategies.launchers.xla")
        except ImportError:
            return
        launcher = launchers._XLALauncher
        key = f"{launcher.__module__}.{launcher.__qualname__}"
        if key in _claiming:
            return
        _claiming.add(key)
        original = launcher._wrapping_function
        directory = self.dirpath

        def _wrapping_function(self: Any, *args: Any, **kwargs: Any) -> Any:
            graphs.claim_process(directory)
            return original(self, *args, **kwargs)

        launcher._wrapping_function = _wrapping_function

    # --- Lightning hooks beyond the recording ----------------------------------------------

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        super().setup(trainer, pl_module, stage)
        import torch_xla.runtime as xr

        if self._hardware_auto:
            self.hardware = xr.device_type() == "TPU"
        source = sys.modules.get(type(pl_module).__module__)
        path = getattr(source, "__file__", None)
        self.ledger.code.add_roots(_roots_of(path))
        self.events.write(
            "target",
            description={"class": f"{type(pl_module).__module__}.{type(pl_module).__name__}"},
            roots=self.ledger.code.roots,
            files=[path] if path else [],
        )
        self.events.write(
            "trainer",
            package=type(trainer).__module__.split(".")[0],
            requested={"precision": str(trainer.precision)},
            used={"precision": str(trainer.precision)},
            overridden=[],
        )
        self.events.write(
            "fit_start",
            versions=_versions(),
            cores=trainer.world_size,
            strategy=type(trainer.strategy).__name__,
        )

    # The memory probe's hooks (it reads shapes only: nothing syncs or changes).
    def on_train_batch_start(
        self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int
    ) -> None:
        super().on_train_batch_start(trainer, pl_module, batch, batch_idx)
        self.memory.on_train_batch_start(trainer, pl_module, batch, batch_idx)

    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        super().on_before_optimizer_step(trainer, pl_module, optimizer)
        self.memory.on_before_optimizer_step(trainer, pl_module, optimizer)

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        self.memory.on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)
        super().on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self.memory.on_train_end(trainer, pl_module)
        super().on_train_end(trainer, pl_module)

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self.record_failure(exception)

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self.events.write("rank_done", loop=stage)


def _versions() -> dict[str, str]:
    found = {}
    for name in ("torch", "torch_xla", "lightning", "pytorch_lightning"):
        module = sys.modules.get(name)
        version = getattr(module, "__version__", None) if module else None
        if version:
            found[name] = str(version)
    return found


def TPUReadiness(  # used as a class: callbacks=[TPUReadiness("dir")]
    dirpath: str | os.PathLike[str],
    *,
    executions: bool = False,
    warmup: int = 2,
    hardware: bool | None = None,
) -> Any:
    """A Lightning Callback recording the run into `dirpath` for `tpulint report dirpath`.
    `hardware`: sample device step time and HBM (default: on a TPU)."""
    bases = _callback_bases()
    cls = _classes.get(bases)
    if cls is None:
        cls = _classes[bases] = type("TPUReadiness", (_Readiness, *bases), {"__module__": __name__})
    return cls(dirpath, executions=executions, warmup=warmup, hardware=hardware)

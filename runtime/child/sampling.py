"""Record what each core's data loader is set to draw, per epoch.

Lightning builds the sampler (or keeps the user's), wraps the loader in MpDeviceLoader, and
MpDeviceLoader iterates it on a background thread, so the recording must find its way back to
the replica:

* ParallelLoader is constructed in the replica's own thread: it tags the DataLoader with the
  replica's rank and the loop it serves (train, validate, test; cores.py).
* DataLoader.__iter__ (on the loader thread) counts the epochs of that loader and leaves the
  (rank, epoch) in a thread-local for the sampler.
* DistributedSampler.__iter__ materializes the whole epoch's index list: that list is the
  recorded shard (its positions, which for Lightning's DistributedSamplerWrapper are positions
  in the wrapped sampler's output).
* DistributedSampler.__init__ remembers where the sampler was built: the user's line (a
  user-built sampler, which Lightning keeps) or Lightning's.
* DataLoader.__init__ remembers the user's line that built the training loader; Lightning
  rebuilds the loader with its sampler right after train_dataloader() returns, in the same
  thread, so the rebuilt one inherits the line (batch size and drop_last findings point there).

Child process only: imports torch and torch_xla.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import sys
import threading
from array import array
from pathlib import Path
from typing import Any

from torch.utils.data import DataLoader, DistributedSampler, IterableDataset
from tpulint.runtime.child.fingerprints import fingerprinted
from tpulint.runtime.child.ledger import Ledger

_ids = itertools.count()


def _qualname(obj: Any) -> str:
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def _sampler_of(loader: DataLoader) -> Any:
    batch_sampler = getattr(loader, "batch_sampler", None)
    inner = getattr(batch_sampler, "sampler", None)
    return inner if inner is not None else getattr(loader, "sampler", None)


def _length(obj: Any) -> int | None:
    try:
        return len(obj)
    except TypeError:
        return None


class SamplerRecorder:
    def __init__(self, ledger: Ledger, run_dir: str) -> None:
        self.ledger = ledger
        self.run_dir = Path(run_dir)
        self._local = threading.local()
        self._lock = threading.Lock()

    def install(self) -> None:
        self._wrap_dataloader_init()
        self._wrap_dataloader_iter()
        self._wrap_sampler()

    def _wrap_dataloader_init(self) -> None:
        original = DataLoader.__init__
        recorder = self
        code = self.ledger.code

        # functools.wraps: Lightning reads DataLoader.__init__'s signature (through
        # __wrapped__) to re-instantiate the user's loader with its own sampler.
        @functools.wraps(original)
        def __init__(self: DataLoader, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            # Where the loader was built: outside the __init__ methods of a DataLoader
            # subclass (`super().__init__(...)` in the user's class is not that line).
            caller = sys._getframe(1)
            while (
                caller.f_back is not None
                and caller.f_code.co_name == "__init__"
                and caller.f_locals.get("self") is self
            ):
                caller = caller.f_back
            site = code.site_of(caller, fallback=False)
            if site is not None:
                recorder._local.loader_site = site.to_json()
            with contextlib.suppress(AttributeError, ValueError):
                self._tpulint_built_at = getattr(recorder._local, "loader_site", None)

        DataLoader.__init__ = __init__

    def _wrap_dataloader_iter(self) -> None:
        original = DataLoader.__iter__
        recorder = self

        @functools.wraps(original)
        def __iter__(self: DataLoader) -> Any:
            epoch = getattr(self, "_tpulint_epochs", 0)
            with contextlib.suppress(AttributeError, ValueError):
                self._tpulint_epochs = epoch + 1
            # Tagged by ParallelLoader (cores.py); a loader iterated in the replica's own
            # thread (one core, no MpDeviceLoader) belongs to that thread's core.
            rank = getattr(self, "_tpulint_rank", None)
            if rank is None:
                rank = recorder.ledger.rank()
            stage = getattr(self, "_tpulint_stage", None) or recorder.ledger.stage()
            recorder._local.context = (rank, epoch, stage)
            recorder._loader_epoch(self, rank, epoch, stage)
            iterator = original(self)
            if isinstance(self.dataset, IterableDataset):
                # No sampler to record: the batches themselves are compared across cores.
                iterator = fingerprinted(
                    iterator, functools.partial(recorder._batch, rank, epoch, stage)
                )
            return iterator

        DataLoader.__iter__ = __iter__

    def _loader_epoch(self, loader: DataLoader, rank: int | None, epoch: int, stage: str) -> None:
        sampler = _sampler_of(loader)
        info: dict[str, Any] = {"class": _qualname(sampler) if sampler is not None else None}
        if isinstance(sampler, DistributedSampler):
            inner = getattr(getattr(sampler, "dataset", None), "_sampler", None)
            info.update(
                distributed=True,
                num_replicas=sampler.num_replicas,
                rank=sampler.rank,
                shuffle=sampler.shuffle,
                drop_last=sampler.drop_last,
                seed=sampler.seed,
                built_at=getattr(sampler, "_tpulint_built_at", None),
                wraps=_qualname(inner) if inner is not None else None,
            )
        else:
            info["distributed"] = False
        self.ledger.events.write(
            "loader_epoch",
            rank=rank,
            epoch=epoch,
            stage=stage,
            batches=_length(loader),
            batch_size=loader.batch_size,
            drop_last=loader.drop_last,
            built_at=getattr(loader, "_tpulint_built_at", None),
            dataset=_qualname(loader.dataset),
            dataset_size=_length(loader.dataset),
            iterable=isinstance(loader.dataset, IterableDataset),
            num_workers=loader.num_workers,
            sampler=info,
        )

    def _batch(self, rank: int | None, epoch: int, stage: str, index: int, digest: str) -> None:
        self.ledger.events.write(
            "batch_digest", rank=rank, epoch=epoch, stage=stage, index=index, digest=digest
        )

    # --- the shard itself ---------------------------------------------------------------

    def _wrap_sampler(self) -> None:
        original_init = DistributedSampler.__init__
        original_iter = DistributedSampler.__iter__
        recorder = self
        ledger = self.ledger

        @functools.wraps(original_init)
        def __init__(self: DistributedSampler, *args: Any, **kwargs: Any) -> None:
            original_init(self, *args, **kwargs)
            site = ledger.code.site_of(sys._getframe(1))
            self._tpulint_built_at = site.to_json() if site else None

        @functools.wraps(original_iter)
        def __iter__(self: DistributedSampler) -> Any:
            indices = list(original_iter(self))
            rank, epoch, stage = getattr(recorder._local, "context", (None, None, None))
            recorder._plan(rank, epoch, stage, indices, _length(self.dataset))
            return iter(indices)

        DistributedSampler.__init__ = __init__
        DistributedSampler.__iter__ = __iter__

    def _plan(
        self,
        rank: int | None,
        epoch: int | None,
        stage: str | None,
        indices: list[int],
        total: int | None,
    ) -> None:
        # Index lists go to a binary side file: a large dataset would make JSON lines huge.
        name = f"plan-{os.getpid()}-{next(_ids)}.bin"
        with open(self.run_dir / name, "wb") as handle:
            array("q", indices).tofile(handle)
        self.ledger.events.write(
            "sampler_plan",
            rank=rank,
            epoch=epoch,
            stage=stage,
            file=name,
            count=len(indices),
            total=total,
        )

"""What the replica threads of one process observed during the current training step.

The op tracer, the step-marker hook and the batch hooks add to it from every replica thread;
the process leader takes each replica's bucket once all replicas have finished the step (they
are parked at a barrier then), so a step row is never torn. Child process only; standard
library only.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tpulint.runtime.events import EventLog
from tpulint.runtime.frames import CodeFilter, Site


@dataclass
class _Bucket:
    # (user site, op, library reader or None) -> [count, compiles]
    transfers: dict[tuple[Site, str, Site | None], list[int]] = field(default_factory=dict)
    shape_ops: dict[tuple[Site, str], dict[str, Any]] = field(default_factory=dict)
    fallbacks: dict[tuple[Site, str], int] = field(default_factory=dict)  # (site, counter)
    marker_compiles: int = 0
    optimizer_steps: int = 0
    batch: list[list[int]] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "batch": self.batch,
            "marker_compiles": self.marker_compiles,
            "optimizer_steps": self.optimizer_steps,
            "transfers": [
                {
                    "site": site.to_json(),
                    "op": op,
                    "reader": reader.to_json() if reader else None,
                    "count": count,
                    "compiles": compiles,
                }
                for (site, op, reader), (count, compiles) in self.transfers.items()
            ],
            "fallbacks": [
                {"site": site.to_json(), "op": op, "count": count}
                for (site, op), count in self.fallbacks.items()
            ],
            "shape_ops": [
                {
                    "site": site.to_json(),
                    "kind": kind,
                    "count": data["count"],
                    "shapes": sorted(data["shapes"]),
                    "reader": data["reader"].to_json() if data.get("reader") else None,
                }
                for (site, kind), data in self.shape_ops.items()
            ],
        }


class Ledger:
    def __init__(self, log: EventLog, code: CodeFilter) -> None:
        self.events = log
        self.code = code
        self._lock = threading.Lock()
        self._local = threading.local()
        self._buckets: dict[int, _Bucket] = {}
        self._last_collective: dict[int | None, tuple[Any, ...]] = {}
        self.threads: dict[int, int] = {}  # thread ident -> rank, for stack snapshots
        # Python name of an op torch_xla ran on the host -> its `aten::*` counters; learned
        # from the counters at each step boundary (tracing.OpTracer watches these names).
        self.fallback_counters: dict[str, tuple[str, ...]] = {}
        # (stage, epoch of that stage's loader) -> rank -> [batches fetched, count at its end]
        self._progress: dict[tuple[str, int], dict[int, list[int | None]]] = {}
        self._loader_epochs: dict[tuple[int, str], int] = {}

    # --- which replica is this thread -------------------------------------------------

    def bind(self, rank: int) -> None:
        self._local.rank = rank
        ident = threading.get_ident()
        if self.threads.get(ident) != rank:
            self.threads[ident] = rank
            # Stacks dumped on a hang name threads by this id: the parent maps them to cores.
            self.events.write("replica_thread", rank=rank, ident=ident)

    def bind_loader(self, rank: int, stage: str) -> None:
        """A loader thread serving `rank` (not a replica: no stack snapshots, no step rows)."""
        self._local.rank = rank
        self._local.stage = stage

    def rank(self) -> int | None:
        return getattr(self._local, "rank", None)

    def stage(self) -> str:
        """What the calling replica thread is running: train, validate, test, sanity_check."""
        return getattr(self._local, "stage", "train")

    def set_stage(self, stage: str) -> None:
        self._local.stage = stage

    def process_ranks(self) -> list[int]:
        """The cores whose replica threads live in this process, lowest first."""
        return sorted(set(self.threads.values()))

    def _bucket(self) -> _Bucket | None:
        rank = self.rank()
        if rank is None:
            return None  # setup and teardown: counted by the process counters only
        bucket = self._buckets.get(rank)
        if bucket is None:
            bucket = self._buckets[rank] = _Bucket()
        return bucket

    # --- observations -----------------------------------------------------------------

    def transfer(self, op: str, site: Site, compiles: int, reader: Site | None = None) -> None:
        with self._lock:
            bucket = self._bucket()
            if bucket is not None:
                entry = bucket.transfers.setdefault((site, op, reader), [0, 0])
                entry[0] += 1
                entry[1] += compiles

    def shape_op(
        self, kind: str, site: Site, shape: Sequence[int] | None, reader: Site | None = None
    ) -> None:
        """`reader`: the library function that ran the op for the user's line, if any."""
        with self._lock:
            bucket = self._bucket()
            if bucket is not None:
                entry = bucket.shape_ops.setdefault(
                    (site, kind), {"count": 0, "shapes": set(), "reader": reader}
                )
                entry["count"] += 1
                if shape is not None:
                    entry["shapes"].add("x".join(str(d) for d in shape) or "scalar")

    def marker_compiles(self, count: int) -> None:
        with self._lock:
            bucket = self._bucket()
            if bucket is not None:
                bucket.marker_compiles += count

    def fallback(self, op: str, site: Site) -> None:
        with self._lock:
            bucket = self._bucket()
            if bucket is not None:
                bucket.fallbacks[(site, op)] = bucket.fallbacks.get((site, op), 0) + 1

    def learn_fallbacks(self, counters: list[str], name_of: Any) -> None:
        """Watch the Python names of these `aten::*` fallback counters from now on."""
        known = dict(self.fallback_counters)
        for counter in counters:
            names = name_of(counter)  # one name, or all the names that run the op
            for name in names if isinstance(names, tuple) else (names,):
                if counter not in known.get(name, ()):
                    known[name] = (*known.get(name, ()), counter)
        self.fallback_counters = known  # replaced whole: readers never see it half-built

    def optimizer_step(self) -> None:
        with self._lock:
            bucket = self._bucket()
            if bucket is not None:
                bucket.optimizer_steps += 1

    def batch(self, shapes: list[list[int]]) -> None:
        with self._lock:
            bucket = self._bucket()
            if bucket is not None:
                bucket.batch = shapes

    def collective(self, name: str, site: Site | None, shapes: list[list[int]]) -> None:
        """Written at once (not per step): if replicas diverge, the process aborts inside this
        collective and the parent needs to know who entered what from where. Only changes are
        written, so the per-step gradient all-reduce costs one line per run."""
        rank = self.rank()
        signature = (name, site, tuple(tuple(s) for s in shapes))
        with self._lock:
            if self._last_collective.get(rank) == signature:
                return
            self._last_collective[rank] = signature
        self.events.write(
            "collective", rank=rank, name=name, site=site.to_json() if site else None, shapes=shapes
        )

    # --- each core's batches per loader epoch (a core out of data hangs a TPU) ----------

    def next_loader_epoch(self, rank: int, stage: str) -> int:
        """How many loaders of `stage` core `rank` has iterated before this one."""
        with self._lock:
            epoch = self._loader_epochs.get((rank, stage), 0)
            self._loader_epochs[(rank, stage)] = epoch + 1
        return epoch

    def batch_fetched(self, key: tuple[str, int], rank: int, index: int) -> dict[int, int]:
        """Core `rank` got batch number `index` (from 0) of loader epoch `key`; returns the
        cores whose loader had already ended before that batch, with their counts."""
        with self._lock:
            cores = self._progress.setdefault(key, {})
            cores.setdefault(rank, [0, None])[0] = index + 1
            return {
                r: ended for r, (_, ended) in cores.items() if ended is not None and ended <= index
            }

    def loader_ended(self, key: tuple[str, int], rank: int, count: int) -> dict[int, int]:
        """Core `rank`'s loader ended after `count` batches; returns the cores that already
        got more, with their counts."""
        with self._lock:
            cores = self._progress.setdefault(key, {})
            entry = cores.setdefault(rank, [0, None])
            entry[0], entry[1] = count, count
            return {r: fetched for r, (fetched, _) in cores.items() if fetched > count}

    def take(self, rank: int) -> dict[str, Any]:
        with self._lock:
            bucket = self._buckets.pop(rank, None) or _Bucket()
        return bucket.to_json()

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
    transfers: dict[tuple[Site, str], list[int]] = field(default_factory=dict)  # [count, compiles]
    shape_ops: dict[tuple[Site, str], dict[str, Any]] = field(default_factory=dict)
    marker_compiles: int = 0
    batch: list[list[int]] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "batch": self.batch,
            "marker_compiles": self.marker_compiles,
            "transfers": [
                {"site": site.to_json(), "op": op, "count": count, "compiles": compiles}
                for (site, op), (count, compiles) in self.transfers.items()
            ],
            "shape_ops": [
                {
                    "site": site.to_json(),
                    "kind": kind,
                    "count": data["count"],
                    "shapes": sorted(data["shapes"]),
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

    # --- which replica is this thread -------------------------------------------------

    def bind(self, rank: int) -> None:
        self._local.rank = rank
        self.threads[threading.get_ident()] = rank

    def rank(self) -> int | None:
        return getattr(self._local, "rank", None)

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

    def transfer(self, op: str, site: Site, compiles: int) -> None:
        with self._lock:
            bucket = self._bucket()
            if bucket is not None:
                entry = bucket.transfers.setdefault((site, op), [0, 0])
                entry[0] += 1
                entry[1] += compiles

    def shape_op(self, kind: str, site: Site, shape: Sequence[int] | None) -> None:
        with self._lock:
            bucket = self._bucket()
            if bucket is not None:
                entry = bucket.shape_ops.setdefault((site, kind), {"count": 0, "shapes": set()})
                entry["count"] += 1
                if shape is not None:
                    entry["shapes"].add("x".join(str(d) for d in shape) or "scalar")

    def marker_compiles(self, count: int) -> None:
        with self._lock:
            bucket = self._bucket()
            if bucket is not None:
                bucket.marker_compiles += count

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

    def take(self, rank: int) -> dict[str, Any]:
        with self._lock:
            bucket = self._buckets.pop(rank, None) or _Bucket()
        return bucket.to_json()

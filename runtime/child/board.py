"""Each core's progress through its data loaders, in a small file every process of the run maps
(a shared memory board), so that a core that runs out of data while another gets one more
batch is caught at once, whichever process either core lives in.

On a TPU VM the cores are separate processes; on a TPU a core that leaves the epoch early
makes the others wait for it in their next collective, forever. Each core writes only its own
slot (which loader epoch, how many batches fetched, how many in all once it ended) and reads
the others': the first fetch or end that shows a mismatch raises CoreOutOfData in that core.
The board is created by the verify child before Lightning forks its replica processes, so
every process shares the same mapping; it is verify's (one host, one run directory), not part
of what `TPUReadiness` records in a user's run. Standard library only.
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path

BOARD_FILE = "board.bin"
_STAGES = ("train", "validate", "test", "sanity_check", "predict")
_ENTRY = struct.Struct("<qqq")  # key, batches fetched, batch count at the end (-1: not ended)
_ENTRIES = len(_STAGES) * 2  # per stage, the current and the previous loader epoch
_SLOT = _ENTRY.size * _ENTRIES
NOT_ENDED = -1


def _key(stage: str, epoch: int) -> int:
    code = _STAGES.index(stage) if stage in _STAGES else len(_STAGES)
    return ((code + 1) << 32) | (epoch + 1)


def _entry(stage: str, epoch: int) -> int:
    code = _STAGES.index(stage) if stage in _STAGES else 0
    return code * 2 + epoch % 2


class Board:
    def __init__(self, path: Path, cores: int) -> None:
        self.path = path
        self.cores = cores
        size = max(1, cores) * _SLOT
        with open(path, "r+b" if path.exists() else "w+b") as handle:
            if os.fstat(handle.fileno()).st_size < size:
                handle.truncate(size)
            self._map = mmap.mmap(handle.fileno(), size, mmap.MAP_SHARED)

    @classmethod
    def create(cls, run_dir: str | Path, cores: int) -> Board:
        return cls(Path(run_dir) / BOARD_FILE, cores)

    def _offset(self, rank: int, stage: str, epoch: int) -> int:
        return rank * _SLOT + _entry(stage, epoch) * _ENTRY.size

    def _read(self, rank: int, stage: str, epoch: int) -> tuple[int, int] | None:
        """(fetched, ended) of `rank` in that loader epoch, or None if it is not there."""
        key, fetched, ended = _ENTRY.unpack_from(self._map, self._offset(rank, stage, epoch))
        if key != _key(stage, epoch):
            return None
        return fetched, ended

    def _write(self, rank: int, stage: str, epoch: int, fetched: int, ended: int) -> None:
        offset = self._offset(rank, stage, epoch)
        # Counts before the key: a reader that sees the new key sees its counts too.
        struct.pack_into("<qq", self._map, offset + 8, fetched, ended)
        struct.pack_into("<q", self._map, offset, _key(stage, epoch))

    def _others(self, rank: int, stage: str, epoch: int) -> dict[int, tuple[int, int]]:
        found = {}
        for other in range(self.cores):
            if other != rank:
                entry = self._read(other, stage, epoch)
                if entry is not None:
                    found[other] = entry
        return found

    def fetched(self, rank: int, stage: str, epoch: int, index: int) -> dict[int, int]:
        """Core `rank` got batch `index` (from 0) of its `epoch`-th `stage` loader; returns the
        cores whose loader of that epoch had ended before that batch, with their counts."""
        if not 0 <= rank < self.cores:
            return {}
        self._write(rank, stage, epoch, index + 1, NOT_ENDED)
        return {
            other: ended
            for other, (_, ended) in self._others(rank, stage, epoch).items()
            if ended != NOT_ENDED and ended <= index
        }

    def ended(self, rank: int, stage: str, epoch: int, count: int) -> dict[int, int]:
        """Core `rank`'s loader ended after `count` batches; returns the cores that got more
        batches in that loader epoch, with how many."""
        if not 0 <= rank < self.cores:
            return {}
        self._write(rank, stage, epoch, count, count)
        return {
            other: fetched
            for other, (fetched, _) in self._others(rank, stage, epoch).items()
            if fetched > count
        }

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
import time
from pathlib import Path

BOARD_FILE = "board.bin"
_STAGES = ("train", "validate", "test", "sanity_check", "predict")
# version, key, batches fetched, batch count at the end (-1: not ended)
_ENTRY = struct.Struct("<qqqq")
_WORD = struct.Struct("<q")
_ENTRIES = len(_STAGES) * 2  # per stage, the current and the previous loader epoch
_SLOT = _ENTRY.size * _ENTRIES
NOT_ENDED = -1
# A write takes microseconds, unless its process is descheduled halfway: readers retry for
# this long (seconds), yielding the CPU, before leaving the entry unread (no evidence either way).
_READ_PATIENCE = 2.0


def _key(stage: str, epoch: int) -> int:
    code = _STAGES.index(stage) if stage in _STAGES else len(_STAGES)
    return ((code + 1) << 32) | (epoch + 1)


def _entry(stage: str, epoch: int) -> int:
    code = _STAGES.index(stage) if stage in _STAGES else 0
    return code * 2 + epoch % 2


class Board:
    """Each entry is written by one core only and read by every other process, with no lock:
    a version number (a seqlock) tells a reader that it read an entry halfway through a
    write, and it reads again. Words are written whole, by slice assignment: `struct.pack_into`
    zeroes its target before filling it, so a reader in another process could see a count of
    0 that nobody wrote (a core "out of data after 0 batches"). The order of the words relies
    on the host keeping the order of stores and of loads, as x86-64 (every TPU VM's host) does."""

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

    def _word(self, offset: int) -> int:
        return _WORD.unpack(self._map[offset : offset + _WORD.size])[0]

    def _set_word(self, offset: int, value: int) -> None:
        self._map[offset : offset + _WORD.size] = _WORD.pack(value)

    def _read(self, rank: int, stage: str, epoch: int) -> tuple[int, int] | None:
        """(fetched, ended) of `rank` in that loader epoch, or None if it is not there."""
        offset = self._offset(rank, stage, epoch)
        deadline = None
        while True:
            before = self._word(offset)
            if not before % 2:  # odd: being written
                _, key, fetched, ended = _ENTRY.unpack(self._map[offset : offset + _ENTRY.size])
                if self._word(offset) == before:  # not written meanwhile
                    return (fetched, ended) if key == _key(stage, epoch) else None
            now = time.monotonic()
            deadline = deadline or now + _READ_PATIENCE
            if now > deadline:
                return None
            time.sleep(0)

    def _write(self, rank: int, stage: str, epoch: int, fetched: int, ended: int) -> None:
        offset = self._offset(rank, stage, epoch)
        version = self._word(offset)
        self._set_word(offset, version + 1)  # odd: readers wait
        self._set_word(offset + 8, _key(stage, epoch))
        self._set_word(offset + 16, fetched)
        self._set_word(offset + 24, ended)
        self._set_word(offset, version + 2)

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

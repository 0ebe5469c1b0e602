"""What each core's loader yields from an IterableDataset, by content, for the first batches
of each epoch.

Lightning does not shard an IterableDataset: the dataset must split its stream by rank
itself. One that asks the wrong rank (torch.distributed's, which Lightning's XLA strategy never
initialises; a constant) gives every core the same stream, and each core trains on the same
data. There is no sampler to record, so the batches themselves are compared: a digest of each
of the first few batches of every epoch, per core, computed in the loader's thread (or
worker) on the host tensors before they move to the device. Child process only: imports
torch.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from typing import Any

import torch

FIRST_BATCHES = 4  # per core and epoch: enough to tell shards apart, cheap to hash
_BYTES = 1 << 20  # per tensor


def digest(batch: Any) -> str:
    """A digest of every tensor in the batch (their values and shapes), in order."""
    hasher = hashlib.blake2b(digest_size=12)

    def visit(item: Any, depth: int = 0) -> None:
        if depth > 4:
            return
        if isinstance(item, torch.Tensor):
            hasher.update(str(tuple(item.shape)).encode())
            flat = item.detach().reshape(-1)
            if flat.device.type != "cpu":
                return  # already on the device: its shape is all that is cheap to read
            data = flat.contiguous().view(torch.uint8) if flat.numel() else flat
            hasher.update(data[:_BYTES].numpy().tobytes())
        elif isinstance(item, dict):
            for key, value in item.items():
                hasher.update(str(key).encode())
                visit(value, depth + 1)
        elif isinstance(item, (list, tuple)):
            for value in item:
                visit(value, depth + 1)
        elif hasattr(item, "__dict__"):
            for key, value in vars(item).items():
                hasher.update(str(key).encode())
                visit(value, depth + 1)
        elif isinstance(item, (int, float, str, bytes, bool)):
            hasher.update(repr(item).encode())

    visit(batch)
    return hasher.hexdigest()


def fingerprinted(iterator: Iterator[Any], record: Any) -> Iterator[Any]:
    """`iterator` with its first FIRST_BATCHES batches passed to `record(index, digest)`:
    the iterator's own class, so Lightning and torch_xla see the same object and methods."""
    cls = type(iterator)
    subclass = _SUBCLASSES.get(cls)
    if subclass is None:
        original = cls.__next__

        def __next__(self: Any) -> Any:
            batch = original(self)
            index = getattr(self, "_tpulint_index", 0)
            if index < FIRST_BATCHES:
                self._tpulint_index = index + 1
                with contextlib.suppress(Exception):  # a batch that cannot be hashed
                    self._tpulint_record(index, digest(batch))
            return batch

        subclass = _SUBCLASSES[cls] = type(cls.__name__, (cls,), {"__next__": __next__})
    try:
        iterator.__class__ = subclass
        iterator._tpulint_record = record  # type: ignore[attr-defined]
    except (TypeError, AttributeError):  # a C iterator or __slots__: left as it is
        return iterator
    return iterator


_SUBCLASSES: dict[type, type] = {}

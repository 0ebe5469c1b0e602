"""The process emulation's collective bridge through a real TCPStore: values over the store
server's 8 MiB limit (a model's parameters broadcast at setup) go in parts and come back whole;
a part-split value's keys are all deleted. A second or so, no XLA."""

from __future__ import annotations

import datetime
import socket
from collections.abc import Iterator
from typing import Any

import pytest

pytestmark = pytest.mark.runtime


@pytest.fixture
def store() -> Iterator[Any]:
    import torch.distributed as dist

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    timeout = datetime.timedelta(seconds=30)
    master = dist.TCPStore("127.0.0.1", port, is_master=True, timeout=timeout)
    yield dist.TCPStore("127.0.0.1", port, is_master=False, timeout=timeout)
    del master


@pytest.mark.parametrize("size", [0, 1000, 4 << 20, (8 << 20) + 1, 20 << 20])
def test_values_of_any_size_cross_the_store_whole(store: Any, size: int) -> None:
    from tpulint.runtime.child.bridge import _PART_BYTES, _delete, _fetch, _publish

    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    parts = _publish(store, "0/3", data)
    assert parts == (0 if size <= _PART_BYTES else -(-size // _PART_BYTES))
    assert _fetch(store, "0/3") == data
    keys = 1 + parts
    assert store.num_keys() >= keys
    before = store.num_keys()
    _delete(store, "0/3", parts)
    assert store.num_keys() == before - keys

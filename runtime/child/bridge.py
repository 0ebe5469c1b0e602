"""Collectives between emulated cores that live in different processes.

torch_xla 2.9's PJRT CPU client has only in-process collectives (XLA's `InProcessCollectives`:
`_XLAC` holds no Gloo or MPI implementation), so two processes each holding an emulated
device cannot all-reduce through XLA: each is a world of its own (docs/verify.md, "How the
cores are emulated"). When verify emulates a TPU VM's process layout, every collective of
`torch_xla.core.xla_model` is therefore carried out on the host, through a TCP key-value store
every process of the run reaches (torch.distributed's TCPStore, served by the verify child):

* the k-th collective of every core is exchanged under the key `k`: each core publishes its
  operands (copied to the host after a sync, as the threads emulation syncs around every
  collective), waits for every other core's, and computes the result itself, in rank order,
  so that every core holds the same bits;
* each core also publishes what it called (the collective, its shapes and dtypes, and the
  line that called it): cores whose k-th collectives differ are what hangs or corrupts a
  real TPU job, and is raised here at once as `ReplicasDiverged` with every core's call;
* a core that never arrives leaves the others waiting, as on a TPU: the verify parent finds
  them from their stacks (runtime/monitor.py).

The copies to and from the host are the emulation's, not the module's: they are not traced
(`tracing.silenced`) and their device-to-host transfers are subtracted from the counters
(`transfers_made`). Child process only: imports torch and torch_xla.
"""

from __future__ import annotations

import datetime
import functools
import pickle
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch
from tpulint.runtime.child import tracing
from tpulint.runtime.errors import ReplicasDiverged, VerifyError
from tpulint.runtime.frames import CodeFilter

_STORE_TIMEOUT = datetime.timedelta(days=1)  # the parent decides when a wait is a hang
_lock = threading.Lock()
_transfers = 0  # device-to-host transfers made by the bridge in this process


def transfers_made() -> int:
    """TransferFromDeviceTime samples the bridge caused in this process so far."""
    return _transfers


class Bridge:
    """One per emulated run; every replica thread of every process uses it."""

    def __init__(self, port: int, world_size: int, code: CodeFilter) -> None:
        self.port = port
        self.world_size = world_size
        self.code = code
        self._local = threading.local()

    # --- the exchange ---------------------------------------------------------------------

    def _store(self) -> Any:
        store = getattr(self._local, "store", None)
        if store is None:
            import torch.distributed as dist

            store = dist.TCPStore("127.0.0.1", self.port, is_master=False, timeout=_STORE_TIMEOUT)
            self._local.store = store
            self._local.sequence = 0
        return store

    def exchange(self, rank: int, call: dict[str, Any], payload: Any) -> list[Any]:
        """Publish this core's `payload` for its next collective and return every core's, in
        rank order; raise ReplicasDiverged when the cores' calls differ."""
        store = self._store()
        sequence = self._local.sequence
        self._local.sequence = sequence + 1
        parts = getattr(self._local, "parts", None)
        if parts is None:
            parts = self._local.parts = {}
        parts[sequence] = _publish(
            store, f"{sequence}/{rank}", pickle.dumps((call, payload), protocol=5)
        )
        if sequence >= 2:  # every core finished collective k-2 before anyone reached k
            _delete(store, f"{sequence - 2}/{rank}", parts.pop(sequence - 2, 0))
        entries = [pickle.loads(_fetch(store, f"{sequence}/{r}")) for r in range(self.world_size)]
        calls = [entry[0] for entry in entries]
        if any(_signature(c) != _signature(calls[0]) for c in calls):
            raise ReplicasDiverged(sequence, calls)
        return [entry[1] for entry in entries]

    # --- what a core sends ----------------------------------------------------------------

    def describe(self, name: str, tensors: Sequence[torch.Tensor], **details: Any) -> dict:
        site = self.code.site_of(sys._getframe(2), fallback=False)
        if site is None:
            from tpulint.runtime.frames import reader_of

            site = reader_of(sys._getframe(2), self.code)
        return {
            "name": name,
            "shapes": [list(t.shape) for t in tensors],
            "dtypes": [str(t.dtype).removeprefix("torch.") for t in tensors],
            "site": site.to_json() if site else None,
            **details,
        }


# torch's TCPStore server (its libuv backend, the default) closes the connection of a client
# that sends a value over 8 MiB (MAX_PAYLOAD_LEN in TCPStoreLibUvBackend.cpp): a model's
# parameters broadcast at setup are more. Larger values go in parts under keys of their own.
_PART_BYTES = 4 << 20
_WHOLE, _IN_PARTS = b"w", b"p"


def _publish(store: Any, key: str, data: bytes) -> int:
    """Set `key` to `data`; the number of parts it took (0: one value)."""
    if len(data) <= _PART_BYTES:
        store.set(key, _WHOLE + data)
        return 0
    count = 0
    for start in range(0, len(data), _PART_BYTES):
        store.set(f"{key}/{count}", data[start : start + _PART_BYTES])
        count += 1
    store.set(key, _IN_PARTS + str(count).encode())  # last: readers wait for it
    return count


def _fetch(store: Any, key: str) -> bytes:
    head = store.get(key)  # waits until the core has published
    if head[:1] == _WHOLE:
        return head[1:]
    return b"".join(store.get(f"{key}/{i}") for i in range(int(head[1:])))


def _delete(store: Any, key: str, parts: int) -> None:
    store.delete_key(key)
    for index in range(parts):
        store.delete_key(f"{key}/{index}")


def _signature(call: dict[str, Any]) -> tuple[Any, ...]:
    return (
        call["name"],
        tuple(tuple(s) for s in call["shapes"]),
        tuple(call["dtypes"]),
        call.get("op"),
    )


def _to_host(tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """The operands on the host, after the pending graph ran (not traced, not counted)."""
    global _transfers
    import torch_xla
    import torch_xla.debug.metrics as met

    torch_xla.sync()
    with tracing.silenced(), _lock:
        before = (met.metric_data("TransferFromDeviceTime") or (0,))[0]
        host = [t.detach().cpu() for t in tensors]
        after = (met.metric_data("TransferFromDeviceTime") or (0,))[0]
        _transfers += max(0, after - before)
    return host


def _to_device(value: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    with tracing.silenced():
        return value.to(dtype=like.dtype).to(like.device)


def _reduce(kind: str, values: list[torch.Tensor]) -> torch.Tensor:
    work = [v.double() if v.is_floating_point() else v for v in values]
    result = work[0].clone()
    for value in work[1:]:
        if kind == "sum":
            result = result + value
        elif kind == "mul":
            result = result * value
        elif kind == "min":
            result = torch.minimum(result, value)
        elif kind == "max":
            result = torch.maximum(result, value)
        elif kind == "and":
            result = result & value
        elif kind == "or":
            result = result | value
        else:
            raise VerifyError(f"emulated collectives: unknown reduce type `{kind}`")
    return result


def _no_groups(name: str, groups: Any) -> None:
    if groups:
        raise VerifyError(
            f"xm.{name}(groups=...) is not supported when verify emulates several processes;"
            " run with the default layout (--emulate threads)"
        )


def install(bridge: Bridge, rank_of: Callable[[], int]) -> None:
    """Replace torch_xla's collective primitives by the host exchange. The composite ones
    (collective_broadcast, rendezvous, mesh_reduce, broadcast_master_param) call these."""
    import torch_xla.core.xla_model as xm

    def all_reduce(
        reduce_type: str,
        inputs: Any,
        scale: float = 1.0,
        groups: Any = None,
        pin_layout: bool = True,
    ) -> Any:
        _no_groups("all_reduce", groups)
        tensors = [inputs] if isinstance(inputs, torch.Tensor) else list(inputs)
        call = bridge.describe("all_reduce", tensors, op=reduce_type)
        everyone = bridge.exchange(rank_of(), call, _to_host(tensors))
        reduced = []
        for index in range(len(tensors)):
            value = _reduce(reduce_type, [core[index] for core in everyone])
            if scale != 1.0:
                value = value * scale
            reduced.append(value)
        if isinstance(inputs, torch.Tensor):
            return _to_device(reduced[0], inputs)
        with torch.no_grad(), tracing.silenced():
            for tensor, value in zip(tensors, reduced, strict=True):
                tensor.copy_(_to_device(value, tensor))
        return inputs

    def all_gather(
        value: Any,
        dim: int = 0,
        groups: Any = None,
        output: Any = None,
        pin_layout: bool = True,
        channel_id: Any = None,
        use_global_device_ids: Any = None,
    ) -> Any:
        _no_groups("all_gather", groups)
        tensors = [value] if isinstance(value, torch.Tensor) else list(value)
        call = bridge.describe("all_gather", tensors, dim=dim)
        everyone = bridge.exchange(rank_of(), call, _to_host(tensors))
        gathered = [
            _to_device(torch.cat([core[i] for core in everyone], dim=dim), tensor)
            for i, tensor in enumerate(tensors)
        ]
        if output is not None:
            outputs = [output] if isinstance(output, torch.Tensor) else list(output)
            with torch.no_grad(), tracing.silenced():
                for target, result in zip(outputs, gathered, strict=True):
                    target.copy_(result)
            return output
        return gathered[0] if isinstance(value, torch.Tensor) else gathered

    def reduce_scatter(
        reduce_type: str,
        input: Any,
        scale: float,
        scatter_dim: int,
        shard_count: int,
        groups: Any = None,
        output: Any = None,
        pin_layout: bool = True,
        channel_id: Any = None,
        use_global_device_ids: Any = None,
    ) -> Any:
        _no_groups("reduce_scatter", groups)
        tensors = [input] if isinstance(input, torch.Tensor) else list(input)
        call = bridge.describe("reduce_scatter", tensors, op=reduce_type, dim=scatter_dim)
        rank = rank_of()
        everyone = bridge.exchange(rank, call, _to_host(tensors))
        results = []
        for index, tensor in enumerate(tensors):
            value = _reduce(reduce_type, [core[index] for core in everyone]) * scale
            shard = value.chunk(shard_count, dim=scatter_dim)[rank]
            results.append(_to_device(shard.contiguous(), tensor))
        if output is not None:
            outputs = [output] if isinstance(output, torch.Tensor) else list(output)
            with torch.no_grad(), tracing.silenced():
                for target, result in zip(outputs, results, strict=True):
                    target.copy_(result)
            return output
        return results[0] if isinstance(input, torch.Tensor) else results

    def all_to_all(
        value: torch.Tensor,
        split_dimension: int,
        concat_dimension: int,
        split_count: int,
        groups: Any = None,
        pin_layout: bool = True,
    ) -> torch.Tensor:
        _no_groups("all_to_all", groups)
        call = bridge.describe("all_to_all", [value], dim=split_dimension)
        rank = rank_of()
        everyone = bridge.exchange(rank, call, _to_host([value]))
        pieces = [core[0].chunk(split_count, dim=split_dimension)[rank] for core in everyone]
        return _to_device(torch.cat(pieces, dim=concat_dimension), value)

    def collective_permute(value: torch.Tensor, pairs: list[list[int]]) -> torch.Tensor:
        call = bridge.describe("collective_permute", [value], pairs=[list(p) for p in pairs])
        rank = rank_of()
        everyone = bridge.exchange(rank, call, _to_host([value]))
        source = next((s for s, t in pairs if t == rank), None)
        if source is None:
            return _to_device(torch.zeros_like(everyone[rank][0]), value)
        return _to_device(everyone[source][0], value)

    def unsupported(name: str) -> Callable[..., Any]:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise VerifyError(
                f"xm.{name} is not supported when verify emulates several processes;"
                " run with the default layout (--emulate threads)"
            )

        return refuse

    for function in (all_reduce, all_gather, reduce_scatter, all_to_all, collective_permute):
        original = getattr(xm, function.__name__)
        setattr(xm, function.__name__, functools.wraps(original)(function))
    for name in ("send", "recv"):
        setattr(xm, name, unsupported(name))

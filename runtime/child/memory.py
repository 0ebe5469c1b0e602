"""What one training step keeps in a core's memory, recorded from one representative step.

The judge (runtime/judge/check_memory.py) turns this into the per-core estimate; here only
shapes and dtypes are read, never a value, so nothing syncs or transfers. On the core of global
rank 0 (every core holds the same under data parallelism), for the first training step:

* parameters and buffers: the module's, on the device;
* gradients: the parameters' `.grad` at the first optimizer step;
* optimizer state: every tensor in `optimizer.state` once an optimizer step has run (Adam's
  moments; its step counters stay on the host unless `capturable`, and are left out);
* the batch, as `on_train_batch_start` receives it, and how many batches `MpDeviceLoader`
  keeps on the device ahead of the step (its `device_prefetch_size`);
* activations kept for backward: `torch.autograd.graph.saved_tensors_hooks` sees every tensor
  autograd saves during the step. A tensor saved twice (a ReLU's output is also the next
  layer's input) or a view of a saved tensor counts once, sized by the tensor it views;
  parameters, their views (a Linear saves `weight.t()`) and the batch are counted in their
  own parts. Saved tensors are freed as backward consumes them, so the peak is the largest set
  alive at once: every change is logged and the set at the peak is rebuilt at the end.

At the end of training, XLA's own sizes of every graph compiled so far are read from
torch_xla's analysis file (graphs.py turns it on: the "Post Compilation Analysis" lines that
`PT_XLA_DEBUG_LEVEL` >= 1 prints after each compile). On a TPU, `xm.get_memory_info` adds the
device's measured peak and limit.
Child process only: imports torch and torch_xla.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import re
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import torch
from tpulint.runtime.events import EventLog
from tpulint.runtime.tpu_layout import dtype_name, host_bytes

# The most distinct (shape, dtype) records sent per part; the rest is summed into one line.
_MAX_RECORDS = 400

_ACTIVE: MemoryProbe | None = None


def _active() -> MemoryProbe:
    if _ACTIVE is None:
        raise RuntimeError("no MemoryProbe in this process")
    return _ACTIVE


def _on_device(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == "xla"


def _root(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor whose memory a view shares (`_base` is always the outermost base)."""
    base = tensor._base if tensor._is_view() else None
    return base if base is not None else tensor


def _key(tensor: torch.Tensor) -> tuple[tuple[int, ...], str]:
    return tuple(int(d) for d in tensor.shape), dtype_name(tensor.dtype)


def _records(counts: Counter[tuple[tuple[int, ...], str]]) -> list[list[Any]]:
    """[[shape, dtype, count], ...], largest first; past _MAX_RECORDS one [[n], "uint8", 1]
    line carries the remaining bytes."""
    ordered = sorted(counts.items(), key=lambda item: -host_bytes(*item[0]) * item[1])
    records: list[list[Any]] = [
        [list(shape), dtype, count] for (shape, dtype), count in ordered[:_MAX_RECORDS]
    ]
    rest = sum(host_bytes(*key) * count for key, count in ordered[_MAX_RECORDS:])
    if rest:
        records.append([[rest], "uint8", 1])
    return records


def _tensors(value: Any, found: list[torch.Tensor], depth: int = 0) -> list[torch.Tensor]:
    """The tensors in a batch or an optimizer state (dicts, lists, tuples, dataclasses, nested:
    what Lightning's batch transfer walks)."""
    if isinstance(value, torch.Tensor):
        found.append(value)
    elif depth >= 6:
        return found
    elif isinstance(value, dict):
        for item in value.values():
            _tensors(item, found, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _tensors(item, found, depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            _tensors(getattr(value, item.name, None), found, depth + 1)
    return found


def _count(tensors: list[torch.Tensor]) -> Counter[tuple[tuple[int, ...], str]]:
    counts: Counter[tuple[tuple[int, ...], str]] = Counter()
    seen: set[int] = set()
    for tensor in tensors:
        if torch.nn.parameter.is_lazy(tensor):  # not materialized: no memory yet
            continue
        if _on_device(tensor) and id(tensor) not in seen:
            seen.add(id(tensor))
            counts[_key(tensor)] += 1
    return counts


class _Saved:
    """What the pack hook hands autograd in place of a tensor: the tensor, and a release of its
    count in the live set when autograd drops it (after backward used it)."""

    __slots__ = ("key", "saved", "tensor")

    def __init__(self, tensor: torch.Tensor, key: int, saved: _SavedTensors) -> None:
        self.tensor = tensor
        self.key = key
        self.saved = saved

    def __del__(self) -> None:
        self.saved.release(self.key)


class _SavedTensors:
    """The saved-tensor hooks of one step and the log of what they kept alive."""

    def __init__(self, excluded: set[int]) -> None:
        self.excluded = excluded  # ids of parameters, buffers and the batch
        self._lock = threading.Lock()
        self._alive: dict[int, int] = {}  # root id -> saved references alive
        self._log: list[tuple[int, tuple[tuple[int, ...], str] | None]] = []  # (id, key or None)
        self._bytes = 0
        self._peak = 0
        self._peak_at = 0  # entries of the log at the peak
        self._sizes: dict[int, int] = {}
        self.packed = 0
        self.seconds = 0.0  # spent in the pack hook
        self.closed = False
        self.hooks = torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)

    def pack(self, tensor: torch.Tensor) -> Any:
        started = time.perf_counter()
        try:
            return self._pack(tensor)
        except Exception:  # a tensor the probe cannot read: saved as autograd would
            return tensor
        finally:
            self.seconds += time.perf_counter() - started

    def _pack(self, tensor: torch.Tensor) -> Any:
        if not _on_device(tensor):
            return tensor
        root = _root(tensor)
        key = id(root)
        if key in self.excluded or id(tensor) in self.excluded:
            return tensor
        with self._lock:
            if self.closed:
                return tensor
            self.packed += 1
            count = self._alive.get(key, 0)
            self._alive[key] = count + 1
            if count == 0:
                shape_dtype = _key(root)
                size = host_bytes(*shape_dtype)
                self._sizes[key] = size
                self._log.append((key, shape_dtype))
                self._bytes += size
                if self._bytes > self._peak:
                    self._peak, self._peak_at = self._bytes, len(self._log)
        # A view keeps its root alive, so the id stays that tensor's while anything saved it.
        return _Saved(tensor, key, self)

    @staticmethod
    def unpack(packed: Any) -> Any:
        return packed.tensor if isinstance(packed, _Saved) else packed

    def release(self, key: int) -> None:
        with self._lock:
            if self.closed:
                return
            count = self._alive.get(key, 0) - 1
            if count > 0:
                self._alive[key] = count
                return
            self._alive.pop(key, None)
            self._log.append((key, None))
            self._bytes -= self._sizes.pop(key, 0)

    def peak(self) -> tuple[Counter[tuple[tuple[int, ...], str]], int]:
        """The set alive at the peak, rebuilt from the log, and its size in bytes as run."""
        with self._lock:
            self.closed = True
            alive: dict[int, tuple[tuple[int, ...], str]] = {}
            for key, shape_dtype in self._log[: self._peak_at]:
                if shape_dtype is None:
                    alive.pop(key, None)
                else:
                    alive[key] = shape_dtype
            return Counter(alive.values()), self._peak


_SIZES = {
    b"Graph input size": "input_bytes",
    b"Graph output size": "output_bytes",
    b"Aliased Input size": "aliased_bytes",
    b"Intermediate tensor size": "intermediate_bytes",
}
_SIZE_LINE = re.compile(
    rb"^Post Compilation Analysis: (" + b"|".join(_SIZES) + rb"): ([0-9.]+) GB$", re.MULTILINE
)


def post_compilation_sizes(data: bytes) -> list[dict[str, int]]:
    """Each compiled graph's sizes, in bytes, from the analysis file (one regex over the
    whole file: it also holds every execution, megabytes in a long run). torch_xla prints
    them in "GB" that are GiB, with 6 decimals (a 535,562-parameter float32 model with Adam:
    "Graph output size: 0.005985 GB", 3 x 2,142,248 bytes / 2^30)."""
    graphs: list[dict[str, int]] = []
    current: dict[str, int] = {}
    for match in _SIZE_LINE.finditer(data):
        field = _SIZES[match[1]]
        if field in current:  # the next graph's lines, without the end of this one's
            graphs.append(current)
            current = {}
        current[field] = round(float(match[2]) * (1 << 30))
        if len(current) == len(_SIZES):
            graphs.append(current)
            current = {}
    return graphs


def _prefetch_default() -> int | None:
    """How many batches each core's `MpDeviceLoader` queue holds on the device (torch_xla's
    ParallelLoader `device_prefetch_size`, which Lightning's XLA strategy leaves at its
    default), read from the installed torch_xla."""
    try:
        from torch_xla.distributed.parallel_loader import ParallelLoader

        default = inspect.signature(ParallelLoader.__init__).parameters["device_prefetch_size"]
        return int(default.default)
    except (ImportError, KeyError, TypeError, ValueError):
        return None


def _guarded(hook: Any) -> Any:
    """A failure of the probe is reported and ends the probing; it never fails the training
    (the estimate is one check among several, the run's other evidence stays)."""

    @functools.wraps(hook)
    def guarded(self: MemoryProbe, trainer: Any, *args: Any) -> None:
        try:
            hook(self, trainer, *args)
        except Exception as exc:
            self._failed(trainer, hook.__name__, exc)

    return guarded


class MemoryProbe:
    """A Lightning callback (made a subclass of the run's Callback class by `with_base`)."""

    def __init__(self, log: EventLog, measure_device: bool, analysis: Path | None = None) -> None:
        self.events = log
        self.analysis = analysis  # torch_xla's analysis file (graphs.DEBUG_FILE)
        self.measure_device = measure_device  # on a TPU: xm.get_memory_info
        self._lock = threading.Lock()
        self._local = threading.local()
        self._probing = False  # a replica thread is probing (rank 0's, once)
        self._done = False
        global _ACTIVE
        _ACTIVE = self

    def __deepcopy__(self, memo: dict[int, Any]) -> MemoryProbe:
        return self  # shared by the replicas' Trainer copies

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return _active, ()

    # --- hooks ------------------------------------------------------------------------

    @_guarded
    def on_train_batch_start(
        self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int
    ) -> None:
        if int(trainer.global_rank) != 0:
            return
        with self._lock:
            if self._probing or self._done:
                return
            self._probing = True
        started = time.perf_counter()
        state = self._local
        state.where = {"epoch": int(trainer.current_epoch), "batch_idx": int(batch_idx)}
        state.batches = 0
        batch_tensors = _tensors(batch, [])
        state.batch = _count(batch_tensors)
        state.gradients = None
        state.optimizer_state = None
        state.optimizers = []
        state.host_state = 0
        excluded = {id(t) for t in (*pl_module.parameters(), *pl_module.buffers())}
        excluded |= {id(t) for t in batch_tensors}
        state.saved = _SavedTensors(excluded)
        try:
            state.saved.hooks.__enter__()
        except RuntimeError as exc:  # disable_saved_tensors_hooks() in the user's code
            state.saved = None
            state.hooks_refused = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        else:
            state.hooks_refused = None
        state.seconds = time.perf_counter() - started

    @_guarded
    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        if not self._probes():
            return
        started = time.perf_counter()
        if self._local.gradients is None:
            self._local.gradients = _count(
                [p.grad for p in pl_module.parameters() if p.grad is not None]
            )
        self._local.stepped = True
        self._local.seconds += time.perf_counter() - started

    @_guarded
    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if not self._probes():
            return
        started = time.perf_counter()
        state = self._local
        state.batches += 1
        saved = getattr(state, "saved", None)
        if saved is not None and not saved.closed:
            saved.hooks.__exit__(None, None, None)
            state.activations, state.activation_peak = saved.peak()
            state.packed = saved.packed
            state.seconds += saved.seconds
        if getattr(state, "stepped", False) and state.optimizer_state is None:
            self._optimizer_state(trainer)
        state.seconds += time.perf_counter() - started
        # Under gradient accumulation the first optimizer step comes some batches later.
        if state.optimizer_state is not None or state.batches > 64:
            self._write(trainer, pl_module)

    @_guarded
    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        if self._probes():
            if getattr(self._local, "stepped", False) and self._local.optimizer_state is None:
                self._optimizer_state(trainer)
            self._write(trainer, pl_module)
        if int(trainer.global_rank) != 0:
            return
        if self.analysis is not None:
            started = time.perf_counter()
            try:
                graphs = post_compilation_sizes(self.analysis.read_bytes())
            except OSError:
                graphs = []
            # `sizes`, not `graphs`: judge/graphs.py takes any `graphs` for compile evidence.
            self.events.write(
                "xla_memory", sizes=graphs, seconds=round(time.perf_counter() - started, 4)
            )
        if self.measure_device:
            self._measure(pl_module, "train_end")

    # --- the parts --------------------------------------------------------------------

    def _probes(self) -> bool:
        """This thread is the one probing and has not written its event yet."""
        return getattr(self._local, "saved", False) is not False and not self._done

    def _optimizer_state(self, trainer: Any) -> None:
        tensors: list[torch.Tensor] = []
        names = []
        for optimizer in trainer.optimizers:
            names.append(type(optimizer).__name__)
            for state in getattr(optimizer, "state", {}).values():
                _tensors(state, tensors)
        self._local.optimizers = names
        self._local.host_state = sum(1 for t in tensors if not _on_device(t))
        self._local.optimizer_state = _count(tensors)

    def _write(self, trainer: Any, pl_module: Any) -> None:
        started = time.perf_counter()
        state = self._local
        self._done = True
        # After the step: lazy modules have materialized their parameters by now.
        state.parameters = _count([*pl_module.parameters(), *pl_module.buffers()])
        if state.gradients is None:  # no optimizer step in the run: the gradients as they are
            state.gradients = _count([p.grad for p in pl_module.parameters() if p.grad is not None])
        activations = getattr(state, "activations", None)
        self.events.write(
            "memory",
            rank=int(trainer.global_rank),
            **state.where,
            parameters=_records(state.parameters),
            gradients=_records(state.gradients),
            optimizer_state=_records(state.optimizer_state)
            if state.optimizer_state is not None
            else None,
            optimizers=state.optimizers,
            optimizer_state_on_host=state.host_state,
            batch=_records(state.batch),
            prefetch=_prefetch_default(),
            activations=_records(activations) if activations is not None else None,
            activation_peak_bytes=getattr(state, "activation_peak", None),
            saved_tensors=getattr(state, "packed", 0),
            hooks_refused=state.hooks_refused,
            xla_use_bf16=os.environ.get("XLA_USE_BF16") == "1",
            # The probe's own time in this replica (hooks, counting, this event).
            seconds=round(state.seconds + time.perf_counter() - started, 4),
        )
        if self.measure_device:
            self._measure(pl_module, "first_step")

    def _failed(self, trainer: Any, where: str, exc: BaseException) -> None:
        saved = getattr(self._local, "saved", None)
        if saved is not None and not saved.closed:
            saved.closed = True
            saved.hooks.__exit__(None, None, None)
        if not self._done:
            self._done = True
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            self.events.write(
                "memory_error", where=where, type=type(exc).__name__, message=message[:300]
            )

    def _measure(self, pl_module: Any, where: str) -> None:
        """The device's own figures (TPU only: PJRT CPU does not implement them)."""
        try:
            import torch_xla.core.xla_model as xm

            info = xm.get_memory_info(pl_module.device)
        except Exception as exc:  # a missing figure is reported, not fatal
            self.events.write("memory_measured", where=where, error=str(exc)[:200])
            return
        self.events.write(
            "memory_measured",
            where=where,
            **{k: int(v) for k, v in dict(info).items() if str(v).isdigit()},
        )


def install(log: EventLog, device: str, run_dir: str) -> MemoryProbe:
    """The callback to add to the Trainer; `device` is the backend's ("TPU" measures the HBM)."""
    from tpulint.runtime.child.graphs import DEBUG_FILE

    return MemoryProbe(log, measure_device=device != "CPU", analysis=Path(run_dir) / DEBUG_FILE)

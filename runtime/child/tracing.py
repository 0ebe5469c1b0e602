"""Per-line attribution of device-to-host transfers, data-dependent shapes and collectives.

A TorchFunctionMode sees every tensor method and torch function a replica thread calls. The
mode stack is thread-local, so each replica enters its own tracer; counts match torch_xla's
TransferFromDeviceTime exactly for explicit reads (research/runtime.md §3c). Only the ops of
interest pay for a stack walk. Child process only: imports torch.
"""

from __future__ import annotations

import functools
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from tpulint.runtime.child.ledger import Ledger
from tpulint.runtime.frames import entry_of, reader_of
from tpulint.runtime.xla_ops import python_names, runs_in_backward

Tensor = torch.Tensor

# Reading a value on the host: each call on an XLA tensor syncs (and may compile) the graph
# that produces it, then copies the result off the device.
_TRANSFERS: dict[Any, str] = {
    Tensor.item: "item",
    Tensor.tolist: "tolist",
    Tensor.cpu: "cpu",
    Tensor.numpy: "numpy",
    Tensor.__bool__: "bool",
    Tensor.__float__: "float",
    Tensor.__int__: "int",
    Tensor.__index__: "index",
    Tensor.__complex__: "complex",
    Tensor.__format__: "format",
    Tensor.__repr__: "repr",
    Tensor.__array__: "numpy",
    Tensor.__contains__: "contains",
}

# Ops whose output size depends on tensor values (TPU201, TPU205): XLA needs static shapes, so
# each new size is a new graph, and torch_xla computes the size on the host.
_SHAPE_OPS: dict[Any, str] = {
    torch.nonzero: "nonzero",
    Tensor.nonzero: "nonzero",
    torch.argwhere: "argwhere",
    Tensor.argwhere: "argwhere",
    torch.masked_select: "masked_select",
    Tensor.masked_select: "masked_select",
    torch.unique: "unique",
    Tensor.unique: "unique",
    torch.unique_consecutive: "unique_consecutive",
    Tensor.unique_consecutive: "unique_consecutive",
    torch.bincount: "bincount",
    Tensor.bincount: "bincount",
}


def _call(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return func(*args, **kwargs)  # the line right after the def: see _as_caller


_CALLERS: dict[tuple[str, int, str], Callable[..., Any]] = {}


def _as_caller(frame: types.FrameType) -> Callable[..., Any]:
    """`_call` dressed as the line that called the torch function. torch_xla records the
    innermost Python frame of every op it traces (XLA_IR_DEBUG, hlo_dump.py) as the op's
    source line; without this, every op the tracer passes on would be placed at the tracer's
    own `func(*args, **kwargs)` instead of the user's line. One code object per call site."""
    key = (frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
    caller = _CALLERS.get(key)
    if caller is None:
        code = _call.__code__.replace(
            co_filename=key[0],
            co_firstlineno=max(key[1] - 1, 0),  # the call is on the next line
            co_name=key[2],
            co_qualname=key[2],
        )
        # The caller's globals: code that looks at the calling frame (warnings' module name
        # and registry, builtins) sees the caller's module, as it would without the tracer.
        caller = _CALLERS[key] = types.FunctionType(code, frame.f_globals)
    return caller


def _is_xla(value: Any) -> bool:
    return isinstance(value, Tensor) and value.device.type == "xla"


def _has_bool_index(index: Any) -> bool:
    if isinstance(index, Tensor):
        return index.dtype in (torch.bool, torch.uint8)
    if isinstance(index, (tuple, list)):
        return any(isinstance(i, Tensor) and i.dtype in (torch.bool, torch.uint8) for i in index)
    return False


def _to_host_device(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    target = kwargs.get("device")
    if target is None and len(args) > 1:
        target = args[1]
    if isinstance(target, Tensor):
        target = target.device
    if isinstance(target, (str, torch.device)):
        return torch.device(target).type == "cpu"
    return False


def _shape(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, Tensor):
        return tuple(value.shape)
    if isinstance(value, (tuple, list)) and value and isinstance(value[0], Tensor):
        return tuple(value[0].shape)
    return None


class OpTracer(TorchFunctionMode):
    """Enter in a replica thread; records into the ledger bucket of that thread's replica."""

    def __init__(self, ledger: Ledger, uncached_compiles: Callable[[], int]) -> None:
        super().__init__()
        self.ledger = ledger
        self.uncached_compiles = uncached_compiles

    def __torch_function__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        try:
            op = _TRANSFERS.get(func)
            kind = None if op else _SHAPE_OPS.get(func)
        except TypeError:  # unhashable callables
            op = kind = None
        if op is None and func is Tensor.to and args and _to_host_device(args, kwargs):
            op = "to(cpu)"
        if op is None and kind is None:
            if func is Tensor.__getitem__ and len(args) > 1 and _has_bool_index(args[1]):
                kind = "boolean_mask"
            elif func is Tensor.__setitem__ and len(args) > 1 and _has_bool_index(args[1]):
                kind = "boolean_mask_assign"
            elif func is torch.where and len(args) == 1 and not kwargs:
                kind = "where_1arg"
            elif func in (torch.repeat_interleave, Tensor.repeat_interleave) and _tensor_repeats(
                args, kwargs
            ):
                kind = "repeat_interleave"
            else:
                return self._pass_through(func, args, kwargs, sys._getframe(1))
        if not args or not _is_xla(args[0]):
            return _as_caller(sys._getframe(1))(func, args, kwargs)
        site = self.ledger.code.site_of(sys._getframe(1))
        if op is not None:
            before = self.uncached_compiles()
            with _READING:
                result = _as_caller(sys._getframe(1))(func, args, kwargs)
            if site is not None:
                # Compiles during the read are the graph that produces the value (an implicit
                # sync); the process counter can also catch another replica's compile, which
                # at worst moves a compile between two replicas reading at the same line.
                reader = reader_of(sys._getframe(1), self.ledger.code)
                if reader is not None and (reader.path, reader.line) == (site.path, site.line):
                    reader = None
                self.ledger.transfer(op, site, self.uncached_compiles() - before, reader)
            return result
        result = _as_caller(sys._getframe(1))(func, args, kwargs)
        if site is not None:
            # The library function the user's line called (torchmetrics' metric, not the
            # torch.unique deep inside it): what the advice is about.
            reader = entry_of(sys._getframe(1), self.ledger.code) if site.user else None
            self.ledger.shape_op(
                kind, site, None if kind == "boolean_mask_assign" else _shape(result), reader
            )
        return result

    def _pass_through(
        self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], frame: types.FrameType
    ) -> Any:
        """Any other op, watched for two things torch_xla does in C++ with no Python call to
        see: running an op on the host (a CPU fallback: its `aten::*` counter grows; the ops
        learned from the counters at each step boundary are watched, by the Python names that
        run them, xla_ops.py), and reading a tensor back to use it as a number (a size, a
        count: `torch.zeros(n)`, `x.view(n, -1)` with `n` a device tensor), which grows
        `aten::_local_scalar_dense` as `.item()` does."""
        name = getattr(func, "__name__", "") or ""
        watched = self.ledger.fallback_counters.get(name.lstrip("_")) if name else None
        number = _integer_device_argument(func, args, kwargs)
        if not watched and not number:
            return _as_caller(frame)(func, args, kwargs)
        import torch_xla

        value = torch_xla._XLAC._xla_counter_value
        counters = [*(watched or ()), *((_SCALAR_READ,) if number else ())]
        before = {c: value(c) or 0 for c in counters}
        compiles = self.uncached_compiles() if number else 0
        reading = _READING.active
        result = _as_caller(frame)(func, args, kwargs)
        site = None
        for counter in watched or ():
            # An op that runs in the backward has no frame of its own: its place is the
            # forward call (every call of it is one, whether its backward falls back or not).
            if (value(counter) or 0) > before[counter] or runs_in_backward(counter):
                site = site or self.ledger.code.site_of(frame)
                if site is not None:
                    self.ledger.fallback(counter, site)
        # Another replica's explicit read at the same moment also grows the counter: then
        # this read cannot be told apart, and is left to the unattributed ones.
        grew = number and (value(_SCALAR_READ) or 0) > before[_SCALAR_READ]
        if grew and not reading and not _READING.active:
            site = site or self.ledger.code.site_of(frame)
            if site is not None:
                reader = reader_of(frame, self.ledger.code)
                if reader is not None and (reader.path, reader.line) == (site.path, site.line):
                    reader = None
                compiled = self.uncached_compiles() - compiles
                self.ledger.transfer(f"{name} (a tensor as a number)", site, compiled, reader)
        return result


_SCALAR_READ = "aten::_local_scalar_dense"  # a read into a C++ number (.item() and friends)
_INTEGERS = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool)


class _ReadsInFlight:
    """How many explicit reads (`.item()`, `int(t)`...) the replica threads are in."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    @property
    def active(self) -> bool:
        return self._count > 0

    def __enter__(self) -> None:
        with self._lock:
            self._count += 1

    def __exit__(self, *exc: Any) -> None:
        with self._lock:
            self._count -= 1


_READING = _ReadsInFlight()


def _small_integer(value: Any) -> bool:
    return (
        isinstance(value, Tensor)
        and value.dtype in _INTEGERS
        and value.dim() == 0
        and value.device.type == "xla"
    )


def _integer_device_argument(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """An integer scalar on the device given where a number goes (a size, a count, an index
    range): torch reads it back in C++. A method's own tensor (`self`) is not such a place."""
    qualname = getattr(func, "__qualname__", "") or ""
    start = 1 if qualname.startswith(("Tensor.", "TensorBase.", "_TensorBase.")) else 0
    for value in (*args[start:], *kwargs.values()):
        if _small_integer(value):
            return True
        if isinstance(value, (tuple, list)) and any(_small_integer(v) for v in value):
            return True
    return False


def fallback_name(counter: str) -> tuple[str, ...]:
    """The Python names that run an `aten::*` op (xla_ops.py): `aten::median.dim_values` ->
    median; `aten::upsample_nearest2d_backward` -> interpolate (its forward); ..."""
    return tuple(name.lstrip("_") for name in python_names(counter))


def _tensor_repeats(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    repeats = kwargs.get("repeats", args[1] if len(args) > 1 else None)
    return isinstance(repeats, Tensor) and repeats.numel() > 1 and kwargs.get("output_size") is None


_COLLECTIVES = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "collective_broadcast",
    "collective_permute",
)


def _tensor_shapes(value: Any, limit: int = 4) -> list[list[int]]:
    """Shapes of the first few tensors in a collective's arguments (the evidence when
    replicas enter the 'same' collective with different graphs)."""
    found: list[list[int]] = []

    def visit(item: Any) -> None:
        if len(found) >= limit:
            return
        if isinstance(item, Tensor):
            found.append(list(item.shape))
        elif isinstance(item, (list, tuple)):
            for element in item:
                visit(element)

    visit(value)
    return found


def record_collectives(ledger: Ledger) -> None:
    """Wrap torch_xla's collectives to record which replica entered which, from where, with
    which shapes. Installed after the CPU workarounds, so it sees the call as the user made it."""
    import torch_xla.core.xla_model as xm

    for name in _COLLECTIVES:
        original = getattr(xm, name, None)
        if original is None:
            continue

        def make(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(original)
            def recorded(*args: Any, **kwargs: Any) -> Any:
                # The user's line, else the library function that is not mere plumbing
                # (Lightning's gradient all-reduce rather than torch_xla's helper).
                caller = sys._getframe(1)
                site = ledger.code.site_of(caller, fallback=False) or reader_of(caller, ledger.code)
                ledger.collective(name, site, _tensor_shapes((args, tuple(kwargs.values()))))
                return original(*args, **kwargs)

            return recorded

        setattr(xm, name, make(name, original))

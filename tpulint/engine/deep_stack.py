"""Running the engine on deeply nested code: one thread with a large stack and a raised
recursion limit.

libcst recurses once per level of nesting, in three places: its native parser (on the C
stack), its code generation and its transformers (Python frames, several per level). A
500-term `a + b + ...` chain is 500 nested `BinaryOperation` nodes, beyond Python's default
limit of 1,000 frames; a 10,000-term `a and b and ...` chain, which CPython compiles, overflows
the native parser's stack in a process's main thread (8 MB) and kills the process. An
iterative walk of tpulint's own would not help: tpulint's walks are iterative already, and the
recursion that fails is libcst's.

So the engine runs each file's work on one long-lived thread per process with a large stack
(`STACK_BYTES` of address space, of which only the pages deep code touches are committed),
while the recursion limit is raised to `RECURSION_LIMIT`. The thread is reused: a new thread
per file cost 11% more CPU on ordinary code (fresh stack pages fault in for every file),
a reused one about 1% (bench/deep_expressions.py). What still does not fit raises `TooDeep`,
which the engine reports as TPL004.

The recursion limit is process-wide: it is raised while a call runs (one at a time, under a
lock) and restored afterwards; the calling thread only waits meanwhile. After a fork the child
starts its own thread when it first needs one.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

STACK_BYTES = 1 << 30  # 1 GiB of address space; smaller ones are tried if the system refuses
RECURSION_LIMIT = 400_000  # Python frames; measured under 1 KiB of C stack each in libcst
_FALLBACK_STACKS = (256 << 20, 64 << 20)


class TooDeep(Exception):
    """The code is nested too deeply to analyse even on the large stack."""


class _Request:
    __slots__ = ("args", "done", "error", "function", "kwargs", "value")

    def __init__(self, function: Callable[..., Any], args: tuple, kwargs: dict) -> None:
        self.function = function
        self.args = args
        self.kwargs = kwargs
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None


class _DeepThread:
    """The process's large-stack thread and its request queue."""

    def __init__(self) -> None:
        self.requests: queue.SimpleQueue[_Request] = queue.SimpleQueue()
        self.thread = self._start()

    def _start(self) -> threading.Thread | None:
        previous = threading.stack_size()
        try:
            for size in (STACK_BYTES, *_FALLBACK_STACKS):
                try:
                    threading.stack_size(size)
                    thread = threading.Thread(target=self._serve, name="tpulint-deep", daemon=True)
                    thread.start()
                    return thread
                except (RuntimeError, ValueError, MemoryError):
                    continue
            return None
        finally:
            threading.stack_size(previous)

    def _serve(self) -> None:
        _local.inside = True
        while True:
            request = self.requests.get()
            try:
                request.value = request.function(*request.args, **request.kwargs)
            except BaseException as exc:  # handed to the caller's thread
                request.error = exc
            finally:
                request.done.set()
                del request


_local = threading.local()
_lock = threading.Lock()
_deep: _DeepThread | None = None
_deep_pid = 0


def _get_deep() -> _DeepThread:
    global _deep, _deep_pid
    if _deep is None or _deep_pid != os.getpid():  # none yet, or inherited through fork
        _deep, _deep_pid = _DeepThread(), os.getpid()
    return _deep


def call_deep(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`function(*args, **kwargs)` on the large-stack thread with a raised recursion limit.

    Exceptions propagate; a RecursionError becomes TooDeep. Calls made from inside a deep
    call run directly."""
    if getattr(_local, "inside", False):
        return function(*args, **kwargs)
    with _lock:
        deep = _get_deep()
        limit = sys.getrecursionlimit()
        if deep.thread is None:
            # No thread could be started (a tight address-space limit): run here, with the
            # normal limit, and report what does not fit.
            try:
                return function(*args, **kwargs)
            except RecursionError as exc:
                raise TooDeep("nested too deeply for the available stack") from exc
        request = _Request(function, args, kwargs)
        sys.setrecursionlimit(max(limit, RECURSION_LIMIT))
        try:
            deep.requests.put(request)
            request.done.wait()
        finally:
            sys.setrecursionlimit(limit)
    error = request.error
    if error is not None:
        request.error = None
        if isinstance(error, RecursionError):
            raise TooDeep("nested more deeply than tpulint's parser can follow") from error
        raise error
    return request.value

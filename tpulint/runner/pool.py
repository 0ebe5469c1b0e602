"""The runner's worker processes: files analysed in parallel, a crash confined to its file, and
no worker outliving tpulint.

Why not `concurrent.futures.ProcessPoolExecutor`: when one worker dies (a segfault in a native
parser, the kernel's out-of-memory killer), the executor fails every pending task, so one file
would end the whole run without saying which file it was; and when tpulint itself is killed
(SIGTERM or SIGKILL from an editor, pre-commit or a CI time-out), its workers stay blocked on
their queue forever.

Here each worker has its own pipe and works on one batch at a time, sending a result per
item, so the parent always knows which item a dead worker was on: that item is reported
through `on_crash`, the rest of its batch goes back to the queue, and a new worker takes its
place. An item whose function raises is reported through `on_crash` too (with the exception's
one-line description), by the worker itself, which goes on with its batch: no traceback is
printed and nothing else is lost. A worker exits when its parent dies: at once on Linux (the
kernel sends it SIGKILL, `PR_SET_PDEATHSIG`), elsewhere within a second (a thread watches the
parent's pid), and in any case as soon as it next talks to its parent (the pipe is closed).
Workers ignore SIGINT: on Ctrl-C the parent stops them.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

_PR_SET_PDEATHSIG = 1
_BATCH_DONE = -1


@dataclass(frozen=True)
class _Raised:
    """What a worker sends for an item whose function raised."""

    why: str


def describe_exception(exc: BaseException) -> str:
    """An exception in one line, with where it was raised: `TypeError: ... (at x.py:12)`."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _context() -> Any:
    # fork starts workers in milliseconds and shares the loaded rules; elsewhere spawn.
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _die_with_parent(parent_pid: int) -> None:
    """Make this process exit when `parent_pid` does."""
    armed = False
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)
    if armed:
        return

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="tpulint-parent-watch", daemon=True).start()


def _worker_main(
    conn: Connection,
    inherited: Sequence[Connection],
    parent_pid: int,
    initializer: Callable[..., None] | None,
    initargs: tuple[Any, ...],
) -> None:
    _die_with_parent(parent_pid)
    # Forked workers inherit the parent's ends of the other workers' pipes (and of their own):
    # closed, so that the parent's death closes every pipe a worker reads.
    for other in inherited:
        with contextlib.suppress(OSError):
            other.close()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if initializer is not None:
        initializer(*initargs)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            os._exit(0)  # the parent is gone
        if message is None:
            return
        task_id, function, items, extra = message
        for index, item in enumerate(items):
            try:
                result = function(item, *extra)
            except Exception as exc:  # reported for this item; the batch goes on
                result = _Raised(describe_exception(exc))
            try:
                conn.send((task_id, index, result))
            except OSError:
                os._exit(0)
        try:
            conn.send((task_id, _BATCH_DONE, None))
        except OSError:
            os._exit(0)


@dataclass
class _Worker:
    process: Any
    conn: Connection
    task: tuple[int, list[Any]] | None = None  # (task id, items) in flight
    received: int = 0  # results received for the task in flight


@dataclass
class Pool(Generic[Item, Result]):
    """Runs `function(item, *extra)` over items in `jobs` worker processes."""

    jobs: int
    initializer: Callable[..., None] | None = None
    initargs: tuple[Any, ...] = ()
    workers: list[_Worker] = field(default_factory=list)

    def _start_worker(self) -> _Worker:
        context = _context()
        parent_end, child_end = context.Pipe(duplex=True)
        forked = context.get_start_method() == "fork"
        inherited = [w.conn for w in self.workers] + [parent_end] if forked else []
        process = context.Process(
            target=_worker_main,
            args=(child_end, inherited, os.getpid(), self.initializer, self.initargs),
            daemon=True,
            name="tpulint-worker",
        )
        process.start()
        child_end.close()
        worker = _Worker(process, parent_end)
        self.workers.append(worker)
        return worker

    def map(
        self,
        function: Callable[..., Result],
        batches: Sequence[list[Item]],
        extra: tuple[Any, ...] = (),
        on_crash: Callable[[Item, str], Result] | None = None,
        on_started: Callable[[], None] | None = None,
    ) -> Iterator[Result]:
        """Results as they come, one per item. An item whose function raised, or during which
        its worker died, yields `on_crash(item, why)` (without `on_crash`, RuntimeError); the
        other items of its batch are still processed.
        `on_started` is called once the workers have been started."""
        queue: deque[list[Item]] = deque(b for b in batches if b)
        next_id = 0
        try:
            while len(self.workers) < min(self.jobs, len(queue)):
                self._start_worker()
            if on_started is not None:
                on_started()
            while queue or any(w.task is not None for w in self.workers):
                for worker in list(self.workers):
                    if worker.task is None and queue:
                        items = queue.popleft()
                        try:
                            worker.conn.send((next_id, function, items, extra))
                        except OSError:  # it died while idle: nothing of its own was lost
                            queue.appendleft(items)
                            self._discard(worker)
                            self._start_worker()
                            continue
                        worker.task, worker.received = (next_id, items), 0
                        next_id += 1
                busy = [w for w in self.workers if w.task is not None]
                ready = wait([w.conn for w in busy] + [w.process.sentinel for w in busy])
                for worker in busy:
                    if worker.conn in ready:
                        yield from self._receive(worker, on_crash)
                for worker in busy:
                    if worker.task is not None and worker.process.sentinel in ready:
                        yield from self._receive(worker, on_crash)  # sent before dying
                        if worker.task is not None:
                            yield from self._replace(worker, queue, on_crash)
        except BaseException:
            self.terminate()
            raise

    def _receive(
        self, worker: _Worker, on_crash: Callable[[Item, str], Result] | None
    ) -> Iterator[Result]:
        assert worker.task is not None
        task_id, items = worker.task
        try:
            while worker.conn.poll():
                got_id, index, result = worker.conn.recv()
                if got_id != task_id:
                    continue
                if index == _BATCH_DONE:
                    worker.task = None
                    return
                worker.received = index + 1
                if isinstance(result, _Raised):
                    if on_crash is None:
                        raise RuntimeError(f"a worker's task raised {result.why}")
                    yield on_crash(items[index], result.why)
                else:
                    yield result
        except (EOFError, OSError):
            return  # the worker died: its sentinel says so, handled by the caller

    def _replace(
        self,
        worker: _Worker,
        queue: deque[list[Item]],
        on_crash: Callable[[Item, str], Result] | None,
    ) -> Iterator[Result]:
        """The worker died during its task: report the item it was on, requeue the rest."""
        assert worker.task is not None
        _, items = worker.task
        why = self._discard(worker)
        rest = items[worker.received + 1 :]
        if rest:
            queue.appendleft(rest)
        if queue:
            self._start_worker()
        if worker.received >= len(items):
            return  # it died after its last result: nothing was lost
        if on_crash is None:
            raise RuntimeError(f"a worker process died ({why})")
        yield on_crash(items[worker.received], why)

    def _discard(self, worker: _Worker) -> str:
        """Forget a dead worker; how it ended."""
        worker.process.join(timeout=5)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join(timeout=5)
        with contextlib.suppress(OSError):
            worker.conn.close()
        self.workers.remove(worker)
        return _describe_exit(worker.process.exitcode)

    def close(self) -> None:
        """Ask idle workers to exit, wait for them briefly, then stop what remains."""
        for worker in self.workers:
            with contextlib.suppress(OSError):
                worker.conn.send(None)
        deadline = time.monotonic() + 5
        for worker in self.workers:
            worker.process.join(timeout=max(0.0, deadline - time.monotonic()))
        self.terminate()

    def terminate(self) -> None:
        for worker in self.workers:
            if worker.process.is_alive():
                worker.process.kill()
        for worker in self.workers:
            worker.process.join(timeout=5)
            with contextlib.suppress(OSError):
                worker.conn.close()
        self.workers.clear()

    def __enter__(self) -> Pool[Item, Result]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "it stopped responding"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (often the out-of-memory killer)" if -code == signal.SIGKILL else ""
        return f"killed by {name}{hint}"
    return f"exit status {code}"

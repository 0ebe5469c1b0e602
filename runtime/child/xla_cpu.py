"""Data parallelism across N emulated cores on PJRT CPU (one process, one thread per core).

Out of the box every XLA:CPU collective across replica threads aborts the process after 10 s
("rendezvous.cc ... Termination timeout for all reduce"). What causes it and what avoids it
was established by running it (../shared/research/runtime.md §1c, §5) on torch_xla 2.9:

* XLA:CPU identifies a collective by the HloModule's unique id. Two threads that compile the
  same graph separately (a cache race) or compile ordinal-dependent graphs wait on different
  ids. Fix: one thread at a time through the step marker (one compile, the rest hit the
  shared cache), an ordinal-independent all_gather, and collectives always compiled through
  that locked marker.
* A replica that leaves the step marker and blocks in C++ while holding the GIL keeps the
  others from scheduling their half of the collective. Fix: a barrier after the marker, so
  every replica has scheduled its execution before anyone continues.
* A barrier before the marker too: no replica compiles the next step's graphs while another
  is still finishing its row for this one, so the process's evidence is read between steps
  (evidence.py), as it is on a TPU VM where each process holds one core.

The barriers wait as long as it takes: a replica that never arrives leaves the others
waiting, as a TPU core waits in a collective; the verify parent finds them from their stacks
(runtime/monitor.py). `abort()` releases them when a replica fails.
* The execution pool size and buffer donation are environment settings
  (environment.child_environment).

None of this is applied on a real TPU. Child process only: imports torch_xla.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from typing import Any

from tpulint.runtime.environment import EMULATION_TORCH_XLA, INSTALL_HINT
from tpulint.runtime.errors import ReplicasOutOfStep, VerifyError

_COLLECTIVES = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "collective_broadcast",
    "collective_permute",
)

# Called inside the locked step marker with the number of graphs the calling replica compiled.
MarkerHook = Callable[[int], None]


def _current_rank() -> int | None:
    try:
        import torch_xla.runtime as xr

        return xr.global_ordinal()
    except Exception:  # only for a message
        return None


def check_torch_xla_version() -> str:
    import torch_xla

    version = torch_xla.__version__
    if not (version == EMULATION_TORCH_XLA or version.startswith(EMULATION_TORCH_XLA + ".")):
        raise VerifyError(
            f"TPU emulation on CPU supports torch_xla {EMULATION_TORCH_XLA}.x only, found"
            f" {version}: {INSTALL_HINT} (or run on a TPU VM)"
        )
    return version


class CpuDataParallel:
    """Installs the workarounds for `replicas` threads in each replica process.

    The barriers assume every replica calls the step marker equally often, which data-parallel
    training does; `abort()` breaks them when a replica fails, so the others stop waiting.
    With `collectives=False` (the cores' collectives go through the bridge, between
    processes), only the step marker is serialized.
    """

    def __init__(
        self,
        replicas: int,
        ledger_hook: MarkerHook | None = None,
        *,
        collectives: bool = True,
    ) -> None:
        self.replicas = replicas
        self.on_marker = ledger_hook
        self.collectives = collectives
        self._lock = threading.Lock()
        self._barrier = self._new_barrier()
        self._installed = False
        self._aborted = False
        os.register_at_fork(after_in_child=self._after_fork)

    def _new_barrier(self) -> threading.Barrier | None:
        if self.replicas <= 1:
            return None
        return threading.Barrier(self.replicas)

    def _after_fork(self) -> None:
        # Lightning forks the replica process from the child; start it with fresh primitives.
        self._lock = threading.Lock()
        self._barrier = self._new_barrier()

    def install(self) -> None:
        if self._installed:
            return
        self._install_serialized_step_marker()
        if self.collectives:
            self._install_unpinned_all_gather()
            self._install_synced_collectives()
        self._installed = True

    def abort(self) -> None:
        self._aborted = True
        if self._barrier is not None:
            self._barrier.abort()

    def _wait(self, where: str) -> None:
        barrier = self._barrier
        if barrier is None:
            return
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            raise ReplicasOutOfStep(_current_rank(), where, 0.0, released=True) from None

    def _install_serialized_step_marker(self) -> None:
        import torch_xla

        xlac = torch_xla._XLAC
        original = xlac._xla_step_marker

        def step_marker(
            device: str = "", devices: Any = (), wait: bool = True, reset_scope: bool = True
        ) -> None:
            self._wait("a step marker (torch_xla.sync)")
            with self._lock:
                before = xlac._xla_counter_value("UncachedCompile") or 0
                # wait=False inside the lock: waiting for a collective here would keep the
                # other replicas from reaching it.
                original(device, list(devices), wait=False, reset_scope=reset_scope)
                compiled = (xlac._xla_counter_value("UncachedCompile") or 0) - before
            if self.on_marker is not None and compiled:
                # Compilation is synchronous inside the marker and only this thread is in it,
                # so these compiles are this replica's.
                self.on_marker(compiled)
            self._wait("a step marker (torch_xla.sync)")
            if wait:
                xlac._xla_wait_device_ops(devices=[device] if device else [])

        xlac._xla_step_marker = step_marker

    @staticmethod
    def _install_unpinned_all_gather() -> None:
        # all_gather(pin_layout=True), the default and what xm.rendezvous uses, pads the value
        # at offset=ordinal: a different graph, hence a different collective id, per replica.
        import torch_xla.core.xla_model as xm

        original = xm.all_gather

        @functools.wraps(original)
        def all_gather(value: Any, *args: Any, **kwargs: Any) -> Any:
            kwargs["pin_layout"] = False
            if len(args) >= 4:  # (dim, groups, output, pin_layout, ...) positionally
                args = (*args[:3], False, *args[4:])
                kwargs.pop("pin_layout")
            return original(value, *args, **kwargs)

        xm.all_gather = all_gather

    @staticmethod
    def _install_synced_collectives() -> None:
        # Materialize pending per-replica work before a collective and the collective right
        # after it, both through the locked marker: a graph with a collective is then never
        # compiled by an implicit sync racing in N threads, and replica-specific graphs (data
        # dependent shapes) never contain the collective.
        import torch_xla
        import torch_xla.core.xla_model as xm

        for name in _COLLECTIVES:
            original = getattr(xm, name, None)
            if original is None:
                continue

            def make(original: Callable[..., Any]) -> Callable[..., Any]:
                @functools.wraps(original)
                def synced(*args: Any, **kwargs: Any) -> Any:
                    torch_xla.sync()
                    result = original(*args, **kwargs)
                    torch_xla.sync()
                    return result

                return synced

            setattr(xm, name, make(original))

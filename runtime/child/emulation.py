"""A TPU VM's process layout reproduced on PJRT CPU (`tpulint verify --emulate v4-8`).

On a TPU VM torch_xla runs one process per chip with one thread per device in each
(`_internal/pjrt.py` `run_multiprocess`: `tpu.num_local_processes()` processes, and
`_run_thread_per_device` in each); on PJRT CPU it runs one process (`run_multiprocess` takes
1 when the device is CPU, and `plugins.using_dynamic_plugins()` is False for CPU by design).
To run the same layout here, `run_multiprocess` is replaced by one that starts P processes,
each with its own PJRT CPU client of D devices (`CPU_NUM_DEVICES=D`), and, in those processes
only, the runtime's view of the topology is the emulated one: `xr.world_size()` is P x D,
`xr.global_ordinal()` is local rank x D + the device's index, `xr.process_index()` and
`xr.process_count()` are the process's and P. Lightning reads its ranks from those
(`XLAEnvironment`), so its sampler, its launcher and its strategy behave as on the TPU VM.

The processes cannot share XLA collectives (bridge.py says why); they exchange through the
bridge. Nothing here is installed on a real TPU. Child process only: imports torch_xla.
"""

from __future__ import annotations

import concurrent.futures
import functools
import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

R = TypeVar("R")


@dataclass(frozen=True)
class ProcessLayout:
    processes: int
    devices_per_process: int

    @property
    def cores(self) -> int:
        return self.processes * self.devices_per_process


# The layout of this run (set in the verify child before Lightning launches), and this
# process's local rank once it is one of the emulated processes (None in the launcher).
_LAYOUT: ProcessLayout | None = None
_PROCESS: int | None = None


def emulated_process() -> int | None:
    """This process's local rank among the emulated processes, or None."""
    return _PROCESS


def _initialize(local_rank: int, local_world_size: int) -> None:
    """What `initialize_multiprocess` does on CPU, for one of the emulated processes."""
    global _PROCESS
    import torch_xla
    import torch_xla.core.xla_env_vars as xenv
    import torch_xla.core.xla_model as xm

    os.environ[xenv.PJRT_LOCAL_PROCESS_RANK] = str(local_rank)
    os.environ[xenv.PJRT_LOCAL_PROCESS_COUNT] = str(local_world_size)
    _PROCESS = local_rank
    devices = xm.get_xla_supported_devices()
    xm.set_replication(torch_xla.device(), devices)


def _run_process(local_rank: int, fn: Callable[[], R]) -> dict[int, R]:
    """One emulated process: a thread per device, results keyed by global ordinal."""
    from torch_xla._internal import pjrt

    assert _LAYOUT is not None
    results = pjrt._run_thread_per_device(
        local_rank, _LAYOUT.processes, fn, initializer_fn=_initialize
    )
    offset = local_rank * _LAYOUT.devices_per_process
    return {offset + ordinal: value for ordinal, value in results.items()}


def _run_multiprocess(
    fn: Callable[..., R], *args: Any, start_method: str = "spawn", **kwargs: Any
) -> dict[int, R]:
    """`pjrt.run_multiprocess` with the emulated number of processes."""
    import torch
    import torch_xla
    from torch_xla._internal import pjrt

    if torch_xla._XLAC._xla_runtime_is_initialized():
        raise RuntimeError(
            "Runtime is already initialized. Do not use the XLA device before calling xmp.spawn."
        )
    assert _LAYOUT is not None
    with concurrent.futures.ProcessPoolExecutor(
        max_workers=_LAYOUT.processes,
        mp_context=torch.multiprocessing.get_context(start_method),
    ) as executor:
        run = functools.partial(_run_process, fn=functools.partial(fn, *args, **kwargs))
        process_results = executor.map(run, range(_LAYOUT.processes))
        replica_results = list(
            itertools.chain.from_iterable(result.items() for result in process_results)
        )
    return pjrt._merge_replica_results(replica_results)


def _topology_functions(layout: ProcessLayout) -> dict[str, Callable[..., Any]]:
    import torch_xla

    def device_index() -> int:
        return int(torch_xla._XLAC._xla_get_default_device_ordinal())

    assert layout is not None
    return {
        "world_size": lambda: layout.cores,
        "global_ordinal": lambda: _PROCESS * layout.devices_per_process + device_index(),  # type: ignore[operator]
        "process_index": lambda: _PROCESS,
        "process_count": lambda: layout.processes,
        "global_device_count": lambda: layout.cores,
        "global_runtime_device_count": lambda: layout.cores,
    }


def install(layout: ProcessLayout) -> None:
    """Launch `layout.processes` processes instead of one, and make the runtime report the
    emulated topology inside them (the launcher process keeps the real one: `--cores 1`
    trains there, on one device, as Lightning's SingleDeviceXLAStrategy does)."""
    global _LAYOUT
    import torch_xla.runtime as xr
    from torch_xla._internal import pjrt

    _LAYOUT = layout
    pjrt.run_multiprocess = _run_multiprocess
    for name, emulated in _topology_functions(layout).items():
        original = getattr(xr, name)

        def choose(
            *args: Any,
            _original: Callable[..., Any] = original,
            _emulated: Callable[[], Any] = emulated,
            **kwargs: Any,
        ) -> Any:
            return _original(*args, **kwargs) if _PROCESS is None else _emulated()

        setattr(xr, name, functools.wraps(original)(choose))

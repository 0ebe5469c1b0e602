"""Which XLA backend verify runs on, whether its packages are installed, and the environment
the child process needs. Standard library only: the parent process must not import torch_xla.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass

from tpulint.runtime.errors import VerifyError

INSTALL_HINT = "pip install 'tpulint[xla]'"
# The CPU-emulation workarounds (xla_cpu.py) patch torch_xla internals whose behaviour was
# established on 2.9.x only (../shared/research/runtime.md); other versions are refused.
EMULATION_TORCH_XLA = "2.9"
EMULATED_DEFAULT_CORES = 8
# The child's copy of the pipe whose other end the parent holds (child/lifetime.py).
PARENT_FD_VARIABLE = "TPULINT_PARENT_FD"
# Every emulated core, in all processes (a process of an emulated TPU VM layout holds only
# CPU_NUM_DEVICES of them; child/accelerator.py).
EMULATED_CORES = "TPULINT_EMULATED_CORES"

# Environment variables that change what the counters count; the child runs without them.
_DISTORTING_VARIABLES = ("PT_XLA_DEBUG", "PT_XLA_DEBUG_LEVEL", "XLA_IR_DEBUG", "XLA_HLO_DEBUG")


@dataclass(frozen=True)
class Backend:
    """Where replicas run: real TPU cores, or N emulated cores on PJRT CPU."""

    device: str  # "TPU" or "CPU"

    @property
    def emulated(self) -> bool:
        return self.device == "CPU"


def tpu_chips_present() -> bool:
    from tpulint.runtime.topology import tpu_chips

    return bool(tpu_chips())


def detect_backend(environ: Mapping[str, str] = os.environ) -> Backend:
    """TPU when the user asked for it (PJRT_DEVICE=TPU) or TPU chips are attached and the user
    did not pick another device; PJRT CPU emulation everywhere else (CI, laptops)."""
    requested = environ.get("PJRT_DEVICE", "").upper()
    if requested == "TPU":
        return Backend("TPU")
    if not requested and tpu_chips_present():
        return Backend("TPU")
    return Backend("CPU")


def installed_version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def check_installation(backend: Backend) -> dict[str, str]:
    """The versions of torch, torch_xla and lightning, or a VerifyError that says how to get them.

    Looks packages up without importing them (importing torch_xla takes seconds and would
    initialize state the child must set up itself)."""
    missing = [
        name
        for name in ("torch", "torch_xla", "lightning")
        if importlib.util.find_spec(name) is None
    ]
    if missing:
        raise VerifyError(
            f"verify needs {', '.join(missing)}, which {'is' if len(missing) == 1 else 'are'}"
            f" not installed: {INSTALL_HINT}"
        )
    versions = {
        name: installed_version(name) or "unknown" for name in ("torch", "torch_xla", "lightning")
    }
    if backend.emulated and not _same_minor(versions["torch_xla"], EMULATION_TORCH_XLA):
        raise VerifyError(
            f"TPU emulation on CPU supports torch_xla {EMULATION_TORCH_XLA}.x only, found"
            f" {versions['torch_xla']}: {INSTALL_HINT} (or run on a TPU VM)"
        )
    return versions


def _same_minor(version: str, minor: str) -> bool:
    return version == minor or version.startswith(minor + ".")


def child_environment(
    backend: Backend,
    cores: int | None,
    base: Mapping[str, str] = os.environ,
    layout: list[int] | None = None,
) -> dict[str, str]:
    """The environment of the child: PJRT settings must be in place before torch_xla
    initializes. `layout`: the emulated [processes, devices per process], if not threads."""
    env = {k: v for k, v in base.items() if k not in _DISTORTING_VARIABLES}
    env["PJRT_DEVICE"] = backend.device
    # Unbuffered, so the last lines before an XLA abort reach the log the parent reads.
    env["PYTHONUNBUFFERED"] = "1"
    if backend.emulated:
        total = (layout[0] * layout[1]) if layout else (cores or EMULATED_DEFAULT_CORES)
        count = layout[1] if layout else total  # devices in each process
        env[EMULATED_CORES] = str(total)
        env["CPU_NUM_DEVICES"] = str(count)
        # torch_xla runs executions on a pool of hardware_concurrency() threads; every replica
        # blocks in the collective rendezvous until all N have arrived, so the pool must hold
        # N blocked executions or the run deadlocks (N=8 on 2 cores does).
        wanted = max(2 * count, 8)
        current = base.get("XLA_THREAD_POOL_SIZE", "")
        if not current.isdigit() or int(current) < wanted:
            env["XLA_THREAD_POOL_SIZE"] = str(wanted)
        # Releasing a donated buffer waits for the collective that uses it; with donation on,
        # a replica holding the compile lock or the GIL deadlocks the others. Off on CPU only.
        env["XLA_ENABLE_PARAM_ALIASING"] = "0"
    return env

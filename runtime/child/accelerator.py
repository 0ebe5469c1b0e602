"""The Lightning accelerator for the backend, so that Lightning's own XLAStrategy, sampler
injection, MpDeviceLoader and XLA precision plugin are what runs.

On a TPU VM that is Lightning's `XLAAccelerator` ("tpu"). On PJRT CPU, XLAAccelerator refuses
to run (it scans PCI for TPU chips and asks the GCE metadata server for the TPU version), and
`accelerator="cpu", strategy="xla"` fails in every replica ("Device should be CPU, got xla:0").
A small subclass that accepts PJRT CPU devices makes the connector pick XLAStrategy itself
(../shared/research/runtime.md §2). Child process only: imports lightning.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import torch
from lightning.pytorch.accelerators import XLAAccelerator
from tpulint.runtime.child.flavour import LIGHTNING, Flavour, flavour
from tpulint.runtime.environment import EMULATED_CORES


def _cpu_devices() -> int:
    """The emulated cores: every process's devices together (environment.EMULATED_CORES; a
    process of an emulated TPU VM layout holds only CPU_NUM_DEVICES of them)."""
    return int(os.environ.get(EMULATED_CORES, os.environ.get("CPU_NUM_DEVICES", "1")))


class _EmulatedDevices:
    """The overrides that make an XLAAccelerator (of either Lightning package) run on the
    CPU_NUM_DEVICES devices of PJRT CPU."""

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def auto_device_count() -> int:
        return _cpu_devices()

    @staticmethod
    def parse_devices(devices: Any) -> int:
        # Overridden too: the base class validates through `XLAAccelerator.auto_device_count()`
        # by class name, which would query the PCI bus and the metadata server again.
        available = _cpu_devices()
        count = available if devices in ("auto", -1, None) else int(devices)
        if count not in (1, available):
            raise ValueError(f"devices must be 1 or {available} with {available} emulated cores")
        return count

    @staticmethod
    def get_parallel_devices(devices: Any) -> list[torch.device]:
        return [torch.device("xla", index) for index in range(int(devices))]


class EmulatedTPUAccelerator(_EmulatedDevices, XLAAccelerator):
    """XLAAccelerator (lightning.pytorch) over the CPU_NUM_DEVICES devices of PJRT CPU."""


@functools.cache
def emulated_accelerator_class(package: Flavour) -> type:
    """EmulatedTPUAccelerator for `package`'s XLAAccelerator (each Trainer accepts only its own
    package's accelerators)."""
    if package.distribution == LIGHTNING:
        return EmulatedTPUAccelerator
    # A module-level name of its own: the XLA launcher pickles the Trainer, accelerator included.
    name = f"EmulatedTPUAccelerator_{package.distribution}"
    cls = type(
        name,
        (_EmulatedDevices, package.XLAAccelerator),
        {"__module__": __name__, "__doc__": EmulatedTPUAccelerator.__doc__},
    )
    globals()[name] = cls
    return cls


def trainer_accelerator(device: str, package: Flavour | None = None) -> Any:
    """The value for `Trainer(accelerator=...)`."""
    if device == "CPU":
        return emulated_accelerator_class(package or flavour(LIGHTNING))()
    return "tpu"

"""The Lightning accelerator for the backend, so that Lightning's own XLAStrategy, sampler
injection, MpDeviceLoader and XLA precision plugin are what runs.

On a TPU VM that is Lightning's `XLAAccelerator` ("tpu"). On PJRT CPU, XLAAccelerator refuses
to run (it scans PCI for TPU chips and asks the GCE metadata server for the TPU version), and
`accelerator="cpu", strategy="xla"` fails in every replica ("Device should be CPU, got xla:0").
A small subclass that accepts PJRT CPU devices makes the connector pick XLAStrategy itself
(../shared/research/runtime.md §2). Child process only: imports lightning.
"""

from __future__ import annotations

import os
from typing import Any

import torch
from lightning.pytorch.accelerators import XLAAccelerator


class EmulatedTPUAccelerator(XLAAccelerator):
    """XLAAccelerator over the CPU_NUM_DEVICES devices of PJRT CPU."""

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def auto_device_count() -> int:
        return int(os.environ.get("CPU_NUM_DEVICES", "1"))

    @staticmethod
    def parse_devices(devices: Any) -> int:
        # Overridden too: the base class validates through `XLAAccelerator.auto_device_count()`
        # by class name, which would query the PCI bus and the metadata server again.
        available = EmulatedTPUAccelerator.auto_device_count()
        count = available if devices in ("auto", -1, None) else int(devices)
        if count not in (1, available):
            raise ValueError(f"devices must be 1 or {available} with CPU_NUM_DEVICES={available}")
        return count

    @staticmethod
    def get_parallel_devices(devices: Any) -> list[torch.device]:
        return [torch.device("xla", index) for index in range(int(devices))]


def trainer_accelerator(device: str) -> Any:
    """The value for `Trainer(accelerator=...)`."""
    if device == "CPU":
        return EmulatedTPUAccelerator()
    return "tpu"

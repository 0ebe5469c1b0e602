"""What a class of the project is to the frameworks that run it (shared by the project model
and the scope)."""

from __future__ import annotations

import enum


class ClassKind(enum.Flag):
    NONE = 0
    LIGHTNING_MODULE = enum.auto()
    LIGHTNING_DATAMODULE = enum.auto()
    CALLBACK = enum.auto()
    TORCH_MODULE = enum.auto()
    METRIC = enum.auto()  # a torchmetrics Metric: `update` runs every step
    OPTIMIZER = enum.auto()  # a torch.optim.Optimizer: `step` runs every step

    @property
    def is_lightning(self) -> bool:
        return bool(
            self
            & (ClassKind.LIGHTNING_MODULE | ClassKind.LIGHTNING_DATAMODULE | ClassKind.CALLBACK)
        )

"""TPU305 synchronous-dataloader."""

from __future__ import annotations

import re

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.project import FileView
from tpulint.datatypes.diagnostics import Applicability, Severity
from tpulint.rule_api.cst_helpers import add_keyword, replace_arg
from tpulint.rule_api.rule import Invalid, Valid

from ..shared.matchers import contains_trainer_call
from .helpers import (
    _PL,
    _DataRule,
    _placeholder,
    _short,
    _stored_on_self,
    code,
    data_class,
    function_stages,
    has_star,
    int_literal,
    is_dataloader_call,
    is_rl_source,
    loader_arg,
    loader_stages,
    resolve_local,
)

# Datasets whose tensors already live on the accelerator (scvi's `_DeviceBackedDataset`):
# worker processes cannot help, and cannot share them.
_ON_DEVICE = re.compile(r"(DeviceBacked|OnDevice|Cuda|Gpu)")


class SynchronousDataloader(_DataRule):
    """
    ## What it does
    Finds `DataLoader(...)` calls of Lightning classes and training scripts that load data
    in the training process itself: `num_workers=0` or no `num_workers` (literal values
    only; loaders with `**kwargs` are not reported). Opt-in, like TorchFix's TOR401.

    Test files (under `tests/`, `test_*.py`, `conftest.py`) are not checked: their loaders
    and batch sizes are sized for fast CPU runs.

    ## Why is this bad on TPU?
    With `num_workers=0` the process that drives the TPU also reads, decodes and collates
    every batch, and the TPU waits while it does: the Cloud TPU performance guide's first
    cause of a slow model is being input bound. Worker processes prepare the next batches
    while the current step runs, and Lightning's XLA strategy then prefetches them to the
    device (`MpDeviceLoader`).

    ## Example
    ```python
    import lightning as L
    from torch.utils.data import DataLoader


    class DM(L.LightningDataModule):
        def train_dataloader(self):
            return DataLoader(self.train_set, batch_size=64, shuffle=True)
    ```

    ## Use instead
    ```python
    import lightning as L
    from torch.utils.data import DataLoader


    class DM(L.LightningDataModule):
        def train_dataloader(self):
            return DataLoader(self.train_set, batch_size=64, shuffle=True, num_workers=4)
    ```

    ## Fix safety
    Display-only: `num_workers=4` is shown as a suggestion. The right number depends on the
    host's CPU cores shared by the processes of all TPU devices, workers need a picklable
    dataset, and tiny in-memory datasets can be faster without them.

    ## References
    - [Cloud TPU performance guide: input-bound models](https://cloud.google.com/tpu/docs/performance-guide)
    - [TorchFix TOR401: synchronous DataLoader](https://github.com/pytorch-labs/torchfix)
    - [PyTorch docs: single- and multi-process data loading](https://pytorch.org/docs/stable/data.html#single-and-multi-process-data-loading)
    """

    code = "TPU305"
    name = "synchronous-dataloader"
    summary = "DataLoader without worker processes (`num_workers=0`)"
    severity = Severity.INFO
    fix_applicability = Applicability.DISPLAY_ONLY
    fix_message = "Load batches in worker processes: `num_workers=4`"
    default_enabled = False
    requires = ("DataLoader",)
    screen_calls = frozenset({"DataLoader"})  # is_dataloader_call

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        return cls.lightning_code(source, view)

    _HEAD = _PL + "from torch.utils.data import DataLoader\n\n\n"

    VALID = (
        Valid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_size=32, num_workers=self.num_workers)\n"
        ),
        Valid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, **self.loader_kwargs)\n"
        ),
        Valid(
            "from torch.utils.data import DataLoader\n\n"
            "def embed(ds):\n    return list(DataLoader(ds, batch_size=16))\n"
        ),
    )
    INVALID = (
        Invalid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_size=32, num_workers=0)\n",
            expected_suggestion=_HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_size=32, num_workers=4)\n",
            applicability=Applicability.DISPLAY_ONLY,
        ),
        Invalid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def val_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_size=32)\n",
            expected_suggestion=_HEAD + "class DM(L.LightningDataModule):\n"
            "    def val_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_size=32, num_workers=4)\n",
            message="in `val_dataloader`",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if self._skip or not is_dataloader_call(ctx, node) or has_star(node):
            return
        if data_class(ctx) is not None:
            if self._stages is None:
                self._stages = loader_stages(ctx)
            if not function_stages(ctx, self._stages) and not _stored_on_self(ctx, node):
                return  # a loader for the module's own use (setup, reference data)
        elif not self._trains():
            return
        dataset = loader_arg(node, "dataset")
        if (
            is_rl_source(ctx, dataset)
            or _placeholder(dataset)
            or (
                dataset is not None
                and _ON_DEVICE.search(code(ctx, resolve_local(ctx, dataset.value)))
            )
        ):
            return  # experience generated by the live model; a stand-in; data already on device
        workers = loader_arg(node, "num_workers")
        if workers is not None and int_literal(workers.value) != 0:
            return
        where = f" in `{ctx.function.name}`" if ctx.function is not None else ""
        message = (
            f"`{_short(ctx, node)}`{where} loads every batch in the process that drives "
            "the TPU (no worker processes), so the TPU waits for input; set `num_workers` to a "
            "few processes per device"
        )
        if workers is not None:
            new = replace_arg(node, workers, [workers.with_changes(value=cst.Integer("4"))])
        else:
            new = add_keyword(node, "num_workers", "4")
        self.report(node, message, replacement=new)

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._stages: dict[int, frozenset[str]] | None = None

    def _trains(self) -> bool:
        ctx = self.ctx
        info = ctx.function
        if info is None:
            return contains_trainer_call(ctx, ctx.module)
        while info is not None:
            if contains_trainer_call(ctx, info.node.body):
                return True
            info = info.parent
        return False

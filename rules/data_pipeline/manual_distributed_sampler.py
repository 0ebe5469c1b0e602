"""TPU301 manual-distributed-sampler."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.imports import dotted_name
from tpulint.analysis.project import FileView
from tpulint.analysis.summary import SAMPLER_INJECTION_OFF
from tpulint.datatypes.diagnostics import Applicability, Severity
from tpulint.rule_api.cst_helpers import add_keyword, keyword_arg, replace_arg
from tpulint.rule_api.rule import FixSpec, Invalid, Valid

from ..shared.configuration import is_framework_file
from ..shared.matchers import is_trainer_call, launch_position, walk
from .helpers import (
    DISTRIBUTED_SAMPLER_PARAMS,
    SAMPLER_CLASSES,
    _DataRule,
    _short,
    code,
    data_class,
    function_stages,
    has_comment,
    has_star,
    has_star_kwargs,
    is_dataloader_call,
    is_false,
    is_reference,
    is_torch_dataloader,
    is_true,
    loader_arg,
    loader_stages,
    positional,
    signature_arg,
    stage_where,
    subtree_parents,
)

_DATA_IMPORTS = (
    "import lightning as L\n"
    "import torch_xla.core.xla_model as xm\n"
    "from torch.utils.data import DataLoader\n"
    "from torch.utils.data.distributed import DistributedSampler\n\n\n"
)
_DIST_IMPORTS = (
    "import lightning as L\n"
    "import torch.distributed as dist\n"
    "from torch.utils.data import DataLoader\n"
    "from torch.utils.data.distributed import DistributedSampler\n\n\n"
)
_TEXTBOOK_IMPORTS = (
    "import lightning as L\n"
    "import torch\n"
    "import torch_xla.core.xla_model as xm\n"
    "from torch.utils.data import DataLoader\n\n\n"
)
_TEXTBOOK_IMPORTS_FIXED = (
    "import lightning as L\nimport torch\nfrom torch.utils.data import DataLoader\n\n\n"
)
_DATA_IMPORTS_FIXED = "import lightning as L\nfrom torch.utils.data import DataLoader\n\n\n"
# The same, where the file never used `xm` for the sampler (the fix leaves the import).
_DATA_IMPORTS_KEPT = (
    "import lightning as L\n"
    "import torch_xla.core.xla_model as xm\n"
    "from torch.utils.data import DataLoader\n\n\n"
)

# Trainer(use_distributed_sampler=False) (or the 1.x `replace_sampler_ddp=False`), in code
# or in a config: Lightning does not inject samplers, so a hand-built one is required.
_INJECTION_OFF = SAMPLER_INJECTION_OFF

# What `num_replicas=` / `rank=` may be for the fix to be the exact equivalent of Lightning's
# own sampler (the world size and global rank of the process group Lightning set up).
_WORLD_SIZE_CALLS = frozenset(
    {
        "torch_xla.core.xla_model.xrt_world_size",
        "torch_xla.runtime.world_size",
        "torch_xla.core.xla_model.world_size",
        "torch.distributed.get_world_size",
    }
)
_GLOBAL_RANK_CALLS = frozenset(
    {
        "torch_xla.core.xla_model.get_ordinal",
        "torch_xla.runtime.global_ordinal",
        "torch.distributed.get_rank",
    }
)
_LOCAL_RANK_CALLS = frozenset(
    {"torch_xla.core.xla_model.get_local_ordinal", "torch_xla.runtime.local_ordinal"}
)
_REMOVED_XLA = {
    "torch_xla.core.xla_model.xrt_world_size": "xr.world_size()",
    "torch_xla.core.xla_model.get_ordinal": "xr.global_ordinal()",
    "torch_xla.core.xla_model.get_local_ordinal": "xr.local_ordinal()",
}
_WORLD_SIZE_ATTRS = frozenset({"self.trainer.world_size", "trainer.world_size"})
_GLOBAL_RANK_ATTRS = frozenset(
    {"self.global_rank", "self.trainer.global_rank", "trainer.global_rank"}
)
_LOCAL_RANK_ATTRS = frozenset({"self.local_rank", "self.trainer.local_rank", "trainer.local_rank"})


_TORCH_DISTRIBUTED = "torch.distributed."
_ENVIRON = ("os.environ", "os.getenv", "environ")


def wrong_sharding(ctx: FileContext, shape: _SamplerShape) -> str | None:
    """Why a hand-built sampler shards wrongly on TPU cores, or None when its world size and
    rank come from the XLA world (the Trainer's `world_size`/`global_rank`, `xr`/`xm`
    ordinals) or cannot be judged (a parameter, an attribute of unknown origin). Under
    Lightning's XLA strategy `torch.distributed` is never initialised (strategies/xla.py
    `setup_distributed` only sets `rank_zero_only.rank`), so a sampler that asks it fails."""
    reasons = []
    for arg, kind in ((shape.num_replicas, "num_replicas"), (shape.rank, "rank")):
        if arg is None:
            reasons.append(
                f"without `{kind}=` it asks `torch.distributed`, which Lightning's XLA strategy "
                "never initialises (RuntimeError: default process group not initialized)"
            )
            continue
        value = arg.value
        written = code(ctx, value)
        qualified = ctx.qualify(value.func) if isinstance(value, cst.Call) else None
        if qualified is not None and qualified.startswith(_TORCH_DISTRIBUTED):
            reasons.append(
                f"`{written}` asks `torch.distributed`, which Lightning's XLA strategy never "
                "initialises"
            )
        elif kind == "num_replicas" and isinstance(value, cst.Integer):
            reasons.append(
                f"the hard-coded `num_replicas={written}` reads the wrong share of the data on "
                "any TPU with a different number of devices (v4 and later hosts have 4)"
            )
        elif kind == "rank" and (
            qualified in _LOCAL_RANK_CALLS or dotted_name(value) in _LOCAL_RANK_ATTRS
        ):
            reasons.append(
                f"`rank={written}` is the rank within one host, so every host of a pod reads "
                "the same shards"
            )
        elif any(token in written for token in _ENVIRON):
            reasons.append(
                f"`{kind}={written}` is read from the environment, not from the XLA runtime"
            )
    return "; ".join(reasons) if reasons else None


def _root_name(node: cst.BaseExpression) -> str | None:
    while isinstance(node, (cst.Attribute, cst.Call)):
        node = node.value if isinstance(node, cst.Attribute) else node.func
    return node.value if isinstance(node, cst.Name) else None


class _SamplerShape:
    """What a `DistributedSampler(...)` call passes, and whether Lightning's own sampler
    would be the same."""

    def __init__(self, ctx: FileContext, call: cst.Call, exact_class: bool) -> None:
        self.call = call
        self.exact_class = exact_class
        self.dataset = signature_arg(call, "dataset", DISTRIBUTED_SAMPLER_PARAMS)
        self.num_replicas = signature_arg(call, "num_replicas", DISTRIBUTED_SAMPLER_PARAMS)
        self.rank = signature_arg(call, "rank", DISTRIBUTED_SAMPLER_PARAMS)
        self.shuffle = signature_arg(call, "shuffle", DISTRIBUTED_SAMPLER_PARAMS)
        known = {self.dataset, self.num_replicas, self.rank, self.shuffle}
        self.other_args = [a for a in call.args if a not in known]
        self.notes: list[str] = []
        self.exact = exact_class and not self.other_args and not has_star(call)
        self.exact &= self._check(ctx, self.num_replicas, "num_replicas")
        self.exact &= self._check(ctx, self.rank, "rank")
        if self.dataset is None:
            self.exact = False

    def _check(self, ctx: FileContext, arg: cst.Arg | None, kind: str) -> bool:
        """Whether `num_replicas=`/`rank=` is the process group's (omitted counts)."""
        if arg is None:
            return True
        value = arg.value
        written = code(ctx, value)
        if isinstance(value, cst.Call) and not value.args:
            qualified = ctx.qualify(value.func)
            if qualified in _REMOVED_XLA:
                self.notes.append(
                    f"`{written}` was removed in torch_xla 2.7 (`{_REMOVED_XLA[qualified]}` "
                    "replaces it)"
                )
            if kind == "num_replicas" and qualified in _WORLD_SIZE_CALLS:
                return True
            if kind == "rank" and qualified in _GLOBAL_RANK_CALLS:
                return True
            if kind == "rank" and qualified in _LOCAL_RANK_CALLS:
                self.notes.append(
                    f"`rank={written}` is the rank within one host, so every host of a pod "
                    "reads the same shards"
                )
                return False
            return False
        dotted = dotted_name(value)
        if kind == "num_replicas" and dotted in _WORLD_SIZE_ATTRS:
            return True
        if kind == "rank" and dotted in _GLOBAL_RANK_ATTRS:
            return True
        if kind == "rank" and dotted in _LOCAL_RANK_ATTRS:
            self.notes.append(
                f"`rank={written}` is the rank within one host, so every host of a pod reads "
                "the same shards"
            )
            return False
        if kind == "num_replicas" and isinstance(value, cst.Integer):
            self.notes.append(
                f"the hard-coded `num_replicas={written}` reads the wrong share of the data on "
                "any TPU with a different number of devices (v4 and later hosts have 4)"
            )
        return False


class ManualDistributedSampler(_DataRule):
    """
    ## What it does
    Finds `DistributedSampler(...)` (torch's, or a subclass defined in the same file) built
    in the dataloader hooks of a LightningModule or LightningDataModule
    (`train_dataloader`, `val_dataloader`, ...) and the helpers they call, or built in
    another method of such a class (`setup`) and passed to a DataLoader's `sampler=`, whose
    world size or rank is wrong on TPU cores: left out (the sampler then asks
    `torch.distributed`), read from `torch.distributed`, hard-coded, a rank within one host,
    or read from the environment. A sampler whose `num_replicas` and `rank` come from the
    XLA world (`self.trainer.world_size` and `self.trainer.global_rank`, `self.global_rank`,
    `xr.world_size()` and `xr.global_ordinal()`, or the removed `xm` spellings of those,
    which TPU501 reports) shards the data right and is not reported; neither is one whose
    values cannot be judged (a parameter).

    Files that turn Lightning's sampler injection off are not reported: there the
    hand-built sampler is required. A file counts as turning it off when its text says
    `use_distributed_sampler=False` (or the 1.x `replace_sampler_ddp=False`) anywhere: in a
    Trainer call, a config dictionary, or a comment or docstring that documents that the
    project's Trainer sets it. Samplers built outside LightningModule/DataModule classes
    (plain PyTorch/XLA training loops, Lightning's own sampler injection) and samplers that
    never reach a DataLoader (a video dataset's internal clip sampler) are not this rule's
    business.

    Test files (under `tests/`, `test_*.py`, `conftest.py`) are not checked: their loaders
    and batch sizes are sized for fast CPU runs.

    ## Why is this bad on TPU?
    With `use_distributed_sampler=True` (the default), Lightning wraps every loader of a
    distributed run, TPU cores included, in a `DistributedSampler` with the right world size
    and global rank, seeded with the `seed_everything` seed. A loader that already has a
    `DistributedSampler` is kept as is, so a hand-built sampler with a wrong `num_replicas`
    or `rank` (a hard-coded 8 on a 4-device v4 host, a per-host ordinal on a pod) silently
    duplicates or skips data on every core. Lightning's XLA strategy never initialises
    `torch.distributed` (lightning/pytorch/strategies/xla.py, `setup_distributed`), so a
    sampler that asks it for the world size or rank (explicitly, or by leaving them out)
    fails with "Default process group has not been initialized".

    ## Example
    ```python
    import lightning as L
    import torch.distributed as dist
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler


    class Model(L.LightningModule):
        def train_dataloader(self):
            sampler = DistributedSampler(
                self.train_set, num_replicas=dist.get_world_size(), rank=dist.get_rank()
            )
            return DataLoader(self.train_set, batch_size=32, sampler=sampler)
    ```

    ## Use instead
    ```python
    import lightning as L
    from torch.utils.data import DataLoader


    class Model(L.LightningModule):
        def train_dataloader(self):
            return DataLoader(self.train_set, batch_size=32, shuffle=True)
    ```

    ## Fix safety
    The fix removes the `sampler=` argument (and the statement that builds the sampler when
    it was bound to a local name used only there), moves the sampler's shuffling to the
    DataLoader (`DistributedSampler` shuffles by default, `DataLoader` does not, so an
    omitted `shuffle` becomes `shuffle=True`), and drops the now unused
    `DistributedSampler` import.

    It is safe for the textbook shape `DistributedSampler(ds, num_replicas=<world size>,
    rank=<global rank>[, shuffle=S])` (world size and rank from `torch.distributed`, or
    omitted) built unconditionally in
    `train_dataloader` (with shuffling), `val_dataloader` or `test_dataloader` for the
    DataLoader's own dataset: Lightning then builds the same sampler itself. The only
    difference is the shuffling seed, which follows `seed_everything` instead of the
    sampler's default 0. The fix is unsafe when anything else is passed (`seed`,
    `drop_last`: lost), for a subclass, a local-rank ordinal, a hard-coded `num_replicas`,
    a different dataset, a train sampler with `shuffle=False` (Lightning always shuffles
    training data), a predict loader (Lightning does not repeat samples there), a helper
    shared by several hooks, a sampler built under a condition (the other branch changes
    too), or when comments would be removed. Samplers stored on `self` or used more than
    once are reported without a fix.

    ## References
    - [Lightning docs: TPU training (intermediate), "Don't add distributedSamplers"](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_intermediate.html)
    - [Lightning docs: hardware-agnostic training, "Remove samplers"](https://lightning.ai/docs/pytorch/stable/accelerators/accelerator_prepare.html)
    - [Lightning source: sampler injection (`data_connector.py`)](https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/trainer/connectors/data_connector.py)
    - [torch_xla #7679: removal of `xrt_world_size` and `get_ordinal`](https://github.com/pytorch/xla/pull/7679)

    ## Status
    Stable. On code read after it was frozen it was wrong once in one finding (sci1): a
    sampler built from `trainer.world_size` and `trainer.global_rank`, which shards right on
    TPU cores (the project turns Lightning's own sampler off in its CLI). Such samplers are no
    longer reported; the corpus findings (terratorch's ERA5 samplers, which leave the world
    size to `torch.distributed`) stay.
    """

    code = "TPU301"
    name = "manual-distributed-sampler"
    summary = "Hand-built `DistributedSampler` in a Lightning dataloader hook"
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE
    fix_sometimes = True
    fix_message = "Remove the sampler and let Lightning shard the loader"
    requires = ("DistributedSampler",)

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        return cls.lightning_code(source, view)

    VALID = (
        # Lightning's own sampler injection (trap T6): a module function, not a Lightning class.
        Valid(
            "from torch.utils.data import DistributedSampler\n\n"
            "def _get_distributed_sampler(dataloader, shuffle, **kwargs):\n"
            "    return DistributedSampler(dataloader.dataset, shuffle=shuffle, **kwargs)\n"
        ),
        # A plain torch_xla training script: no Lightning class.
        Valid(
            "import torch_xla.core.xla_model as xm\n"
            "from torch.utils.data import DataLoader, DistributedSampler\n\n"
            "def train(ds):\n"
            "    sampler = DistributedSampler(ds, num_replicas=xm.xrt_world_size(), "
            "rank=xm.get_ordinal())\n"
            "    return DataLoader(ds, sampler=sampler, batch_size=32)\n"
        ),
        # Lightning's injection is turned off in this file: the sampler is required.
        Valid(
            _DATA_IMPORTS + "class Model(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, sampler=DistributedSampler(self.ds))\n\n\n"
            "trainer = L.Trainer(accelerator='tpu', use_distributed_sampler=False)\n"
        ),
        # A video dataset's internal clip sampler (never a DataLoader's sampler), in on_train_start.
        Valid(
            _DATA_IMPORTS + "class VideoClassifier(L.LightningModule):\n"
            "    def on_train_start(self):\n"
            "        data = self.trainer.train_dataloader.dataset\n"
            "        data._video_sampler = DistributedSampler(data._labeled_videos)\n"
        ),
        # A Callback is not where loaders are built.
        Valid(
            _DATA_IMPORTS + "class Reshard(L.Callback):\n"
            "    def on_train_epoch_start(self, trainer, pl_module):\n"
            "        self.sampler = DistributedSampler(trainer.datamodule.ds)\n"
        ),
        # World size and rank from the XLA world: the sampler shards right (the data module
        # of a CLI that turns Lightning's sampler off elsewhere, sci1 W8 shape).
        Valid(
            _DATA_IMPORTS + "class DM(L.LightningDataModule):\n"
            "    def val_dataloader(self):\n"
            "        sampler = DistributedSampler(\n"
            "            self.ds, num_replicas=self.trainer.world_size,\n"
            "            rank=self.trainer.global_rank, shuffle=False,\n"
            "        )\n"
            "        return DataLoader(self.ds, batch_size=16, sampler=sampler)\n"
        ),
        Valid(
            "import lightning as L\nimport torch_xla.runtime as xr\n"
            "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        sampler = DistributedSampler(self.ds, xr.world_size(), xr.global_ordinal())\n"
            "        return DataLoader(self.ds, batch_size=16, sampler=sampler)\n"
        ),
        # The TPU-era spelling: right values; the removed names are TPU501's finding.
        Valid(
            _DATA_IMPORTS + "class Model(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        sampler = DistributedSampler(\n"
            "            self.ds, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal()\n"
            "        )\n"
            "        return DataLoader(self.ds, batch_size=16, sampler=sampler)\n\n\n"
            "trainer = L.Trainer(accelerator='tpu', devices=8, replace_sampler_ddp=False)\n"
        ),
        # `isinstance(..., DistributedSampler)` is not a construction.
        Valid(
            _DATA_IMPORTS + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        assert not isinstance(self.loader.sampler, DistributedSampler)\n"
            "        return self.loader\n"
        ),
    )
    INVALID = (
        # Built by the training script before `trainer.fit`, with either world-size API
        # (TPU501's rename to `xr.world_size()` leaves it as wrong as it was).
        Invalid(
            "import lightning as L\nimport torch_xla.runtime as xr\n"
            "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
            "def main(dataset):\n"
            "    sampler = DistributedSampler(\n"
            "        dataset, num_replicas=xr.world_size(), rank=xr.global_ordinal()\n"
            "    )\n"
            "    loader = DataLoader(dataset, batch_size=16, sampler=sampler)\n"
            "    L.Trainer(accelerator='tpu').fit(Model(), loader)\n",
            line=7,
            message="(`num_replicas=xr.world_size()` is 1 there)",
        ),
        # Lightning 1.x docs (tpu_advanced.rst): the textbook sampler with the Trainer's
        # `replace_sampler_ddp=False`, which exists only for it: the fix removes both.
        Invalid(
            _DIST_IMPORTS + "class Model(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        sampler = DistributedSampler(\n"
            "            self.ds, num_replicas=dist.get_world_size(), rank=dist.get_rank()\n"
            "        )\n"
            "        return DataLoader(self.ds, batch_size=16, sampler=sampler)\n\n\n"
            "trainer = L.Trainer(accelerator='tpu', devices=8, replace_sampler_ddp=False)\n",
            expected_fix=_DATA_IMPORTS_FIXED + "class Model(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_size=16, shuffle=True)\n\n\n"
            "trainer = L.Trainer(accelerator='tpu', devices=8)\n",
            applicability=Applicability.SAFE,
            message="`replace_sampler_ddp=False` on the Trainer only exists to keep it",
        ),
        # The textbook sampler asking torch.distributed: safe.
        Invalid(
            _DIST_IMPORTS + "class Model(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        sampler = DistributedSampler(\n"
            "            self.train_set, num_replicas=dist.get_world_size(), rank=dist.get_rank()\n"
            "        )\n"
            "        return DataLoader(self.train_set, batch_size=32, sampler=sampler)\n",
            expected_fix=_DATA_IMPORTS_FIXED + "class Model(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.train_set, batch_size=32, shuffle=True)\n",
            line=9,
            applicability=Applicability.SAFE,
            message="which Lightning's XLA strategy never initialises",
        ),
        # Inline, shuffle=False in a val loader: the DataLoader's default already does not shuffle.
        Invalid(
            "import lightning as L\n"
            "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def val_dataloader(self):\n"
            "        return DataLoader(\n"
            "            self.val_set,\n"
            "            batch_size=64,\n"
            "            sampler=DistributedSampler(self.val_set, shuffle=False),\n"
            "        )\n",
            expected_fix="import lightning as L\n"
            "from torch.utils.data import DataLoader\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def val_dataloader(self):\n"
            "        return DataLoader(\n"
            "            self.val_set,\n"
            "            batch_size=64,\n"
            "        )\n",
            applicability=Applicability.SAFE,
        ),
        # terratorch era5.py shape: keyword dataset, num_replicas/rank from the process group.
        Invalid(
            "import lightning.pytorch as pl\nimport torch\n"
            "from torch.utils.data import DataLoader\n"
            "from torch.utils.data.distributed import DistributedSampler\n\n\n"
            "class ERA5DataModule(pl.LightningDataModule):\n"
            "    def train_dataloader(self) -> DataLoader:\n"
            "        return DataLoader(\n"
            "            dataset=self.dataset_train,\n"
            "            batch_size=self.batch_size,\n"
            "            pin_memory=torch.cuda.is_available(),\n"
            "            sampler=DistributedSampler(dataset=self.dataset_train, shuffle=True),\n"
            "        )\n",
            expected_fix="import lightning.pytorch as pl\nimport torch\n"
            "from torch.utils.data import DataLoader\n\n\n"
            "class ERA5DataModule(pl.LightningDataModule):\n"
            "    def train_dataloader(self) -> DataLoader:\n"
            "        return DataLoader(\n"
            "            dataset=self.dataset_train,\n"
            "            batch_size=self.batch_size,\n"
            "            pin_memory=torch.cuda.is_available(),\n"
            "            shuffle=True,\n"
            "        )\n",
            applicability=Applicability.SAFE,
            line=13,
        ),
        # Lightning 1.x docs (tpu_advanced.rst): built only `if use_tpu`: unsafe (the other
        # branch gains shuffling), and the comment goes.
        Invalid(
            _TEXTBOOK_IMPORTS + "class Model(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        dataset = self.dataset\n\n"
            "        # required for TPU support\n"
            "        sampler = None\n"
            "        if self.use_tpu:\n"
            "            sampler = torch.utils.data.distributed.DistributedSampler(\n"
            "                dataset, num_replicas=8, rank=xm.get_ordinal(), "
            "shuffle=True\n"
            "            )\n\n"
            "        loader = DataLoader(dataset, sampler=sampler, batch_size=32)\n\n"
            "        return loader\n",
            expected_fix=_TEXTBOOK_IMPORTS_FIXED + "class Model(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        dataset = self.dataset\n\n"
            "        loader = DataLoader(dataset, batch_size=32, shuffle=True)\n\n"
            "        return loader\n",
            applicability=Applicability.UNSAFE,
        ),
        # Extra arguments (seed, drop_last) would be lost: unsafe.
        Invalid(
            _DATA_IMPORTS + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        sampler = DistributedSampler(self.ds, seed=42, drop_last=True)\n"
            "        return DataLoader(self.ds, sampler=sampler, batch_size=16)\n",
            expected_fix=_DATA_IMPORTS_KEPT + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_size=16, shuffle=True)\n",
            applicability=Applicability.UNSAFE,
        ),
        # A train sampler that does not shuffle: Lightning's would, so unsafe.
        Invalid(
            _DATA_IMPORTS + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, sampler=DistributedSampler(self.ds, "
            "shuffle=False))\n",
            expected_fix=_DATA_IMPORTS_KEPT + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds)\n",
            applicability=Applicability.UNSAFE,
        ),
        # A rank read from the environment: the launcher's, not the XLA world's.
        Invalid(
            "import os\nimport pytorch_lightning as pl\n"
            "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
            "class DM(pl.LightningDataModule):\n"
            "    def test_dataloader(self):\n"
            "        sampler = DistributedSampler(\n"
            "            self.test_set, num_replicas=int(os.environ['WORLD_SIZE']),\n"
            "            rank=int(os.environ['RANK']), shuffle=False,\n"
            "        )\n"
            "        return DataLoader(self.test_set, batch_size=32, sampler=sampler)\n",
            message="is read from the environment",
        ),
        # A per-host ordinal on a pod: the message says why it is wrong; unsafe fix.
        Invalid(
            _DATA_IMPORTS + "class DM(L.LightningDataModule):\n"
            "    def test_dataloader(self):\n"
            "        sampler = DistributedSampler(self.ds, num_replicas=xm.xrt_world_size(),\n"
            "                                     rank=xm.get_local_ordinal(), shuffle=False)\n"
            "        return DataLoader(self.ds, sampler=sampler)\n",
            applicability=Applicability.UNSAFE,
            message="every host of a pod reads the same shards",
        ),
        # Built in setup() and stored on self: reported, no fix.
        Invalid(
            _DATA_IMPORTS + "class DM(L.LightningDataModule):\n"
            "    def setup(self, stage):\n"
            "        self.sampler = DistributedSampler(self.ds, num_replicas=8, "
            "rank=xm.get_ordinal())\n\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, sampler=self.sampler, batch_size=8)\n",
            line=9,
            message="hard-coded `num_replicas=8`",
        ),
        # NeMo-style rewrap inside a loop in val_dataloader, with the sampler used twice.
        Invalid(
            _DATA_IMPORTS + "class Model(L.LightningModule):\n"
            "    def val_dataloader(self):\n"
            "        loaders = []\n"
            "        for dl in self._val_dls:\n"
            "            sampler = DistributedSampler(dl.dataset, shuffle=False)\n"
            "            loaders.append(DataLoader(dl.dataset, sampler=sampler, "
            "batch_size=dl.batch_size))\n"
            "            print(sampler)\n"
            "        return loaders\n",
            line=11,
        ),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._stages: dict[int, frozenset[str]] | None = None
        self._injection_off = bool(_INJECTION_OFF.search(ctx.source)) if ctx is not None else False

    def _sampler_class(self, call: cst.Call) -> tuple[bool, bool]:
        """(is a DistributedSampler, is exactly torch's class)."""
        ctx = self.ctx
        qualified = ctx.qualify(call.func)
        if qualified in SAMPLER_CLASSES:
            return True, True
        if isinstance(call.func, cst.Name):
            return self._local_subclass(call.func.value, set()), False
        return False, False

    def _local_subclass(self, name: str, seen: set[str]) -> bool:
        if name in seen:
            return False
        seen.add(name)
        for info in self.ctx.analysis.classes.values():
            if info.name != name:
                continue
            for base in info.bases:
                if base in SAMPLER_CLASSES or self._local_subclass(base.rsplit(".", 1)[-1], seen):
                    return True
        return False

    def visit_Call(self, node: cst.Call) -> None:
        if self._skip:
            return
        ctx = self.ctx
        cls = data_class(ctx)
        if cls is None:
            if self._injection_off or is_framework_file(ctx):
                return
            is_sampler, _ = self._sampler_class(node)
            if is_sampler and launch_position(ctx, node) == "launcher":
                self._in_launcher(node)
            return
        is_sampler, exact = self._sampler_class(node)
        if not is_sampler:
            return
        shape = _SamplerShape(ctx, node, exact)
        reason = wrong_sharding(ctx, shape)
        if reason is None:
            # World size and rank from the XLA world (or not judgeable): the sampler shards
            # the data right on TPU cores, hand-built or not (issue 21, sci1 W8).
            return
        if self._injection_off:
            self._with_injection_off(node, exact)
            return
        if self._stages is None:
            self._stages = loader_stages(ctx)
        stages = function_stages(ctx, self._stages)
        flow = self._flow(node)
        if not stages and flow is None:
            return
        where = stage_where(ctx, stages) if stages else f"`{ctx.function.name}`"  # type: ignore[union-attr]
        fix = self._fix(node, shape, stages, flow) if flow is not None else None
        shuffle_hint = self._shuffle_hint(shape)
        notes = "; ".join([reason, *(n for n in shape.notes if "removed in" in n)])
        notes = f" ({notes})" if notes else ""
        off_elsewhere = ctx.analysis.view.sampler_injection_off() if ctx.analysis.view else []
        if off_elsewhere:
            # Another file of the project (the training script) turns Lightning's sampler
            # off: removing only this sampler would leave the loader unsharded.
            fix = None
            shuffle_hint += (
                f", and `use_distributed_sampler=False` in "
                f"`{ctx.analysis.view.display(off_elsewhere[0])}`, which exists for it "
                "(without both, every core reads the whole dataset)"
            )
        message = (
            f"`{_short(ctx, node)}` in {where}: Lightning already shards every loader "
            f"across the TPU cores and keeps a hand-built sampler as is, so a wrong world size "
            f"or rank silently duplicates or skips data{notes}; remove the sampler{shuffle_hint}"
        )
        self.report(node, message, fix=fix)

    def _in_launcher(self, node: cst.Call) -> None:
        """A sampler built by the training script before `trainer.fit`: in the launching
        process the world size is 1 and the ordinal 0 (whichever API asks: `xm.xrt_world_size()`,
        `xr.world_size()`, `torch.distributed`), Lightning keeps a sampler it is given, and
        every core reads everything."""
        ctx = self.ctx
        shape = _SamplerShape(ctx, node, True)
        replicas = code(ctx, shape.num_replicas.value) if shape.num_replicas else None
        told = f" (`num_replicas={replicas}` is 1 there)" if replicas else ""
        self.report(
            node,
            f"`{_short(ctx, node)}` is built in the launching process before `trainer.fit`, "
            f"where the world size is 1 and the ordinal 0{told}: every TPU core gets a sampler "
            "of 1 replica at rank 0, and Lightning keeps a sampler it is given, so every core "
            "reads the whole dataset; remove the sampler (pass `shuffle=True` to the "
            "DataLoader) and Lightning shards the loader in each core's process",
        )

    def _with_injection_off(self, node: cst.Call, exact: bool) -> None:
        """This file turns Lightning's sampler injection off. A hand-built sampler is then
        needed, unless it is the textbook `DistributedSampler(ds, num_replicas=<world size>,
        rank=<global rank>)` built in a loader hook: the flag exists only for it, and both go
        (one fix removes the sampler and the Trainer argument, so the loader stays sharded)."""
        ctx = self.ctx
        shape = _SamplerShape(ctx, node, exact)
        if not (shape.exact and shape.num_replicas is not None and shape.rank is not None):
            return
        if self._stages is None:
            self._stages = loader_stages(ctx)
        stages = function_stages(ctx, self._stages)
        flow = self._flow(node)
        if not stages or flow is None:
            return
        flags = [
            (call, arg)
            for call in walk(ctx.module)
            if isinstance(call, cst.Call) and is_trainer_call(ctx, call)
            for arg in call.args
            if arg.keyword is not None
            and arg.keyword.value in ("use_distributed_sampler", "replace_sampler_ddp")
            and is_false(arg.value)
        ]
        fix = self._fix(node, shape, stages, flow)
        flag = flags[0][1].keyword.value if len(flags) == 1 else "use_distributed_sampler"  # type: ignore[union-attr]
        if fix is not None and len(flags) == 1:
            call, arg = flags[0]
            fix.replacements.append((call, replace_arg(call, arg, [])))
            fix.message = f"Remove the sampler and `{flag}=False`: Lightning shards the loader"
        else:
            fix = None
        where = stage_where(ctx, stages)
        self.report(
            node,
            f"`{_short(ctx, node)}` in {where} is the sampler Lightning builds itself; "
            f"`{flag}=False` on the Trainer only exists to keep it: remove both and Lightning "
            "shards the loader across the TPU cores with the right world size and rank",
            fix=fix,
        )

    @staticmethod
    def _shuffle_hint(shape: _SamplerShape) -> str:
        value = shape.shuffle.value if shape.shuffle is not None else None
        if value is None or is_true(value):
            return " and pass `shuffle=True` to the DataLoader"
        if is_false(value):
            return ""
        return " and pass its `shuffle` to the DataLoader"

    # --- where the sampler goes ----------------------------------------------------------

    def _flow(self, node: cst.Call) -> tuple[str, cst.Call, cst.Arg, cst.CSTNode | None] | None:
        """How the sampler reaches a DataLoader: ("inline", loader, arg, None) for
        `DataLoader(..., sampler=DistributedSampler(...))`, ("local", loader, arg, statement)
        for `s = DistributedSampler(...)` ... `DataLoader(..., sampler=s)` in the same function,
        ("self", ...) for `self.s = ...` read as `sampler=self.s` in the class; None when it
        does not reach a DataLoader visibly."""
        ctx = self.ctx
        parent = ctx.parent(node)
        if isinstance(parent, cst.Arg):
            loader = ctx.parent(parent)
            if (
                isinstance(loader, cst.Call)
                and is_dataloader_call(ctx, loader)
                and loader_arg(loader, "sampler") is parent
            ):
                return "inline", loader, parent, None
            return None
        if not isinstance(parent, cst.Assign) or len(parent.targets) != 1:
            return None
        target = parent.targets[0].target
        statement = ctx.parent(parent)
        if isinstance(target, cst.Name):
            function = ctx.function
            if function is None:
                return None
            for loader, arg in self._loaders_with_sampler(function.node, target.value, None):
                return "local", loader, arg, statement
            return None
        if (
            isinstance(target, cst.Attribute)
            and isinstance(target.value, cst.Name)
            and target.value.value == "self"
        ):
            cls = data_class(ctx)
            if cls is None:
                return None
            for loader, arg in self._loaders_with_sampler(cls.node, None, target.attr.value):
                return "self", loader, arg, statement
        return None

    def _loaders_with_sampler(self, root: cst.CSTNode, local: str | None, attr: str | None):
        ctx = self.ctx
        for candidate in walk(root):
            if not isinstance(candidate, cst.Call) or not is_dataloader_call(ctx, candidate):
                continue
            arg = loader_arg(candidate, "sampler")
            if arg is None:
                continue
            value = arg.value
            if local is not None and isinstance(value, cst.Name) and value.value == local:
                yield candidate, arg
            if (
                attr is not None
                and isinstance(value, cst.Attribute)
                and isinstance(value.value, cst.Name)
                and value.value.value == "self"
                and value.attr.value == attr
            ):
                yield candidate, arg

    # --- the fix -------------------------------------------------------------------------

    def _fix(
        self, node: cst.Call, shape: _SamplerShape, stages: frozenset[str], flow
    ) -> FixSpec | None:
        ctx = self.ctx
        kind, loader, arg, statement = flow
        if kind == "self" or arg.keyword is None or has_star_kwargs(loader):
            return None
        if loader_arg(loader, "batch_sampler") is not None:
            return None
        replacements: list[tuple[cst.CSTNode, object]] = []
        safe = shape.exact
        removed: list[cst.CSTNode] = [arg]
        function = ctx.function
        assert function is not None
        parents = subtree_parents(function.node)
        if kind == "local":
            assert isinstance(statement, cst.SimpleStatementLine)
            name = arg.value.value  # type: ignore[union-attr]
            plan = self._local_removal(function.node, name, statement, arg.value, parents)
            if plan is None:
                return None
            conditional, statements = plan
            safe &= not conditional
            for old in statements:
                replacements.append((old, cst.RemovalSentinel.REMOVE))
                removed.append(old)
        safe &= len(stages) == 1 and is_torch_dataloader(ctx, loader)
        stage = next(iter(stages)) if len(stages) == 1 else None
        shuffle_value = shape.shuffle.value if shape.shuffle is not None else None
        if stage == "train":
            safe &= shuffle_value is None or is_true(shuffle_value)
        elif stage in ("val", "test"):
            safe &= shuffle_value is None or is_true(shuffle_value) or is_false(shuffle_value)
        else:
            safe = False
        dataset = loader_arg(loader, "dataset")
        if (
            dataset is None
            or shape.dataset is None
            or code(ctx, dataset.value) != code(ctx, shape.dataset.value)
        ):
            safe = False
        if any(has_comment(ctx, old) for old in removed):
            safe = False
        new_loader = self._new_loader(loader, arg, shuffle_value)
        if new_loader is None:
            return None
        replacements.append((loader, new_loader))
        unused = []
        if isinstance(node.func, cst.Name):
            unused.append(node.func.value)
        for arg in (shape.num_replicas, shape.rank):
            # `xm`, `xr`, `dist`: dropped when the sampler was their only user.
            root = _root_name(arg.value) if arg is not None else None
            if root is not None and root != "self" and root in ctx.aliases.bindings:
                unused.append(root)
        return FixSpec(
            Applicability.SAFE if safe else Applicability.UNSAFE,
            self.fix_title(),
            replacements,  # type: ignore[arg-type]
            remove_unused_imports=tuple(unused),
        )

    @staticmethod
    def _conditional(node: cst.CSTNode, parents: dict[int, cst.CSTNode]) -> bool:
        """Whether `node` runs only on some paths of its function (under if/for/while/try)."""
        current = parents.get(id(node))
        while current is not None and not isinstance(current, cst.FunctionDef):
            if isinstance(current, (cst.If, cst.For, cst.While, cst.Try, cst.With)):
                return True
            current = parents.get(id(current))
        return False

    def _local_removal(
        self,
        function: cst.FunctionDef,
        name: str,
        statement: cst.SimpleStatementLine,
        use: cst.CSTNode,
        parents: dict[int, cst.CSTNode],
    ) -> tuple[bool, list[cst.CSTNode]] | None:
        """The statements to remove for a sampler bound to local `name`: its assignment (or
        the `if` around it when that is all the `if` does) and `name = None` placeholders.
        None when `name` is used anywhere else or bound to something else."""
        if len(statement.body) != 1:
            return None
        assign = statement.body[0]
        to_remove: list[cst.CSTNode] = []
        for candidate in walk(function.body):
            if isinstance(candidate, cst.Name) and candidate.value == name and candidate is not use:
                parent = parents.get(id(candidate))
                if not is_reference(parent, candidate):
                    continue
                if isinstance(parent, cst.AssignTarget) and parent.target is candidate:
                    binding = parents.get(id(parent))
                    if binding is assign:
                        continue
                    line = parents.get(id(binding)) if binding is not None else None
                    if (
                        isinstance(binding, cst.Assign)
                        and len(binding.targets) == 1
                        and isinstance(binding.value, cst.Name)
                        and binding.value.value == "None"
                        and isinstance(line, cst.SimpleStatementLine)
                        and len(line.body) == 1
                        and not self._conditional(line, parents)
                    ):
                        to_remove.append(line)
                        continue
                return None
        conditional = bool(to_remove) or self._conditional(statement, parents)
        block = parents.get(id(statement))
        owner = parents.get(id(block)) if block is not None else None
        if isinstance(block, cst.IndentedBlock) and len(block.body) == 1:
            if isinstance(owner, cst.If) and owner.body is block and owner.orelse is None:
                to_remove.append(owner)
                return True, to_remove
            return None  # removing it would leave an empty block
        to_remove.append(statement)
        return conditional, to_remove

    def _new_loader(
        self, loader: cst.Call, arg: cst.Arg, shuffle: cst.BaseExpression | None
    ) -> cst.Call | None:
        new = replace_arg(loader, arg, [])
        existing = keyword_arg(new, "shuffle")
        if existing is None and len(positional(new)) > 2:
            return None  # shuffle passed positionally: leave it to a human
        if shuffle is None:
            shuffle = cst.Name("True")
        if existing is not None:
            if is_false(shuffle) and is_false(existing.value):
                return new
            return replace_arg(new, existing, [existing.with_changes(value=shuffle)])
        if is_false(shuffle):
            return new
        return add_keyword(new, "shuffle", shuffle)

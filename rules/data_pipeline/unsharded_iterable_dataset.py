"""TPU306 unsharded-iterable-dataset."""

from __future__ import annotations

import re

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.project import FileView
from tpulint.analysis.summary import distributed_rank_pattern
from tpulint.rule_api.cst_helpers import keyword_arg
from tpulint.rule_api.rule import Invalid, Valid

from .helpers import (
    _PL,
    _DataRule,
    _short,
    code,
    data_class,
    function_stages,
    is_dataloader_call,
    is_true,
    loader_arg,
    loader_stages,
    resolve_local,
    stage_where,
)

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
    screen_calls = frozenset({"DataLoader"})  # is_dataloader_call

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

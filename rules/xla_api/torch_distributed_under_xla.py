"""TPU505 torch-distributed-under-xla: `torch.distributed` in code that runs under a TPU
Trainer."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from tpulint.analysis.project import ClassKind, FileView
from tpulint.analysis.values import CPU, DEVICE
from tpulint.analysis.walker import iter_children, iter_in_order
from tpulint.datatypes.diagnostics import Applicability, Severity
from tpulint.datatypes.torch_distributed import COLLECTIVES as _COLLECTIVES
from tpulint.datatypes.torch_distributed import QUERIES as _QUERIES
from tpulint.rule_api.rule import Invalid, RelatedNode, Rule, Valid

from ..shared.configuration import is_framework_file
from ..shared.matchers import source_of, walk

_DIST = "torch.distributed."
_DIST_NN = "torch.distributed.nn.functional."
# Modules of torch that import torch.distributed as `dist` (`from
# torch.utils.data.distributed import DistributedSampler, dist`).
_DIST_REEXPORTS = ("torch.utils.data.distributed.dist.",)
# What Lightning offers instead (in a LightningModule; a Callback has `trainer`/`pl_module`).
_INSTEAD = {
    "get_rank": "{trainer}.global_rank",
    "get_world_size": "{trainer}.world_size",
    "barrier": "{trainer}.strategy.barrier()",
    "all_gather": "{module}.all_gather(tensor)",
    "all_gather_into_tensor": "{module}.all_gather(tensor)",
    "all_reduce": "{module}.all_gather(tensor).sum(0)",
    "broadcast": "{trainer}.strategy.broadcast(obj, src)",
    "broadcast_object_list": "{trainer}.strategy.broadcast(obj, src)",
    "reduce": "{trainer}.strategy.reduce(tensor)",
}


class TorchDistributedUnderXla(Rule):
    """
    ## What it does
    Finds `torch.distributed` process-group calls (`is_initialized`, `get_rank`,
    `get_world_size`) and collectives (`all_gather`, `all_reduce`, `broadcast`, `barrier`,
    ...) in the methods of Lightning classes (LightningModule, LightningDataModule,
    Callback) and in the helpers their training steps call: code that runs under the
    Trainer.

    A guard is one finding: `if dist.is_initialized():` (also with `is_available() and`,
    another condition `and`-ed in, the early exit `if not dist.is_initialized(): return
    ...` before the code, `x if dist.is_initialized() else y`, or a helper that is exactly
    that test, `def is_dist(): return dist.is_available() and dist.is_initialized()`, or
    one named by the common convention `is_dist_avail_and_initialized`). It is reported at
    the guard, with what runs instead on TPU cores (the else branch, the early exit, the
    other value) in the message and the calls it guards as related places: those never
    run under XLA, so they cannot raise and are not findings of their own.

    Samplers are code a Trainer runs too: in a module Lightning code imports, a sampler (a
    `Sampler`/`BatchSampler` subclass, or a class named `...Sampler`/`...Batcher`) that asks
    `dist.get_rank()` / `dist.get_world_size()` in `__init__`, `__iter__`, `__len__` or
    `set_epoch` without an `is_initialized()` guard (or a flag holding it, `is_ddp =
    dist.is_initialized()`; `is_available()` is True on a TPU host,
    and a `rank=None` default falls through to the query) is reported once per method: the
    dataloader hook that builds it raises. So is a DataLoader's `worker_init_fn` that asks
    them outside a `try` catching `ValueError` (what torch 2.x raises there).
    `torch.distributed` re-exported by `torch.utils.data.distributed` (`from
    torch.utils.data.distributed import dist`) counts as torch.distributed.

    Not reported:
    - a guard whose fallback is harmless, judged conservatively: either everything it
      skips only prints or logs (a rank in a `print`/log call's arguments), or rank 0
      shares a value with `broadcast_object_list` (the rank used only to pick rank 0,
      `get_rank() == 0` in a test) that the `else` branch reads itself (a name, attribute
      or item read, no call, not a tensor: the same configured path on every process).
      Any other use of the rank or world size (sharding, scaling a loss), any collective
      that moves tensors, a skipped barrier (the others no longer wait for rank 0's
      files), or a fallback that computes something keeps the finding;
    - calls in a private helper (`_name`) that this file calls only from guarded code;
    - guards and calls in an `except` handler (agreeing across ranks on skipping a batch
      after an out-of-memory error): the error path, not what the training runs;
    - a DDP-only branch beside an explicit XLA/TPU branch (`if self.use_ddp: ... elif
      self.on_tpu: xm.all_reduce(...)`, or a test naming XLA/TPU around the call): the TPU
      path is handled.

    ## Why is this bad on TPU?
    Lightning's XLA strategy (`accelerator="tpu"`) communicates through torch_xla
    (`xm.all_gather`, `xm.mesh_reduce`, `xm.rendezvous`) and never initialises
    `torch.distributed`'s process group. Code written for DDP then behaves as a single
    process on every TPU core: `dist.is_initialized()` is False, so a contrastive loss that
    gathers the other ranks' embeddings as negatives uses only its own batch (a different
    training than on GPUs, with no error), and a dataset that shards by `dist.get_rank()`
    gives every core rank 0's share; an unguarded `dist.get_rank()` or `dist.all_gather()`
    raises ("Default process group has not been initialized"). `tpulint verify` records
    these calls at run time and fails a guarded collective.

    ## Example
    ```python
    import lightning as L
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F


    class Contrastive(L.LightningModule):
        def training_step(self, batch, batch_idx):
            query, key = self.encode(batch)
            if dist.is_initialized():
                keys = [torch.zeros_like(key) for _ in range(dist.get_world_size())]
                dist.all_gather(keys, key)
                keys[dist.get_rank()] = key
                key = torch.cat(keys)
            logits = query @ key.T
            return F.cross_entropy(logits, torch.arange(len(query), device=self.device))
    ```

    ## Use instead
    ```python
    import lightning as L
    import torch
    import torch.nn.functional as F


    class Contrastive(L.LightningModule):
        def training_step(self, batch, batch_idx):
            query, key = self.encode(batch)
            if self.trainer.world_size > 1:
                keys = self.all_gather(key, sync_grads=True)  # world x batch x dim
                keys[self.trainer.global_rank] = key
                key = keys.flatten(0, 1)
            logits = query @ key.T
            return F.cross_entropy(logits, torch.arange(len(query), device=self.device))
    ```

    `self.all_gather`, `self.trainer.global_rank`, `self.trainer.world_size` and
    `self.trainer.strategy.barrier()` / `.broadcast()` / `.reduce()` go through the strategy,
    so they work under DDP and on TPU cores alike. In a Dataset, take the rank from the
    Trainer (passed in by the dataloader hook) or from `torch_xla.runtime.global_ordinal()`.

    ## Fix safety
    Unsafe, and only where the replacement is exact: `dist.get_rank()`,
    `dist.get_world_size()` and `dist.barrier()` without arguments in a LightningModule or
    DataModule method become `self.trainer.global_rank`, `self.trainer.world_size` and
    `self.trainer.strategy.barrier()` (in a Callback hook, the `trainer` argument's). They
    change what runs on TPU cores (that is the point) and where no process group exists (no
    more error). A guard is shown as `self.trainer.world_size > 1` (display-only: what it
    guards still needs the Trainer's collectives); collectives have no fix: `self.all_gather`
    returns a stacked tensor where `dist.all_gather` fills a list.

    ## References
    - [Lightning source: the XLA strategy's collectives go through torch_xla](https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/strategies/xla.py)
    - [Lightning docs: `LightningModule.all_gather`](https://lightning.ai/docs/pytorch/stable/common/lightning_module.html#all-gather)
    - [torch_xla: PJRT runtime and collectives (`xm.all_gather`, `xm.mesh_reduce`)](https://github.com/pytorch/xla/blob/master/docs/source/learn/pjrt.md)

    ## Status
    Stable for samplers and `worker_init_fn`s that ask the rank or world size unguarded (they
    raise in the dataloader hook: right by construction; 5 of the misses of four read batches,
    1 corpus finding, right). Calls and guards in Lightning classes and hot code are a preview
    shape (`--preview`): on code read after the rule was frozen they were right 6 times and
    wrong 14 (sci2, tpu2, sci3, tpu3; 7 more in code that never runs on a TPU), then right once
    and wrong 12 times (sci4, tpu4): guards behind project helpers the rule cannot tell from
    other conditions, guards whose skipped code changes nothing, error-handling code.
    `tpulint verify` records the calls at run time instead.
    """

    code = "TPU505"
    name = "torch-distributed-under-xla"
    summary = "`torch.distributed` calls and guards in code run by a Trainer on TPU cores"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = "Ask the Trainer instead of torch.distributed"
    requires = ("distributed",)

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        """Findings are calls of torch.distributed's queries and collectives (their last
        name, or an imported alias's), or of a process-group guard helper (one of this file,
        which itself calls `is_initialized`, or one named by the convention), in a Lightning
        class or in hot code. ("distributed" alone is in every Apache license header.)"""
        if not (
            view.has_hot_code
            or view.has_lightning_class
            # Samplers and `worker_init_fn`s run in the dataloader hooks (`_sampler_context`).
            or "worker_init_fn" in source
            or any(_SAMPLER_NAME.search(c.name) for c in view.module.classes)
            or any(_SAMPLER_BASE.search(b) for c in view.module.classes for b in c.bases)
        ):
            return False
        syntax = view.module.syntax
        if syntax is None:
            return True
        calls = syntax.calls
        return not calls.isdisjoint(_DIST_CALLS) or any(
            _GUARD_HELPER_NAME.match(name) for name in calls
        )

    VALID = (
        # An `except` handler's agreement on skipping a failed batch: the error path.
        Valid(
            "import lightning as L\nimport torch.distributed as dist\n\n\n"
            "class LM(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        try:\n"
            "            return self(batch).sum()\n"
            "        except RuntimeError as error:\n"
            "            if 'out of memory' not in str(error):\n"
            "                raise\n"
            "            if dist.is_initialized():\n"
            "                dist.barrier()\n"
            "            return None\n",
            config={"preview": True},
        ),
        # Through the strategy: works under the XLA strategy.
        Valid(
            "import lightning as L\n\n\nclass LM(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        keys = self.all_gather(batch, sync_grads=True)\n"
            "        return keys.sum() * self.trainer.world_size\n",
            config={"preview": True},
        ),
        # Not code a Trainer runs: a launcher script of its own.
        Valid(
            "import torch.distributed as dist\n\n\ndef main():\n"
            "    dist.init_process_group('nccl')\n    print(dist.get_rank())\n",
            config={"preview": True},
        ),
        # Availability alone says nothing about the process group.
        Valid(
            "import lightning as L\nimport torch.distributed as dist\n\n\n"
            "class LM(L.LightningModule):\n"
            "    def on_fit_start(self):\n"
            "        self.can_gather = dist.is_available()\n",
            config={"preview": True},
        ),
        # The code tells the XLA strategy apart itself.
        Valid(
            "import lightning as L\nimport torch.distributed as dist\n"
            "from lightning.pytorch.strategies import XLAStrategy\n\n\n"
            "class LM(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        if not isinstance(self.trainer.strategy, XLAStrategy):\n"
            "            dist.barrier()\n"
            "        return batch.sum()\n",
            config={"preview": True},
        ),
        # Only a message is skipped: each core prints nothing, nothing else changes.
        Valid(
            "import lightning as L\nimport torch.distributed as dist\n\n\n"
            "class LM(L.LightningModule):\n"
            "    def on_train_epoch_end(self):\n"
            "        if dist.is_initialized():\n"
            "            print('epoch done on rank', dist.get_rank())\n",
            config={"preview": True},
        ),
        # Rank 0 shares a configured path; the fallback reads the same path itself.
        Valid(
            "import lightning as L\nimport torch.distributed as dist\n\n\n"
            "class LM(L.LightningModule):\n"
            "    def on_fit_start(self):\n"
            "        if dist.is_initialized():\n"
            "            if dist.get_rank() == 0:\n"
            "                shared = [self.hparams.out_dir]\n"
            "            else:\n"
            "                shared = [None]\n"
            "            dist.broadcast_object_list(shared, src=0)\n"
            "            out_dir = shared[0]\n"
            "        else:\n"
            "            out_dir = self.hparams.out_dir\n"
            "        self.out_dir = out_dir\n",
            config={"preview": True},
        ),
        # A DDP branch beside the TPU branch: the TPU path is handled.
        Valid(
            "import lightning as L\nimport torch.distributed as dist\n"
            "import torch_xla.core.xla_model as xm\n\n\n"
            "class LM(L.LightningModule):\n"
            "    def on_validation_epoch_end(self):\n"
            "        total = self.total\n"
            "        if self.use_ddp:\n"
            "            dist.all_reduce(total)\n"
            "            total = total / dist.get_world_size()\n"
            "        elif self.on_tpu:\n"
            "            total = xm.all_reduce(xm.REDUCE_SUM, total)\n"
            "        self.log('total', total)\n",
            config={"preview": True},
        ),
        # A sampler that asks only where the process group exists (Lightning shards it).
        Valid(
            "import lightning as L\nimport torch.distributed as dist\n"
            "from torch.utils.data import DataLoader, Sampler\n\n\n"
            "class BucketSampler(Sampler):\n"
            "    def __init__(self, lengths):\n"
            "        self.lengths = lengths\n"
            "        self.rank = dist.get_rank() if dist.is_initialized() else 0\n\n"
            "    def __iter__(self):\n        return iter(range(len(self.lengths)))\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, sampler=BucketSampler(self.lengths))\n",
            config={"preview": True},
        ),
        # A sampler of a project that has no Lightning class: no Trainer builds it.
        Valid(
            "import torch.distributed as dist\nfrom torch.utils.data import Sampler\n\n\n"
            "class BucketSampler(Sampler):\n"
            "    def __init__(self, lengths):\n"
            "        self.lengths = lengths\n"
            "        self.replicas = dist.get_world_size()\n",
            config={"preview": True},
        ),
        # A worker initialiser whose query runs only where a flag says the group exists.
        Valid(
            "import lightning as L\nimport torch\n\n\n"
            "def worker_init_fn(worker_id):\n"
            "    info = torch.utils.data.get_worker_info()\n"
            "    is_ddp = False\n"
            "    if torch.distributed.is_initialized():\n"
            "        is_ddp = True\n"
            "    seed = info.seed\n"
            "    if is_ddp:\n"
            "        seed += torch.distributed.get_rank() * info.num_workers\n"
            "    info.dataset.rng.seed(seed % 2**32)\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return torch.utils.data.DataLoader(\n"
            "            self.ds, batch_size=8, num_workers=4, worker_init_fn=worker_init_fn\n"
            "        )\n",
            config={"preview": True},
        ),
    )
    INVALID = (
        # A sampler that asks torch.distributed when no rank is given: the hook raises.
        Invalid(
            "import lightning as L\nimport torch.distributed as dist\n"
            "from torch.utils.data import DataLoader\n\n\n"
            "class LengthBatcher:\n"
            "    def __init__(self, lengths, rank=None, replicas=None):\n"
            "        if replicas is None:\n"
            "            replicas = dist.get_world_size()\n"
            "        if rank is None:\n"
            "            rank = dist.get_rank()\n"
            "        self.lengths, self.rank, self.replicas = lengths, rank, replicas\n\n"
            "    def __iter__(self):\n"
            "        return iter([[i] for i in range(self.rank, 8, self.replicas)])\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_sampler=LengthBatcher(self.lengths))\n",
            line=9,
            message="a dataloader hook that builds it under Lightning's XLA strategy raises here",
        ),
        # Availability is no guard: it is True on a TPU host too.
        Invalid(
            "import lightning as L\nimport torch.distributed as dist\n"
            "from torch.utils.data import Sampler\n\n\n"
            "class SortedSampler(Sampler):\n"
            "    def __init__(self, lengths, replicas=1):\n"
            "        if dist.is_available():\n"
            "            replicas = dist.get_world_size()\n"
            "        self.lengths, self.replicas = lengths, replicas\n\n\n"
            "class LM(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        return self(batch).sum()\n",
            line=9,
            message="in the sampler `SortedSampler.__init__`",
        ),
        # A worker initialiser that shards by rank; `except RuntimeError` misses the
        # ValueError torch raises without a process group.
        Invalid(
            "import lightning as L\nimport torch\nimport torch.distributed as dist\n\n\n"
            "def worker_init_fn(worker_id):\n"
            "    info = torch.utils.data.get_worker_info()\n"
            "    try:\n"
            "        rank, world = dist.get_rank(), dist.get_world_size()\n"
            "    except RuntimeError:\n"
            "        rank, world = 0, 1\n"
            "    workers = info.num_workers\n"
            "    info.dataset.shard(rank * workers + worker_id, world * workers)\n"
            "\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return torch.utils.data.DataLoader(\n"
            "            self.ds, batch_size=8, num_workers=4, worker_init_fn=worker_init_fn\n"
            "        )\n",
            line=9,
            message="in the DataLoader worker initialiser `worker_init_fn`",
        ),
        # A guard around a collective: the collective never runs on TPU cores.
        Invalid(
            "import lightning as L\nimport torch\nimport torch.distributed as dist\n\n\n"
            "class LM(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        key = self(batch)\n"
            "        if dist.is_initialized():\n"
            "            keys = [torch.zeros_like(key) for _ in range(8)]\n"
            "            dist.all_gather(keys, key)\n"
            "            key = torch.cat(keys)\n"
            "        return key.sum()\n",
            line=9,
            message="the `all_gather` it guards never runs",
            expected_suggestion="import lightning as L\nimport torch\n"
            "import torch.distributed as dist\n\n\n"
            "class LM(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        key = self(batch)\n"
            "        if self.trainer.world_size > 1:\n"
            "            keys = [torch.zeros_like(key) for _ in range(8)]\n"
            "            dist.all_gather(keys, key)\n"
            "            key = torch.cat(keys)\n"
            "        return key.sum()\n",
            applicability=Applicability.DISPLAY_ONLY,
            config={"preview": True},
        ),
        # Exact replacements in a LightningModule method.
        Invalid(
            "import lightning as L\nimport torch.distributed as dist\n\n\n"
            "class LM(L.LightningModule):\n"
            "    def on_train_epoch_end(self):\n"
            "        if dist.get_rank() == 0:\n"
            "            print('epoch done of', dist.get_world_size())\n"
            "        dist.barrier()\n",
            count=3,
            line=7,
            message="this raises where no process group exists",
            expected_fix="import lightning as L\nimport torch.distributed as dist\n\n\n"
            "class LM(L.LightningModule):\n"
            "    def on_train_epoch_end(self):\n"
            "        if self.trainer.global_rank == 0:\n"
            "            print('epoch done of', self.trainer.world_size)\n"
            "        self.trainer.strategy.barrier()\n",
            config={"preview": True},
        ),
        # In a Callback hook: the trainer argument.
        Invalid(
            "import lightning as L\nfrom torch.distributed import get_rank\n\n\n"
            "class Saver(L.Callback):\n"
            "    def on_validation_end(self, trainer, pl_module):\n"
            "        if get_rank() == 0:\n"
            "            trainer.save_checkpoint('last.ckpt')\n",
            line=7,
            expected_fix="import lightning as L\nfrom torch.distributed import get_rank\n\n\n"
            "class Saver(L.Callback):\n"
            "    def on_validation_end(self, trainer, pl_module):\n"
            "        if trainer.global_rank == 0:\n"
            "            trainer.save_checkpoint('last.ckpt')\n",
            config={"preview": True},
        ),
        # A helper the training step calls.
        Invalid(
            "import lightning as L\nimport torch\n"
            "import torch.distributed.nn.functional as dnn\n\n\n"
            "def gather(x):\n    return torch.cat(dnn.all_gather(x))\n\n\n"
            "class LM(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        return gather(self(batch)).sum()\n",
            line=7,
            message="raises",
            config={"preview": True},
        ),
        # An early exit: the rest of the function is the guarded region.
        Invalid(
            "import lightning as L\nimport torch.distributed as dist\n\n\n"
            "def mean_over_ranks(loss):\n"
            "    if not dist.is_initialized():\n"
            "        return loss\n"
            "    dist.all_reduce(loss)\n"
            "    return loss / dist.get_world_size()\n\n\n"
            "class LM(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        return mean_over_ranks(self(batch).sum())\n",
            line=6,
            message="the early exit runs instead (`return loss`)",
            config={"preview": True},
        ),
        # A helper that is the test: reported where it guards, once.
        Invalid(
            "import lightning as L\nimport torch\nimport torch.distributed as dist\n\n\n"
            "def is_dist():\n"
            "    return dist.is_available() and dist.is_initialized()\n\n\n"
            "class LM(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        z = self(batch)\n"
            "        if is_dist():\n"
            "            parts = [torch.zeros_like(z) for _ in range(dist.get_world_size())]\n"
            "            dist.all_gather(parts, z)\n"
            "            z = torch.cat(parts)\n"
            "        return z.sum()\n",
            line=13,
            message="the `get_world_size`, `all_gather` it guards never run",
            config={"preview": True},
        ),
        # A rank-0 default that shards data: every core reads rank 0's share.
        Invalid(
            "import lightning as L\nimport torch.distributed as dist\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def setup(self, stage):\n"
            "        rank = dist.get_rank() if dist.is_initialized() else 0\n"
            "        self.files = self.all_files[rank::8]\n",
            line=7,
            message="it evaluates to `0` instead",
            config={"preview": True},
        ),
        # A private helper called only where the guard holds: reported once, at the guard.
        Invalid(
            "import lightning as L\nimport torch.distributed as dist\n\n\n"
            "def _scale():\n"
            "    return dist.get_world_size()\n\n\n"
            "class LM(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        loss = self(batch).sum()\n"
            "        if dist.is_initialized():\n"
            "            loss = loss * _scale()\n"
            "        return loss\n",
            line=12,
            config={"preview": True},
        ),
        # A skipped barrier: the others no longer wait for rank 0's file.
        Invalid(
            "import lightning as L\nimport torch.distributed as dist\n\n\n"
            "class Saver(L.Callback):\n"
            "    def on_train_epoch_end(self, trainer, pl_module):\n"
            "        if trainer.is_global_zero:\n"
            "            trainer.save_checkpoint('last.ckpt')\n"
            "        if dist.is_initialized():\n"
            "            dist.barrier()\n",
            line=9,
            message="the processes do not wait for each other there",
            config={"preview": True},
        ),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._guard_helper_cache: dict[int, bool] = {}
        self._helper_defs: dict[str, cst.FunctionDef] | None = None
        self._parents: dict[int, cst.CSTNode] | None = None
        self._called_guarded: dict[int, bool] = {}

    def _parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The parent of any node of the file (the walk's own links exist only for the
        nodes it reached so far; a guard looks ahead into the code it guards)."""
        if self._parents is None:
            self._parents = {}
            stack: list[cst.CSTNode] = [self.ctx.module]
            while stack:
                current = stack.pop()
                for child in iter_children(current):
                    self._parents[id(child)] = current
                    stack.append(child)
        return self._parents.get(id(node))

    def _ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        current = self._parent(node)
        while current is not None:
            yield current
            current = self._parent(current)

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        name = self._dist_name(node)
        helper = None
        if name is None:
            if node.args:
                return
            helper = self._guard_helper(node)
            if helper is None:
                return
            name = "is_initialized"
        if name not in _QUERIES and name not in _COLLECTIVES:
            return
        klass = ctx.lightning_class
        if is_framework_file(ctx):
            return
        if klass is None and not ctx.in_hot_code:
            if name in ("get_rank", "get_world_size"):
                self._check_sampler_query(node, name)
            return
        if not self.preview_mode:
            return  # calls and guards in Lightning classes and hot code: a preview shape (Status)
        if self._tells_xla_apart(node):
            return
        shown = source_of(ctx, node)
        where = (
            f"`{klass.name}.{ctx.method_name}`"
            if klass is not None and ctx.method_name
            else ctx.hot_reason or "code the Trainer runs"
        )
        base = (
            f"`{shown}` in {where}: Lightning's XLA strategy never initialises torch.distributed"
            " (it communicates through torch_xla)"
        )
        if helper is not None:
            base = (
                f"`{shown}` in {where} asks whether torch.distributed is initialised: Lightning's"
                " XLA strategy never initialises it (it communicates through torch_xla)"
            )
        trainer, module = self._handles(klass)
        if self._in_handler(node):
            return  # an `except` handler runs when the step failed, not the training's path
        if name == "is_initialized":
            guard = self._guard_of(node)
            if guard is not None and self._in_guarded_region(guard.construct):
                return  # an inner guard: the outer one is the finding
            if guard is None and self._in_guarded_region(node):
                return
            calls = self._guarded_calls(guard) if guard is not None else []
            if guard is not None and self._harmless(guard, calls):
                return
            self._report_guard(node, base, guard, calls, trainer, module, helper is None)
            return
        if self._in_guarded_region(node):
            return  # never runs on TPU cores: a related place of its guard's finding
        replacement = None
        if name in ("get_rank", "get_world_size", "barrier") and trainer and not node.args:
            replacement = cst.parse_expression(_INSTEAD[name].format(trainer=trainer))
        if name in _QUERIES:
            message = (
                f"{base}: this raises where no process group exists; use"
                f" `{_INSTEAD[name].format(trainer=trainer or 'self.trainer')}`"
            )
        else:
            instead = _INSTEAD.get(name)
            use = (
                f"`{instead.format(trainer=trainer or 'self.trainer', module=module or 'self')}`"
                if instead
                else "the strategy's collectives (`self.all_gather`, `self.trainer.strategy`)"
            )
            message = f"{base}: this raises there (no default process group); use {use}"
        if replacement is not None:
            self.report(node, message, replacement=replacement)
        else:
            self.report(node, message)

    def _check_sampler_query(self, node: cst.Call, name: str) -> None:
        """`dist.get_rank()` / `dist.get_world_size()` asked unconditionally by a sampler of a
        Lightning project (a `Sampler`/`BatchSampler` subclass, or a class named `...Sampler`
        / `...Batcher`, in `__init__`, `__iter__`, `__len__` or `set_epoch`): a dataloader
        hook builds it under the Trainer, where the XLA strategy has no process group, so it
        raises when the loader is built. A query under an `is_initialized()` guard, or in a
        `try` that catches the error, does not raise (and Lightning then shards the sampler
        itself): not reported."""
        ctx = self.ctx
        klass = ctx.klass
        method = ctx.method_name
        info = ctx.function
        # A DataLoader's `worker_init_fn` runs in every worker of the loader the same way.
        worker = info is not None and "worker_init" in info.name
        sampler = klass is not None and method in _SAMPLER_METHODS and _is_sampler_class(klass)
        if not (sampler or worker):
            return
        view = ctx.analysis.view
        lightning = (
            view.imported_by_lightning_code
            if view is not None
            else any(info.is_lightning for info in ctx.analysis.classes.values())
        )
        if not lightning:
            return
        function = ctx.current_function()
        if function is None:
            return
        # One finding per method, at its first query; the others are related places.
        flags = self._guard_flags(function)
        queries = [
            call
            for call in iter_in_order(function)
            if isinstance(call, cst.Call)
            and self._dist_name(call) in ("get_rank", "get_world_size")
            and not (
                self._in_guarded_region(call)
                or self._tells_xla_apart(call)
                or self._caught(call)
                or self._under_flag(call, flags)
            )
        ]
        if not queries or queries[0] is not node:
            return
        names = list(dict.fromkeys(self._dist_name(call) for call in queries))
        instead = " and ".join(
            f"`self.trainer.{'global_rank' if n == 'get_rank' else 'world_size'}`" for n in names
        )
        if sampler:
            where = (
                f"in the sampler `{klass.name}.{method}`: a dataloader hook that builds it under"
                " Lightning's XLA strategy raises here"
            )
        else:
            where = (
                f"in the DataLoader worker initialiser `{info.name}`: every worker of a loader"
                " under Lightning's XLA strategy raises here (`ValueError` in torch 2.x, which"
                " `except RuntimeError` does not catch)"
            )
        self.report(
            node,
            f"`{source_of(ctx, node)}` {where} (the strategy never initialises"
            " torch.distributed: 'Default process group has not been initialized'); pass"
            f" {instead} in from the hook, or leave the sharding to Lightning's sampler"
            " injection",
            related=[
                RelatedNode(call, f"`{source_of(ctx, call)}` raises there too")
                for call in queries[1:]
            ],
        )

    def _guard_flags(self, function: cst.FunctionDef) -> set[str]:
        """Local names that hold the process-group test: assigned from an expression that
        calls `is_initialized()` (or a guard helper), or assigned inside a guarded region
        (`if dist.is_initialized(): is_ddp = True`)."""
        flags = set()
        for node in walk(function):
            if not isinstance(node, cst.Assign):
                continue
            names = [t.target.value for t in node.targets if isinstance(t.target, cst.Name)]
            if names and (
                any(self._is_guard_call(n) for n in walk(node.value))
                or self._in_guarded_region(node)
            ):
                flags.update(names)
        return flags

    def _under_flag(self, node: cst.CSTNode, flags: set[str]) -> bool:
        """Inside an `if`/conditional expression whose test reads one of `flags`."""
        if not flags:
            return False
        for ancestor in self._ancestors(node):
            test = ancestor.test if isinstance(ancestor, (cst.If, cst.IfExp)) else None
            if test is not None and any(
                isinstance(n, cst.Name) and n.value in flags for n in walk(test)
            ):
                return True
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
                return False
        return False

    def _in_handler(self, node: cst.CSTNode) -> bool:
        """Inside an `except` handler (of this function): error-handling code (agreeing on
        skipping a batch after an out-of-memory error), not what every step runs."""
        for ancestor in self._ancestors(node):
            if isinstance(ancestor, cst.ExceptHandler):
                return True
            if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
                return False
        return False

    def _caught(self, node: cst.CSTNode) -> bool:
        """Inside a `try` body whose handlers catch what a missing process group raises
        (`ValueError` in torch 2.x, `RuntimeError` before): `except`, `except Exception`."""
        child = node
        for ancestor in self._ancestors(node):
            if isinstance(ancestor, cst.Try) and child is ancestor.body:
                for handler in ancestor.handlers:
                    caught = handler.type
                    names = (
                        [e.value for e in caught.elements]
                        if isinstance(caught, cst.Tuple)
                        else [caught]
                        if caught is not None
                        else []
                    )
                    if caught is None or any(
                        source_of(self.ctx, n).rsplit(".", 1)[-1]
                        in ("Exception", "BaseException", "ValueError")
                        for n in names
                    ):
                        return True
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
                return False
            child = ancestor
        return False

    def _report_guard(
        self,
        node: cst.Call,
        base: str,
        guard: _Guard | None,
        calls: list[tuple[cst.Call, str]],
        trainer: str | None,
        module: str | None,
        fixable: bool,
    ) -> None:
        """One finding at the guard: what runs instead on TPU cores, the guarded calls as
        related places."""
        ctx = self.ctx
        names = list(dict.fromkeys(n for _, n in calls))
        collectives = [n for n in names if n in _COLLECTIVES and n != "barrier"]
        message = f"{base}, so this is False on every TPU core"
        if guard is None:
            message += (
                " and whatever it decides takes the single-process path: each core acts"
                " as the only process"
            )
        else:
            message += self._fallback_clause(guard, names, collectives)
        related = [
            RelatedNode(call, f"`{source_of(ctx, call)}` never runs on TPU cores (guarded)")
            for call, _ in calls
        ]
        uses = [
            "`"
            + _INSTEAD.get(n, "{trainer}.strategy").format(
                trainer=trainer or "self.trainer", module=module or "self"
            )
            + "`"
            for n in names
        ]
        if not uses:
            uses = [f"`{trainer or 'self.trainer'}.world_size > 1`"]
        message += "; use " + "; ".join(dict.fromkeys(uses))
        if trainer and fixable:
            # Shown, not applied: the guarded collective still needs rewriting.
            self.report(
                node,
                message,
                replacement=cst.parse_expression(f"{trainer}.world_size > 1"),
                applicability=Applicability.DISPLAY_ONLY,
                fix_message="Ask the Trainer whether there are several processes",
                related=related,
            )
        else:
            self.report(node, message, related=related)

    def _fallback_clause(self, guard: _Guard, names: list[str], collectives: list[str]) -> str:
        """What runs on TPU cores instead of the guarded code, in words."""
        ctx = self.ctx
        skipped = ", ".join(f"`{n}`" for n in names)
        verb = "never runs" if len(names) == 1 else "never run"
        if names == ["barrier"]:
            what = (
                " and the `barrier` it guards never runs: the processes do not wait for each"
                " other there (what rank 0 writes or removes may not be done when the others"
                " go on)"
            )
        elif collectives:
            what = (
                f" and the {skipped} it guards {verb}: each core computes with its own"
                " batch only (one process's view), a different training than with DDP on GPUs"
            )
        elif names:
            what = (
                f" and the {skipped} it guards {verb}: each core takes the"
                " single-process path, as rank 0 of a world of 1, and skips everything else"
                " the guard protects"
            )
        else:
            what = " and the code it guards never runs on a TPU core"
        if guard.kind == "exit":
            what += f"; the early exit runs instead (`{_first_line(ctx, guard.fallback[0])}`)"
        elif guard.kind == "ifexp":
            what += f"; it evaluates to `{source_of(ctx, guard.fallback[0])}` instead"
        elif guard.kind == "and":
            what += "; the condition is False"
        elif guard.fallback and isinstance(guard.fallback[0], cst.Else):
            what += f"; the else branch runs instead (`{_first_line(ctx, guard.fallback[0])}`)"
        elif guard.fallback:
            # `if not <guard>: A else: B`: A is what runs.
            what += f"; the `if not` branch runs instead (`{_first_line(ctx, guard.fallback[0])}`)"
        else:
            what += "; nothing runs in its place, and nothing says so"
        return what

    # --- helpers ----------------------------------------------------------------------

    def _handles(self, klass) -> tuple[str | None, str | None]:
        """How this method reaches the Trainer and the LightningModule (None: it cannot)."""
        if klass is None:
            return None, None
        if klass.kind & (ClassKind.LIGHTNING_MODULE | ClassKind.LIGHTNING_DATAMODULE):
            return "self.trainer", "self" if klass.kind & ClassKind.LIGHTNING_MODULE else None
        info = self.ctx.function
        params = set(info.params) if info is not None and getattr(info, "params", None) else set()
        if not params:
            node = klass.methods.get(self.ctx.method_name or "")
            if node is not None:
                params = {p.name.value for p in node.params.params}
        return (
            "trainer" if "trainer" in params else None,
            "pl_module" if "pl_module" in params else None,
        )

    # --- process-group guards ----------------------------------------------------------

    def _dist_name(self, call: cst.Call) -> str | None:
        """The torch.distributed function a call names (`all_gather`, `is_initialized`),
        or None."""
        qualified = self.ctx.qualify(call.func) or ""
        for alias in _DIST_REEXPORTS:
            if qualified.startswith(alias):
                qualified = _DIST + qualified[len(alias) :]
        if qualified.startswith(_DIST_NN):
            return qualified[len(_DIST_NN) :]
        if qualified.startswith(_DIST) and "." not in qualified[len(_DIST) :]:
            return qualified[len(_DIST) :]
        return None

    def _is_guard_call(self, node: cst.CSTNode) -> bool:
        """`dist.is_initialized()`, or a call of a helper that is exactly that test."""
        if not isinstance(node, cst.Call):
            return False
        if self._dist_name(node) == "is_initialized":
            return True
        return not node.args and self._guard_helper(node) is not None

    def _guard_helper(self, call: cst.Call) -> str | None:
        """The name of the helper `call` calls when the helper is the process-group test:
        a function of this file (or a method of this class, through `self.`) whose body
        only answers `is_available() and is_initialized()` (`return dist.is_available() and
        dist.is_initialized()`, or the `if not ...: return False` / `return True` form), or
        one named by the common convention (`is_dist_avail_and_initialized`,
        `_distributed_is_initialized`) wherever it is defined."""
        func = call.func
        if isinstance(func, cst.Name):
            name = func.value
        elif (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value in ("self", "cls")
        ):
            name = func.attr.value
        else:
            qualified = self.ctx.qualify(func) or ""
            name = qualified.rsplit(".", 1)[-1]
            return name if _GUARD_HELPER_NAME.match(name) else None
        definition = self._helpers().get(name)
        if definition is not None:
            return name if self._is_guard_helper(definition) else None
        return name if _GUARD_HELPER_NAME.match(name) else None

    def _helpers(self) -> dict[str, cst.FunctionDef]:
        cached = getattr(self, "_helper_defs", None)
        if cached is None:
            cached = {}
            for statement in self.ctx.module.body:
                if isinstance(statement, cst.FunctionDef):
                    cached.setdefault(statement.name.value, statement)
                elif isinstance(statement, cst.ClassDef):
                    for inner in statement.body.body:
                        if isinstance(inner, cst.FunctionDef):
                            cached.setdefault(inner.name.value, inner)
            self._helper_defs = cached
        return cached

    def _is_guard_helper(self, function: cst.FunctionDef) -> bool:
        """A function that only answers whether the process group exists (see
        `_guard_helper`)."""
        cached = self._guard_helper_cache.get(id(function))
        if cached is not None:
            return cached
        result = False
        body = function.body
        statements = list(body.body) if isinstance(body, cst.IndentedBlock) else [body]
        if statements and _is_docstring(statements[0]):
            statements = statements[1:]
        asks = False
        for statement in statements:
            if isinstance(statement, cst.If) and statement.orelse is None:
                inner = statement.body
                small = (
                    inner.body
                    if isinstance(inner, cst.SimpleStatementSuite)
                    else (
                        inner.body[0].body
                        if len(inner.body) == 1
                        and isinstance(inner.body[0], cst.SimpleStatementLine)
                        else []
                    )
                )
                if not (
                    len(small) == 1
                    and isinstance(small[0], cst.Return)
                    and _is_bool_constant(small[0].value)
                    and self._only_asks_availability(statement.test)
                ):
                    break
                asks = asks or self._asks_initialized(statement.test)
            elif (
                isinstance(statement, cst.SimpleStatementLine)
                and len(statement.body) == 1
                and isinstance(statement.body[0], cst.Return)
                and statement.body[0].value is not None
            ):
                value = statement.body[0].value
                if _is_bool_constant(value):
                    result = asks
                elif self._only_asks_availability(value) and self._is_positive(value):
                    result = True
                break
            else:
                break
        self._guard_helper_cache[id(function)] = result
        return result

    def _only_asks_availability(self, test: cst.BaseExpression) -> bool:
        """`is_available()` / `is_initialized()` calls joined by `and`/`or`/`not`."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self._only_asks_availability(test.expression)
        if isinstance(test, cst.BooleanOperation):
            return self._only_asks_availability(test.left) and self._only_asks_availability(
                test.right
            )
        return isinstance(test, cst.Call) and self._dist_name(test) in (
            "is_available",
            "is_initialized",
        )

    def _asks_initialized(self, test: cst.BaseExpression) -> bool:
        return any(
            isinstance(call, cst.Call) and self._dist_name(call) == "is_initialized"
            for call in walk(test)
        )

    def _is_positive(self, test: cst.BaseExpression) -> bool:
        """True only where the process group exists: the guard, or `and` with the guard."""
        if self._is_guard_call(test):
            return True
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            return self._is_positive(test.left) or self._is_positive(test.right)
        return False

    def _is_negative(self, test: cst.BaseExpression) -> bool:
        """True wherever the process group is missing: `not <guard>`, or `or` with it."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self._is_positive(test.expression)
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
            return self._is_negative(test.left) or self._is_negative(test.right)
        return False

    def _guard_of(self, node: cst.CSTNode) -> _Guard | None:
        """The construct the guard call `node` decides: what runs only with a process
        group (`region`) and what runs instead on TPU cores (`fallback`)."""
        child: cst.CSTNode = node
        for ancestor in self._ancestors(node):
            if isinstance(ancestor, (cst.BooleanOperation, cst.UnaryOperation)):
                if (
                    isinstance(ancestor, cst.BooleanOperation)
                    and isinstance(ancestor.operator, cst.And)
                    and child is ancestor.left
                    and self._is_positive(child)
                    and not isinstance(self._parent(ancestor), (cst.If, cst.IfExp))
                ):
                    # `flag = dist.is_initialized() and dist.get_rank() > 0`
                    return _Guard(ancestor, [ancestor.right], [], "and")
                child = ancestor
                continue
            if isinstance(ancestor, (cst.If, cst.IfExp)) and child is ancestor.test:
                test = ancestor.test
                if isinstance(ancestor, cst.IfExp):
                    if self._is_positive(test):
                        return _Guard(ancestor, [ancestor.body], [ancestor.orelse], "ifexp")
                    if self._is_negative(test):
                        return _Guard(ancestor, [ancestor.orelse], [ancestor.body], "ifexp")
                    return None
                if self._is_positive(test):
                    fallback = [ancestor.orelse] if ancestor.orelse is not None else []
                    return _Guard(ancestor, [ancestor.body], fallback, "if")
                if self._is_negative(test):
                    if ancestor.orelse is not None:
                        return _Guard(ancestor, [ancestor.orelse], [ancestor.body], "if")
                    after = self._after_early_exit(ancestor)
                    if after is not None:
                        return _Guard(ancestor, after, [ancestor.body], "exit")
                return None
            return None
        return None

    def _after_early_exit(self, statement: cst.If) -> list[cst.CSTNode] | None:
        """The statements after `if not <guard>: ...; return` in its block (None when the
        `if` does not always leave the block)."""
        body = statement.body
        last = body.body[-1] if isinstance(body, cst.IndentedBlock) else body
        smalls = (
            last.body
            if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite))
            else []
        )
        if not smalls or not isinstance(
            smalls[-1], (cst.Return, cst.Raise, cst.Continue, cst.Break)
        ):
            return None
        block = self._parent(statement)
        if not isinstance(block, (cst.IndentedBlock, cst.Module)):
            return None
        statements = list(block.body)
        index = next(i for i, s in enumerate(statements) if s is statement)
        return statements[index + 1 :]

    def _in_guarded_region(self, node: cst.CSTNode) -> bool:
        """Whether `node` runs only where the process group exists: in the region of a
        guard of its function (its body, the rest of a block after `if not <guard>:
        return`, the right of `<guard> and ...`), or in a helper that is the guard."""
        child: cst.CSTNode = node
        for ancestor in self._ancestors(node):
            if isinstance(ancestor, (cst.If, cst.IfExp)):
                if child is ancestor.body and self._is_positive(ancestor.test):
                    return True
                if child is ancestor.orelse and self._is_negative(ancestor.test):
                    return True
            elif isinstance(ancestor, cst.BooleanOperation):
                if (
                    isinstance(ancestor.operator, cst.And)
                    and child is ancestor.right
                    and self._is_positive(ancestor.left)
                ):
                    return True
            elif isinstance(ancestor, (cst.IndentedBlock, cst.Module)):
                for statement in ancestor.body:
                    if statement is child:
                        break
                    if (
                        isinstance(statement, cst.If)
                        and statement.orelse is None
                        and self._is_negative(statement.test)
                        and self._after_early_exit(statement) is not None
                    ):
                        return True
            elif isinstance(ancestor, cst.FunctionDef):
                return self._is_guard_helper(ancestor) or self._only_called_guarded(ancestor)
            elif isinstance(ancestor, (cst.ClassDef, cst.Lambda)):
                return False
            child = ancestor
        return False

    def _only_called_guarded(self, function: cst.FunctionDef) -> bool:
        """A private helper (`_name`, so used in this file only) that every use calls from
        a guarded region: it never runs under XLA either."""
        name = function.name.value
        if not name.startswith("_") or name.startswith("__"):
            return False
        cached = self._called_guarded.get(id(function))
        if cached is not None:
            return cached
        self._called_guarded[id(function)] = False  # a recursive use proves nothing
        uses = [
            node
            for node in iter_in_order(self.ctx.module)
            if (isinstance(node, cst.Name) and node.value == name)
            or (isinstance(node, cst.Attribute) and node.attr.value == name)
        ]
        result = bool(uses)
        for use in uses:
            parent = self._parent(use)
            if (isinstance(parent, cst.Attribute) and parent.attr is use) or (
                isinstance(parent, cst.FunctionDef) and parent.name is use
            ):
                continue  # the attribute is the use; the definition is none
            call = self._parent(use)
            if not (
                isinstance(call, cst.Call) and call.func is use and self._in_guarded_region(call)
            ):
                result = False
                break
        self._called_guarded[id(function)] = result
        return result

    def _guarded_calls(self, guard: _Guard) -> list[tuple[cst.Call, str]]:
        """The torch.distributed calls in the guard's region (not the guard itself)."""
        found = []
        for root in guard.region:
            for call in iter_in_order(root):
                if isinstance(call, cst.Call):
                    name = self._dist_name(call)
                    if name != "is_initialized" and (name in _QUERIES or name in _COLLECTIVES):
                        found.append((call, name))
        return found

    def _harmless(self, guard: _Guard, calls: list[tuple[cst.Call, str]]) -> bool:
        """Whether what runs on TPU cores instead of the region changes nothing a user
        would care about (see the module docstring's "not reported"). Conservative: any
        tensor collective, any rank or world size used outside an output call or a
        rank-0 test, and any fallback that computes something, keep the finding."""
        if guard.kind not in ("if", "exit"):
            return False
        names = {name for _, name in calls}
        if names - _NO_DATA:
            return False  # a tensor moves between processes, or is reduced
        for call, name in calls:
            if name in ("get_rank", "get_world_size") and not self._rank_for_output(call):
                return False
        if all(_output_only(self.ctx, root) for root in guard.region) and (
            guard.kind == "if" and all(_output_only(self.ctx, root) for root in guard.fallback)
        ):
            return True  # only messages (and barriers) are skipped
        if guard.kind == "if" and guard.fallback:
            # Rank 0 shares a value; the fallback reads it itself: the same value on every
            # process (a configured path), as long as it is read, not computed.
            assigned = _assigned_names(guard.region)
            reads = _plain_reads(guard.fallback[0])
            return (
                "broadcast_object_list" in names
                and reads is not None
                and set(reads) <= assigned
                and all(self.ctx.value_kind(v) not in (DEVICE, CPU) for v in reads.values())
            )
        return False

    def _rank_for_output(self, call: cst.Call) -> bool:
        """A rank or world size used only to choose rank 0 (`get_rank() == 0` in a test) or
        in an output call's arguments."""
        for ancestor in self._ancestors(call):
            if isinstance(ancestor, cst.Comparison) and _compares_with_constant(ancestor):
                return isinstance(self._parent(ancestor), (cst.If, cst.BooleanOperation))
            if isinstance(ancestor, cst.Call) and _is_output_call(self.ctx, ancestor):
                return True
            if isinstance(ancestor, (cst.Arg, cst.FormattedString, cst.FormattedStringExpression)):
                continue
            return False
        return False

    def _tells_xla_apart(self, node: cst.Call) -> bool:
        """Inside an `if`/`elif` chain (or a conditional expression) one of whose tests
        names XLA or TPU: the code chooses per strategy itself (`if self.use_ddp: ...
        elif self.use_tpu: xm.all_reduce(...)`)."""
        for ancestor in self._ancestors(node):
            if isinstance(ancestor, cst.IfExp):
                tests = [ancestor.test]
            elif isinstance(ancestor, cst.If):
                tests = []
                branch: cst.CSTNode | None = ancestor
                while isinstance(branch, cst.If):
                    tests.append(branch.test)
                    branch = branch.orelse
            else:
                continue
            for test in tests:
                text = source_of(self.ctx, test).lower()
                if "xla" in text or "tpu" in text:
                    return True
        return False


@dataclass(frozen=True)
class _Guard:
    """What a process-group guard decides: `region` runs only with a process group,
    `fallback` runs instead on TPU cores. `kind`: "if" (an `if`/`else`), "exit" (`if not
    <guard>: ... return` and the rest of the block), "ifexp" (`a if <guard> else b`),
    "and" (`<guard> and ...` outside a test)."""

    construct: cst.CSTNode
    region: list[cst.CSTNode]
    fallback: list[cst.CSTNode]
    kind: str


# Helpers named for the test itself, by a common convention (torchvision's and DETR's
# `is_dist_avail_and_initialized`, Lightning's `_distributed_is_initialized`).
_GUARD_HELPER_NAME = re.compile(
    r"^_?(is_)?dist(ributed)?(_is)?(_avail(able)?_and)?_initiali[sz]ed$"
)
_DIST_CALLS = _QUERIES | _COLLECTIVES
# Calls that move no tensor between processes: skipping them changes no value by itself.
_NO_DATA = frozenset({"get_rank", "get_world_size", "barrier", "broadcast_object_list"})
_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical"})


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_bool_constant(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value in ("True", "False")


def _first_line(ctx, node: cst.CSTNode) -> str:
    if isinstance(node, cst.Else):
        node = node.body
    if isinstance(node, cst.IndentedBlock) and node.body:
        node = node.body[0]
    text = source_of(ctx, node).strip().splitlines()
    return text[0] if text else ""


def _is_output_call(ctx, call: cst.Call) -> bool:
    """`print(...)`, `logging`/a logger's messages, `warnings.warn`, Lightning's
    `rank_zero_info`/`rank_zero_warn`, `self.print`."""
    qualified = ctx.qualify(call.func) or ""
    last = qualified.rsplit(".", 1)[-1]
    if qualified in ("print", "warnings.warn") or qualified.startswith("logging."):
        return True
    if last.startswith("rank_zero_") and last != "rank_zero_only":
        return True
    func = call.func
    if isinstance(func, cst.Attribute):
        receiver = source_of(ctx, func.value).lower()
        if func.attr.value in _LOG_METHODS and "log" in receiver.rsplit(".", 1)[-1]:
            return True
        if func.attr.value == "print" and receiver == "self":
            return True
    return isinstance(func, cst.Name) and func.value == "print"


def _output_only(ctx, root: cst.CSTNode) -> bool:
    """Code that only prints or logs (or passes). A barrier is not: without it the other
    processes go on before rank 0 has written or removed what they read next."""
    if isinstance(root, cst.Else):
        root = root.body
    if isinstance(root, cst.If):
        return _output_only(ctx, root.body) and (
            root.orelse is None or _output_only(ctx, root.orelse)
        )
    if isinstance(root, (cst.IndentedBlock, cst.SimpleStatementSuite)):
        return all(_output_only(ctx, statement) for statement in root.body)
    if isinstance(root, cst.SimpleStatementLine):
        return all(_output_only(ctx, small) for small in root.body)
    if isinstance(root, cst.Pass):
        return True
    if isinstance(root, cst.Expr) and isinstance(root.value, cst.Call):
        return _is_output_call(ctx, root.value)
    return False


def _assigned_names(roots: list[cst.CSTNode]) -> set[str]:
    names = set()
    for root in roots:
        for node in walk(root):
            if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Name):
                names.add(node.target.value)
    return names


_SAMPLER_METHODS = frozenset({"__init__", "__iter__", "__len__", "set_epoch"})
_SAMPLER_BASE = re.compile(r"(^|\.)(\w*Sampler)$")
_SAMPLER_NAME = re.compile(r"(Sampler|Batcher)$")


def _is_sampler_class(klass) -> bool:
    """A torch `Sampler`/`BatchSampler` subclass (directly or through a class of the file), or
    a class named as one (`LengthBatcher`, `BucketSampler`)."""
    seen: set[int] = set()
    stack = [klass]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if _SAMPLER_NAME.search(current.name) or any(
            _SAMPLER_BASE.search(base) for base in current.bases
        ):
            return True
        stack.extend(current.local_bases)
    return False


def _plain_reads(fallback: cst.CSTNode) -> dict[str, cst.BaseExpression] | None:
    """`name = <a name, attribute or item read>` statements, and nothing else (None)."""
    if not isinstance(fallback, cst.Else) or not isinstance(fallback.body, cst.IndentedBlock):
        return None
    reads = {}
    for statement in fallback.body.body:
        if not (
            isinstance(statement, cst.SimpleStatementLine)
            and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Assign)
            and len(statement.body[0].targets) == 1
            and isinstance(statement.body[0].targets[0].target, cst.Name)
        ):
            return None
        value = statement.body[0].value
        if not isinstance(value, (cst.Attribute, cst.Subscript)) or any(
            isinstance(n, cst.Call) for n in walk(value)
        ):
            return None
        reads[statement.body[0].targets[0].target.value] = value
    return reads or None


def _compares_with_constant(comparison: cst.Comparison) -> bool:
    """`<x> == 0`, `<x> > 0`, `0 != <x>`: a rank tested against a number."""
    if len(comparison.comparisons) != 1:
        return False
    sides = (comparison.left, comparison.comparisons[0].comparator)
    return any(isinstance(side, cst.Integer) for side in sides)

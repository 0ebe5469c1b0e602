"""TPU505 torch-distributed-under-xla: `torch.distributed` in code that runs under a TPU
Trainer."""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from tpulint.analysis.project import ClassKind
from tpulint.datatypes.diagnostics import Applicability, Severity
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.configuration import is_framework_file
from ..shared.matchers import source_of

_DIST = "torch.distributed."
_DIST_NN = "torch.distributed.nn.functional."
# The process-group queries and collectives DDP code uses.
_QUERIES = frozenset({"is_initialized", "get_rank", "get_world_size"})
_COLLECTIVES = frozenset(
    {
        "all_gather",
        "all_gather_into_tensor",
        "all_gather_object",
        "all_reduce",
        "reduce",
        "broadcast",
        "broadcast_object_list",
        "barrier",
        "gather",
        "scatter",
        "all_to_all",
        "reduce_scatter",
        "reduce_scatter_tensor",
    }
)
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
    """

    code = "TPU505"
    name = "torch-distributed-under-xla"
    summary = "`torch.distributed` calls and guards in code run by a Trainer on TPU cores"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = "Ask the Trainer instead of torch.distributed"
    requires = ("distributed",)

    VALID = (
        # Through the strategy: works under the XLA strategy.
        Valid(
            "import lightning as L\n\n\nclass LM(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        keys = self.all_gather(batch, sync_grads=True)\n"
            "        return keys.sum() * self.trainer.world_size\n"
        ),
        # Not code a Trainer runs: a launcher script of its own.
        Valid(
            "import torch.distributed as dist\n\n\ndef main():\n"
            "    dist.init_process_group('nccl')\n    print(dist.get_rank())\n"
        ),
        # Availability alone says nothing about the process group.
        Valid(
            "import lightning as L\nimport torch.distributed as dist\n\n\n"
            "class LM(L.LightningModule):\n"
            "    def on_fit_start(self):\n"
            "        self.can_gather = dist.is_available()\n"
        ),
        # The code tells the XLA strategy apart itself.
        Valid(
            "import lightning as L\nimport torch.distributed as dist\n"
            "from lightning.pytorch.strategies import XLAStrategy\n\n\n"
            "class LM(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        if not isinstance(self.trainer.strategy, XLAStrategy):\n"
            "            dist.barrier()\n"
            "        return batch.sum()\n"
        ),
    )
    INVALID = (
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
            count=2,
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
            message="rank 0 of 1",
            expected_fix="import lightning as L\nimport torch.distributed as dist\n\n\n"
            "class LM(L.LightningModule):\n"
            "    def on_train_epoch_end(self):\n"
            "        if self.trainer.global_rank == 0:\n"
            "            print('epoch done of', self.trainer.world_size)\n"
            "        self.trainer.strategy.barrier()\n",
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
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        qualified = ctx.qualify(node.func) or ""
        if qualified.startswith(_DIST_NN):
            name = qualified[len(_DIST_NN) :]
        elif qualified.startswith(_DIST) and "." not in qualified[len(_DIST) :]:
            name = qualified[len(_DIST) :]
        else:
            return
        if name not in _QUERIES and name not in _COLLECTIVES:
            return
        klass = ctx.lightning_class
        if (klass is None and not ctx.in_hot_code) or is_framework_file(ctx):
            return
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
        trainer, module = self._handles(klass)
        if name == "is_initialized":
            guarded = self._guarded_collectives(node)
            if guarded:
                names = ", ".join(f"`{n}`" for n in guarded)
                message = (
                    f"{base}, so this is False on every TPU core and the {names} it guards never"
                    " runs: each core computes with its own batch only, a different training"
                    " than with DDP on GPUs; use "
                    + "; ".join(
                        dict.fromkeys(
                            "`"
                            + _INSTEAD.get(n, "{trainer}.strategy").format(
                                trainer=trainer or "self.trainer", module=module or "self"
                            )
                            + "`"
                            for n in guarded
                        )
                    )
                )
            else:
                message = (
                    f"{base}, so this is False on every TPU core and the code it guards runs as"
                    f" a single process; ask `{trainer or 'self.trainer'}.world_size > 1`"
                )
            if trainer:
                # Shown, not applied: the guarded collective still needs rewriting.
                self.report(
                    node,
                    message,
                    replacement=cst.parse_expression(f"{trainer}.world_size > 1"),
                    applicability=Applicability.DISPLAY_ONLY,
                    fix_message="Ask the Trainer whether there are several processes",
                )
            else:
                self.report(node, message)
            return
        replacement = None
        if name in ("get_rank", "get_world_size", "barrier") and trainer and not node.args:
            replacement = cst.parse_expression(_INSTEAD[name].format(trainer=trainer))
        if name in _QUERIES:
            message = (
                f"{base}: this raises where no process group exists, and guarded code sees rank"
                " 0 of 1 on every core; use"
                f" `{_INSTEAD[name].format(trainer=trainer or 'self.trainer')}`"
            )
        else:
            instead = _INSTEAD.get(name)
            use = (
                f"`{instead.format(trainer=trainer or 'self.trainer', module=module or 'self')}`"
                if instead
                else "the strategy's collectives (`self.all_gather`, `self.trainer.strategy`)"
            )
            message = (
                f"{base}: this raises there (no default process group), or never runs behind"
                f" a guard; use {use}"
            )
        if replacement is not None:
            self.report(node, message, replacement=replacement)
        else:
            self.report(node, message)

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

    def _guarded_collectives(self, node: cst.Call) -> list[str]:
        """The collectives the `if` whose test holds `node` runs in its body."""
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, cst.If):
                found = set()
                for call in m.findall(ancestor.body, m.Call()):
                    qualified = self.ctx.qualify(call.func) or ""  # type: ignore[attr-defined]
                    name = qualified.rsplit(".", 1)[-1]
                    if qualified.startswith(_DIST) and name in _COLLECTIVES:
                        found.add(name)
                return sorted(found)
            if isinstance(ancestor, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return []  # the call is not in an `if`'s test
        return []

    def _tells_xla_apart(self, node: cst.Call) -> bool:
        """Inside an `if` (or its else) whose test names XLA or TPU: the code chooses per
        strategy itself."""
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, (cst.If, cst.IfExp)):
                test = source_of(self.ctx, ancestor.test).lower()
                if "xla" in test or "tpu" in test:
                    return True
        return False

"""TPU309 budget-batch-sampler."""

from __future__ import annotations

import re

import libcst as cst

from tpulint.analysis.project import FileView
from tpulint.analysis.walker import iter_in_order
from tpulint.datatypes.diagnostics import Severity
from tpulint.rule_api.rule import Invalid, Valid

from ..shared.matchers import source_of, walk
from .helpers import _DataRule

_SAMPLER_NAME = re.compile(r"(Sampler|Batcher|BatchSampler)$")
_SAMPLER_BASE = re.compile(r"(^|\.)\w*BatchSampler$|(^|\.)Sampler$")
# A budget of tokens (or of squared lengths) per batch: `max_tokens`, `tokens_per_batch`,
# `max_square_tokens`, `batch_max_tokens`.
_TOKEN_BUDGET = re.compile(r"(?i)tokens?")
# A sample's length: `len(...)`, `seq_len`, `length`, `max_len`.
_LENGTH = re.compile(r"(?i)(^|_)(len|length|lengths|seq_len|seqlen)($|_)|len$|length$")
# A batch size being computed: `max_batch_size`, `batch_size`, `bsz`.
_BATCH_SIZE = re.compile(r"(?i)batch_?size|max_batch|bsz")


def _names(node: cst.CSTNode) -> list[str]:
    """The names and attribute names a node reads."""
    out = []
    for inner in walk(node):
        if isinstance(inner, cst.Name):
            out.append(inner.value)
        elif isinstance(inner, cst.Attribute):
            out.append(inner.attr.value)
    return out


# Bases that make a class a network, not a data sampler (`GenerationSampler(nn.Module)`
# samples from a model).
_MODULE_BASE = re.compile(r"(^|\.)(Module|LightningModule|Sequential|ModuleList|ModuleDict)$")


def _is_sampler(node: cst.ClassDef, source) -> bool:
    bases = [source(base.value) for base in node.bases]
    if any(_MODULE_BASE.search(base) for base in bases):
        return False
    if _SAMPLER_NAME.search(node.name.value):
        return True
    return any(_SAMPLER_BASE.search(base) for base in bases)


class BudgetBatchSampler(_DataRule):
    """
    ## What it does
    Finds batch samplers that size each batch by a budget instead of a count: a sampler class
    (a `BatchSampler` subclass, or a class named `...Sampler` / `...Batcher`) of a Lightning
    or torch_xla project whose methods compare a running size against a token budget
    (`if (len(batch) + 1) * longest <= self.max_tokens:`), or compute a batch size by
    dividing a budget by a sample length (`max_batch = budget // seq_len**2`).

    ## Why is this bad on TPU?
    Such a sampler gives many short sequences or few long ones: the batch dimension changes
    from step to step, and with it (since samples of one batch have similar lengths) the
    padded length. XLA compiles one graph per input shape, so the run compiles the whole
    training step again for nearly every new (batch, length) pair, hundreds of graphs, and
    most batch sizes are not multiples of 8 (padding on the TPU's matrix units). On GPUs
    token budgets save memory; on TPUs a few fixed shapes are what runs fast.

    ## Example
    ```python
    import lightning as L
    from torch.utils.data import BatchSampler, DataLoader


    class TokenBudgetSampler(BatchSampler):
        def __iter__(self):
            batch, longest = [], 0
            for idx in self.sampler:
                longest = max(longest, self.lengths[idx])
                if (len(batch) + 1) * longest > self.max_tokens:
                    yield batch
                    batch, longest = [], self.lengths[idx]
                batch.append(idx)


    class DM(L.LightningDataModule):
        def train_dataloader(self):
            return DataLoader(self.ds, batch_sampler=TokenBudgetSampler(self.sampler, 1, False))
    ```

    ## Use instead
    Bucket by length into a few fixed lengths, with a fixed batch size per bucket, and pad
    every sequence to its bucket's length (in the collate function); or use one fixed batch
    size and pad to a fixed maximum length.
    ```python
    import lightning as L
    from torch.utils.data import BatchSampler, DataLoader


    class BucketSampler(BatchSampler):
        def __iter__(self):
            buckets = {}
            for idx in self.sampler:
                bucket = buckets.setdefault(self.bucket_of(self.lengths[idx]), [])
                bucket.append(idx)
                if len(bucket) == self.batch_size:
                    yield list(bucket)
                    bucket.clear()


    class DM(L.LightningDataModule):
        def train_dataloader(self):
            return DataLoader(self.ds, batch_sampler=BucketSampler(self.sampler, 32, True))
    ```

    ## Fix safety
    No automatic fix: the buckets and batch sizes are the model's memory budget.

    ## References
    - [torch_xla: recompilation causes (dynamic shapes)](https://github.com/pytorch/xla/blob/master/docs/source/perf/recompilation.md)
    - [Hugging Face Accelerate: training on TPUs (fixed shapes)](https://huggingface.co/docs/accelerate/basic_tutorials/tpu)

    ## Status
    Preview (new with the misses of the sci2/sci3 batches: token-budget and length-bucketed
    batch samplers). No fresh batch has been read with it yet.
    """

    code = "TPU309"
    name = "budget-batch-sampler"
    summary = "A batch sampler that sizes batches by a token or length budget (new shapes per step)"
    severity = Severity.WARNING
    preview = True
    requires = ("Sampler", "Batcher")

    VALID = (
        # A fixed number of samples per batch, grouped by length.
        Valid(
            "import lightning as L\nfrom torch.utils.data import BatchSampler\n\n\n"
            "class BucketBatchSampler(BatchSampler):\n"
            "    def __iter__(self):\n"
            "        batch = []\n"
            "        for idx in sorted(self.sampler, key=lambda i: self.lengths[i]):\n"
            "            batch.append(idx)\n"
            "            if len(batch) == self.batch_size:\n"
            "                yield batch\n"
            "                batch = []\n"
        ),
        # A network that samples from a model is not a data sampler.
        Valid(
            "import lightning as L\nfrom torch import nn\n\n\n"
            "class GenerationSampler(nn.Module):\n"
            "    def generate(self, tokens):\n"
            "        if len(tokens) * self.width > self.max_tokens:\n"
            "            tokens = tokens[-self.max_tokens :]\n"
            "        return self.model(tokens)\n"
        ),
        # Tokens counted for a log line, not for cutting batches.
        Valid(
            "import lightning as L\nfrom torch.utils.data import Sampler\n\n\n"
            "class ShuffleSampler(Sampler):\n"
            "    def __init__(self, lengths):\n"
            "        self.lengths = lengths\n"
            "        self.total_tokens = sum(lengths)\n\n"
            "    def __iter__(self):\n"
            "        return iter(range(len(self.lengths)))\n"
        ),
    )
    INVALID = (
        Invalid(
            "import lightning as L\nfrom torch.utils.data import BatchSampler\n\n\n"
            "class TokenBudgetSampler(BatchSampler):\n"
            "    def __iter__(self):\n"
            "        batch, longest = [], 0\n"
            "        for idx in self.sampler:\n"
            "            longest = max(longest, self.lengths[idx])\n"
            "            if (len(batch) + 1) * longest > self.max_tokens:\n"
            "                yield batch\n"
            "                batch, longest = [], self.lengths[idx]\n"
            "            batch.append(idx)\n",
            line=5,
            message="token budget",
        ),
        Invalid(
            "import lightning as L\n\n\n"
            "class LengthBatcher:\n"
            "    def _batches(self, groups):\n"
            "        out = []\n"
            "        for seq_len, items in groups:\n"
            "            max_batch = min(self.max_batch, self.budget // seq_len**2 + 1)\n"
            "            starts = range(0, len(items), max_batch)\n"
            "            out += [items[i : i + max_batch] for i in starts]\n"
            "        return out\n",
            line=4,
            message="divides a budget by the sample length",
        ),
    )

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        # Samplers of modules Lightning code imports (or that import Lightning), or of
        # torch_xla scripts.
        return (
            view.imported_by_lightning_code
            or cls.lightning_code(source, view)
            or ("torch_xla" in source)
        )

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if self._skip or not _is_sampler(node, lambda n: source_of(self.ctx, n)):
            return
        view = self.ctx.analysis.view
        if view is not None and not type(self).applies(self.ctx.source, view):
            return  # not a Lightning or torch_xla project's sampler (the screen, kept exact)
        why = None
        for method in node.body.body:
            if not isinstance(method, cst.FunctionDef) or method.name.value == "__init__":
                continue
            for inner in iter_in_order(method.body):
                if isinstance(inner, cst.Comparison) and any(
                    _TOKEN_BUDGET.search(name) for name in _names(inner)
                ):
                    shown = source_of(self.ctx, inner)
                    why = f"compares the batch against a token budget (`{shown}`)"
                    break
                if (
                    isinstance(inner, cst.Assign)
                    and len(inner.targets) == 1
                    and isinstance(inner.targets[0].target, cst.Name)
                    and _BATCH_SIZE.search(inner.targets[0].target.value)
                    and any(
                        isinstance(op, cst.BinaryOperation)
                        and isinstance(op.operator, (cst.FloorDivide, cst.Divide))
                        and any(_LENGTH.search(name) for name in _names(op.right))
                        for op in walk(inner.value)
                    )
                ):
                    why = (
                        "divides a budget by the sample length to size its batches"
                        f" (`{source_of(self.ctx, inner)}`)"
                    )
                    break
            if why:
                break
        if why is None:
            return
        self.report(
            node.name,
            f"batch sampler `{node.name.value}` {why}: the batch size changes from step to step"
            " (and the padded length with it), so XLA compiles the training step again for"
            " each new batch shape; on TPUs use fixed-size batches padded to a few bucket"
            " lengths",
        )

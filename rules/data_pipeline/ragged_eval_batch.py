"""TPU307 ragged-eval-batch."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.project import FileView
from tpulint.datatypes.diagnostics import Applicability
from tpulint.rule_api.cst_helpers import add_keyword, replace_arg
from tpulint.rule_api.rule import Invalid, Valid

from .helpers import (
    _PL,
    _DataRule,
    _short,
    data_class,
    dataset_size,
    function_stages,
    has_star,
    int_literal,
    is_dataloader_call,
    is_false,
    is_iterable_dataset,
    is_none,
    loader_arg,
    loader_stages,
    per_core,
    ragged_on,
    stage_where,
)


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
    screen_calls = frozenset({"DataLoader"})  # is_dataloader_call

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

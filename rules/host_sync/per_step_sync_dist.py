"""TPU106 per-step-sync-dist."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.project import FileView
from tpulint.analysis.values import MODULE
from tpulint.datatypes.diagnostics import Applicability
from tpulint.rule_api.cst_helpers import add_keywords, keyword_arg, replace_arg
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.matchers import is_log_call
from .helpers import _HEAD, _LOSS

# Hooks where `self.log` defaults to on_step=True (Lightning's _FxValidator table).
_TRAIN_BATCH_HOOKS = frozenset(
    {
        "training_step",
        "on_train_batch_start",
        "on_train_batch_end",
        "on_before_backward",
        "backward",
        "on_after_backward",
        "on_before_optimizer_step",
        "optimizer_step",
        "configure_gradient_clipping",
        "on_before_zero_grad",
        "optimizer_zero_grad",
        "training_step_end",
    }
)
_EVAL_BATCH_HOOKS = frozenset(
    {
        "validation_step",
        "test_step",
        "on_validation_batch_start",
        "on_validation_batch_end",
        "on_test_batch_start",
        "on_test_batch_end",
        "validation_step_end",
        "test_step_end",
    }
)


def _literal_bool(node: cst.BaseExpression) -> bool | None:
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    return None


class PerStepSyncDist(Rule):
    """
    ## What it does
    Finds `self.log(..., sync_dist=True)` and `self.log_dict(..., sync_dist=True)` that log
    on every step: in `training_step` and the training batch hooks (where `on_step`
    defaults to True), and anywhere in code that runs every step with an explicit
    `on_step=True` (a step, a shared step helper both steps call, a sub-module's forward),
    or `on_step=flag` in a helper that a training batch hook calls with the flag True, or
    the split test itself (`on_step=(stage == "train")`, `is_train = phase == "train"`) in
    a helper that a training batch hook passes that split, or
    `on_step=` a value that is True by default on the training path: an attribute every
    assignment of which defaults to True (a constructor parameter `log_on_step=True`,
    `cfg.get("log_on_step", True)`), also through a local chosen by the split
    (`on = self.log_on_step if split == "train" else False`) when a training batch hook
    passes that split down to the helper (through a shared step a subclass overrides, too).

    A helper the steps share that takes the stage (`def compute_loss(self, batch,
    log="train")`, `if log == "val": self.log(..., sync_dist=True)`, or a flag
    `log_metrics=False` that only the validation step passes True) is read per hook: code
    under a test of the parameter that the literal each hook passes decides (or its literal
    default, when a call leaves it out) runs only from the hooks whose literal makes the test
    true, so a log there with no `on_step` is a validation or test log: `self.log` takes its
    defaults from the hook running (`_FxValidator.check_logging_and_get_default_levels(
    self._current_fx_name, ...)`, core/module.py:474; `validation_step` and `test_step`
    default to `on_step=False`, fx_validator.py:131-136), and `_ResultMetric.update` syncs
    per step only `if self.meta.on_step:`, otherwise once in `compute` at the epoch's end
    (result.py:224-225, 246-248; Lightning 2.6.6). `on_step=True` there, or the branch the
    training step's literal takes, is still reported. A call passing anything but a literal,
    spreading its arguments, a parameter the helper rebinds, or a caller not seen keeps the
    code reached.

    Not reported: logging a metric object (`self.log("acc", self.train_acc)` with a
    torchmetrics `Metric`, `self.log_dict(self.metrics)` with a `MetricCollection`, or a dict
    of metric objects, a literal or a local dict every value stored in which is one),
    whether the class builds it or takes it as a constructor parameter annotated with a
    metric class (`def __init__(self, auroc: WindowAUROC)` with `class
    WindowAUROC(Metric)` in the project; `self.auroc = auroc`).
    Lightning applies `sync_dist` to tensors only: its result collection
    syncs a logged tensor in `_ResultMetric.update` and `compute` (`if self.is_tensor:` ...
    `self.meta.sync(...)`), while for a Metric it keeps the object and its forward cache
    and calls the metric's own `compute()` at the epoch's end, which syncs the metric's
    state once (lightning/pytorch/trainer/connectors/logger_connector/result.py, Lightning
    2.6.6, lines 206-253). Logging the tensor a metric returns
    (`self.log("acc", self.train_acc(p, y), sync_dist=True)`) is still a per-step sync.

    Nor a module that every Trainer of the project that fits it runs on one device on a
    TPU: `devices=1`, `devices=[0]`, `devices="1"`, or a name every binding of which that
    reaches the Trainer there is one of these (`if torch.cuda.is_available(): devices =
    [args.gpu] else: devices = 1`, or the same as a conditional expression: a TPU has no
    CUDA; or `devices, strategy = self.pick()` of a project function or method whose
    returns a TPU reaches, after an early `if not torch.cuda.is_available(): return 1,
    "auto"`, give one), with no `strategy=` but a single-device one, no `num_nodes=` but 1 and no
    `**config` spread. With one device Lightning picks `SingleDeviceXLAStrategy`
    (trainer/connectors/accelerator_connector.py:404-408), which is not distributed
    (`is_distributed`, accelerator_connector.py:554-568), and `self.log` passes `sync_dist=
    sync_dist and trainer._accelerator_connector.is_distributed` (core/module.py:543): the
    `_Sync` of the logged value is then a no-op (`_generate_sync_fn`, result.py:90-94; and
    the single-device strategy's `reduce` returns the tensor: strategies/single_device.py:
    51-64). Lightning 2.6.6. `devices="auto"` (or none: every TPU core), more than one, a
    value the user sets (`devices=args.devices`, whatever its default), an XLA strategy
    (`strategy="xla"` is distributed even on one device: its `reduce` is an
    `xm.mesh_reduce`), a LightningCLI, or a module no Trainer of the project fits (a
    library) stay reported.

    ## Why is this bad on TPU?
    With `sync_dist=True` Lightning all-reduces the logged value across all devices when
    it is logged for the step: a collective in every step, which on XLA also cuts the
    graph and reads the value. Lightning's docs warn that `sync_dist` "may lead to a
    significant communication overhead". Epoch-level values are reduced once per epoch.

    ## Example
    ```python
    import lightning as L


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self(batch).mean()
            self.log("train_loss", loss, sync_dist=True)
            return loss
    ```

    ## Use instead
    ```python
    import lightning as L


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self(batch).mean()
            self.log("train_loss", loss, sync_dist=True, on_step=False, on_epoch=True)
            return loss
    ```

    ## Fix safety
    The fix sets `on_step=False, on_epoch=True` and is unsafe: the per-step curve of the
    value disappears from the logger (the epoch mean, synced once, remains), and
    callbacks that monitor the step value (for example `ModelCheckpoint(monitor=...)` on
    a `_step` key) must be changed to the epoch key.

    ## References
    - [Lightning docs: logging, `sync_dist` and the default `on_step`/`on_epoch` per hook](https://lightning.ai/docs/pytorch/stable/extensions/logging.html)
    - [Lightning#15884: per-batch logging reads lazy tensors on TPU](https://github.com/Lightning-AI/pytorch-lightning/issues/15884)
    - [Lightning source: `sync_dist` applies to logged tensors only (`logger_connector/result.py`)](https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/trainer/connectors/logger_connector/result.py)
    """

    code = "TPU106"
    hot_only = True
    name = "per-step-sync-dist"
    summary = "`self.log(..., sync_dist=True)` logged on every training step"
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = "Log once per epoch: `on_step=False, on_epoch=True`"
    _training_shown = False
    requires = ("sync_dist",)
    screen_calls = frozenset({"log", "log_dict"})

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        syntax = view.module.syntax
        return syntax is None or "sync_dist" in syntax.literal_keywords  # `sync_dist=True`

    VALID = (
        # Validation defaults to on_epoch: one sync per epoch.
        Valid(
            _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            '        self.log("val_loss", self(batch).mean(), sync_dist=True)\n'
        ),
        Valid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + '        self.log("loss", loss, on_step=False, on_epoch=True, sync_dist=True)\n'
            "        return loss\n"
        ),
        Valid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + '        self.log("loss", loss, sync_dist=False)\n        return loss\n'
        ),
        Valid(
            _HEAD + "    def on_train_epoch_end(self):\n"
            '        self.log("epoch_acc", self.acc.compute(), sync_dist=True)\n'
        ),
        # Metric objects: Lightning keeps `sync_dist` for tensors only; a Metric (or a
        # MetricCollection) syncs its own state once, in `compute()` at the epoch's end.
        Valid(
            "import lightning as L\nimport torchmetrics\n"
            "from torchmetrics import MetricCollection\n"
            "from torchmetrics.classification import BinaryAUROC\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.train_auroc = BinaryAUROC()\n"
            "        self.train_scores = MetricCollection([torchmetrics.MeanSquaredError()])\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        x, y = batch\n"
            "        p = self(x)\n"
            "        self.train_auroc(p, y)\n"
            "        self.train_scores.update(p, y)\n"
            '        self.log("train_auroc", self.train_auroc, sync_dist=True)\n'
            "        self.log_dict(self.train_scores, sync_dist=True)\n"
            '        self.log_dict({"auroc": self.train_auroc}, sync_dist=True)\n'
            "        return p.sum()\n"
        ),
        # A metric object handed to the constructor, annotated with a project subclass of
        # `Metric`: logged every step, still synced once by its own `compute()`.
        Valid(
            "import lightning as L\nimport torch\nfrom torchmetrics import Metric\n\n\n"
            "class WindowScore(Metric):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            '        self.add_state("total", default=torch.tensor(0.0), dist_reduce_fx="sum")\n\n'
            "    def update(self, x):\n"
            "        self.total += x.sum()\n\n"
            "    def compute(self):\n"
            "        return self.total\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self, score: WindowScore, lr: float = 1e-3):\n"
            "        super().__init__()\n"
            "        self.score = score\n\n"
            "    def validation_step(self, batch, batch_idx):\n"
            "        self.score.update(self(batch))\n"
            '        self.log("val", self.score, on_step=True, on_epoch=True, sync_dist=True)\n'
        ),
        # A local dict of metric objects, filled in before it is logged.
        Valid(
            "import lightning as L\nfrom torchmetrics import MeanMetric\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.train_loss = MeanMetric()\n"
            "        self.train_entropy = MeanMetric()\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        loss, entropy = self(batch)\n"
            "        self.train_loss(loss)\n"
            '        to_log = {"train/loss": self.train_loss}\n'
            "        if self.track_entropy:\n"
            "            self.train_entropy(entropy)\n"
            '            to_log.update({"train/entropy": self.train_entropy})\n'
            "        self.log_dict(to_log, on_step=True, on_epoch=True, sync_dist=True)\n"
            "        return loss\n"
        ),
        # The attribute defaults to False, or the test picks the validation split: not shown
        # to log every training step.
        Valid(
            _HEAD + "    def __init__(self, per_step_logs=False):\n"
            "        super().__init__()\n"
            "        self.per_step_logs = per_step_logs\n"
            "    def _record(self, values, split):\n"
            '        on = self.per_step_logs if split == "train" else False\n'
            "        self.log_dict(values, on_step=on, on_epoch=True, sync_dist=True)\n"
            "    def _record_eval(self, values, split):\n"
            '        on = True if split == "val" else False\n'
            "        self.log_dict(values, on_step=on, on_epoch=True, sync_dist=True)\n"
            "    def _shared(self, batch, split):\n"
            "        loss = self(batch).mean()\n"
            '        self._record({f"{split}/loss": loss}, split)\n'
            '        self._record_eval({f"{split}/loss": loss}, split)\n'
            "        return loss\n"
            "    def training_step(self, batch, batch_idx):\n"
            '        return self._shared(batch, split="train")\n'
        ),
        # The split test names a split the training step does not pass.
        Valid(
            _HEAD + "    def _common(self, batch, phase):\n"
            "        loss = self(batch).mean()\n"
            '        on = phase == "check"\n'
            '        self.log("seen", loss, on_step=on, sync_dist=True)\n'
            '        self.log("also", loss, on_step=(phase != "fit"), sync_dist=True)\n'
            "        return loss\n"
            "    def training_step(self, batch, batch_idx):\n"
            '        return self._common(batch, "fit")\n'
            "    def validation_step(self, batch, batch_idx):\n"
            '        return self._common(batch, "check")\n'
        ),
        # Every Trainer that fits the module runs on one device on a TPU (`torch.cuda.
        # is_available()` is False there): a single-device strategy, which never syncs.
        Valid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + '        self.log("loss", loss, sync_dist=True)\n'
            "        return loss\n\n\n"
            "def main(gpu=0):\n"
            "    if torch.cuda.is_available():\n"
            "        devices = [gpu]\n"
            "    else:\n"
            "        devices = 1\n"
            "    L.Trainer(accelerator='auto', devices=devices).fit(Model())\n\n\n"
            "if __name__ == '__main__':\n"
            "    main()\n"
        ),
        Valid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + '        self.log("loss", loss, sync_dist=True)\n'
            "        return loss\n\n\n"
            "if __name__ == '__main__':\n"
            "    L.Trainer(devices=[0], max_epochs=3).fit(Model())\n"
        ),
    )
    INVALID = (
        # Eight devices, or as many as the command line asks for (one by default).
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + '        self.log("loss", loss, sync_dist=True)\n'
            "        return loss\n\n\n"
            "if __name__ == '__main__':\n"
            "    L.Trainer(accelerator='tpu', devices=8).fit(Model())\n",
            line=8,
        ),
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + '        self.log("loss", loss, sync_dist=True)\n'
            "        return loss\n\n\n"
            "if __name__ == '__main__':\n"
            "    import argparse\n"
            "    parser = argparse.ArgumentParser()\n"
            "    parser.add_argument('--devices', type=int, default=1)\n"
            "    args = parser.parse_args()\n"
            "    L.Trainer(devices=args.devices).fit(Model())\n",
            line=8,
        ),
        # One device, but an XLA strategy: distributed, so Lightning syncs.
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + '        self.log("loss", loss, sync_dist=True)\n'
            "        return loss\n\n\n"
            "if __name__ == '__main__':\n"
            "    L.Trainer(devices=1, strategy='xla').fit(Model())\n",
            line=8,
        ),
        # A local dict of metric objects that also holds the loss tensor.
        Invalid(
            "import lightning as L\nfrom torchmetrics import MeanMetric\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.train_loss = MeanMetric()\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        loss = self(batch).mean()\n"
            "        self.train_loss(loss)\n"
            '        to_log = {"train/loss": self.train_loss}\n'
            '        to_log["train/raw_loss"] = loss\n'
            "        self.log_dict(to_log, on_step=True, sync_dist=True)\n"
            "        return loss\n",
            line=15,
        ),
        # The tensor a metric's forward returns is synced every step.
        Invalid(
            "import lightning as L\n"
            "from torchmetrics.classification import BinaryAUROC\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.train_auroc = BinaryAUROC()\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        x, y = batch\n"
            "        p = self(x)\n"
            '        self.log("auroc_step", self.train_auroc(p, y), sync_dist=True)\n'
            "        return p.sum()\n",
            line=13,
        ),
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + '        self.log("loss", loss, prog_bar=True, sync_dist=True)\n'
            "        return loss\n",
            expected_fix=_HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + '        self.log("loss", loss, prog_bar=True, sync_dist=True, on_step=False, '
            "on_epoch=True)\n        return loss\n",
            line=8,
            message="in training_step",
        ),
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + '        self.log_dict({"a": loss}, on_step=True, on_epoch=True, sync_dist=True)\n'
            "        return loss\n",
            expected_fix=_HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + '        self.log_dict({"a": loss}, on_step=False, on_epoch=True, sync_dist=True)\n'
            "        return loss\n",
        ),
        # Explicit on_step in validation.
        Invalid(
            _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            '        self.log("val_loss", self(batch).mean(), on_step=True, sync_dist=True)\n',
            expected_fix=_HEAD + "    def validation_step(self, batch, batch_idx):\n"
            '        self.log("val_loss", self(batch).mean(), on_step=False, sync_dist=True, '
            "on_epoch=True)\n",
        ),
        # Explicit on_step in a shared step helper both steps call, the split passed in.
        Invalid(
            _HEAD + "    def _shared_step(self, batch, split):\n"
            "        loss = self(batch).mean()\n"
            '        self.log(f"{split}_loss", loss, on_step=True, sync_dist=True)\n'
            "        return loss\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            '        return self._shared_step(batch, "train")\n\n'
            "    def validation_step(self, batch, batch_idx):\n"
            '        return self._shared_step(batch, "val")\n',
            line=8,
        ),
        # `on_step` given by the helper's flag, which the training step passes as True.
        Invalid(
            _HEAD + "    def _step(self, batch, train):\n"
            "        loss = self(batch).mean()\n"
            '        self.log("loss", loss, on_step=train, on_epoch=True, sync_dist=True)\n'
            "        return loss\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        return self._step(batch, True)\n\n"
            "    def validation_step(self, batch, batch_idx):\n"
            "        return self._step(batch, False)\n",
            line=8,
        ),
        # `on_step` from an attribute that defaults to True, chosen for the training split in
        # a logging helper that the steps reach through a shared step passing the split.
        Invalid(
            _HEAD + "    def __init__(self, per_step_logs=True):\n"
            "        super().__init__()\n"
            "        self.per_step_logs = per_step_logs\n"
            "    def _record(self, values, split):\n"
            '        on = self.per_step_logs if split == "train" else False\n'
            "        self.log_dict(values, on_step=on, on_epoch=True, sync_dist=True)\n"
            "    def _shared(self, batch, split):\n"
            "        loss = self(batch).mean()\n"
            '        self._record({f"{split}/loss": loss}, split)\n'
            "        return loss\n"
            "    def training_step(self, batch, batch_idx):\n"
            '        return self._shared(batch, split="train")\n'
            "    def validation_step(self, batch, batch_idx):\n"
            '        return self._shared(batch, split="val")\n',
            line=11,
        ),
        # `on_step` given by the split test itself, directly or through a local: True when
        # the training step passes the split down (positionally, through a shared step).
        Invalid(
            _HEAD + "    def _report(self, values, phase, size):\n"
            '        training = phase == "fit"\n'
            "        self.log_dict(values, on_step=training, on_epoch=True, sync_dist=True)\n"
            "    def _common(self, batch, phase):\n"
            "        loss = self(batch).mean()\n"
            '        self.log("seen", loss, on_step=(phase == "fit"), sync_dist=True)\n'
            "        self._report({phase: loss}, phase, 8)\n"
            "        return loss\n"
            "    def training_step(self, batch, batch_idx):\n"
            '        return self._common(batch, "fit")\n'
            "    def validation_step(self, batch, batch_idx):\n"
            '        return self._common(batch, "check")\n',
            count=2,
            line=8,
        ),
        Invalid(
            _HEAD + "    def _common(self, batch, phase):\n"
            "        loss = self(batch).mean()\n"
            '        self.log("seen", loss, on_step=(phase == "fit"), sync_dist=True)\n'
            "        return loss\n"
            "    def training_step(self, batch, batch_idx):\n"
            '        return self._common(batch, "fit")\n',
            line=8,
        ),
        # A callback's training batch hook.
        Invalid(
            "import lightning as L\n\n\nclass Log(L.Callback):\n"
            "    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):\n"
            '        pl_module.log("loss", outputs["loss"], sync_dist=True)\n',
        ),
    )

    def _logs_metric_objects(self, node: cst.Call) -> bool:
        """`self.log(name, self.acc)` or `self.log_dict(self.metrics)` (or a dict literal of
        them): the value is a metric object (a torchmetrics `Metric` or `MetricCollection`,
        a module to the value inference; a module that is no metric cannot be logged)."""
        kind = is_log_call(node)
        position, keyword = (1, "value") if kind == "log" else (0, "dictionary")
        value = next((a.value for a in node.args if a.keyword and a.keyword.value == keyword), None)
        if value is None:
            bare = [a for a in node.args if a.keyword is None and not a.star]
            if len(bare) <= position:
                return False
            value = bare[position].value
        if kind == "log_dict" and isinstance(value, cst.Dict):
            values = [e.value for e in value.elements if isinstance(e, cst.DictElement)]
            if not values or len(values) != len(value.elements):
                return False
        elif kind == "log_dict" and self.ctx.value_kind(value) is not MODULE:
            # A local dict of them, built or filled in before the call.
            kinds = self.ctx.dict_value_kinds(value)
            return kinds is not None and all(k is MODULE for k in kinds)
        else:
            values = [value]
        return all(self.ctx.value_kind(v) is MODULE or self._metric_attribute(v) for v in values)

    def _one_device(self) -> bool:
        """Whether every Trainer of the project that fits the logging class runs on one
        device (ProjectScope.trained_on_one_device)."""
        ctx = self.ctx
        view, klass = ctx.analysis.view, ctx.klass
        if view is None or klass is None:
            return False
        gkey = view.class_gkey(klass.local_qualname)
        return view.model.scope.trained_on_one_device(gkey, fitting=True)

    def _metric_attribute(self, value: cst.BaseExpression) -> bool:
        """`self.auroc` that the class sets only to metric objects, a constructor parameter
        annotated with a metric class among them (`self.auroc = auroc`, `auroc:
        WindowAUROC`)."""
        ctx = self.ctx
        view = ctx.analysis.view
        if not (
            isinstance(value, cst.Attribute)
            and isinstance(value.value, cst.Name)
            and value.value.value == "self"
            and view is not None
        ):
            return False
        return view.attribute_is_metric(ctx.owner, value.attr.value)

    def _passed_true_by_training_step(self, value: cst.BaseExpression) -> bool | None:
        """`on_step=train` with `train` a parameter of a helper that a training batch hook
        calls with `True` (`self._shared(batch, True)` in `training_step`): True there."""
        ctx = self.ctx
        view, function = ctx.analysis.view, ctx.function
        if not isinstance(value, cst.Name) or view is None or function is None:
            return None
        passed = view.literal_arguments(function.key, value.value)
        if any(name in _TRAIN_BATCH_HOOKS and literal is True for name, literal in passed):
            return True
        return None

    def _true_on_training_path(self, value: cst.BaseExpression, depth: int = 0) -> bool:
        """Whether `on_step=<value>` is True when a training batch hook reaches this helper,
        as the code shows it by default: a local set once (`on = self.log_on_step if split
        == "train" else False`), the split the training hook passes down (`split ==
        "train"`), and an attribute every assignment of which defaults to True (a constructor
        parameter `log_on_step=True`, `cfg.get("log_on_step", True)`)."""
        ctx = self.ctx
        function = ctx.function
        if depth > 4 or function is None:
            return False
        literal = _literal_bool(value)
        if literal is not None:
            return literal
        if isinstance(value, cst.Name):
            if self._passed_true_by_training_step(value):
                return True
            assigned = _assignments(function.node, value.value)
            return len(assigned) == 1 and self._true_on_training_path(assigned[0], depth + 1)
        if isinstance(value, cst.IfExp):
            return self._test_holds_in_training(value.test) and self._true_on_training_path(
                value.body, depth + 1
            )
        if isinstance(value, cst.Comparison):
            # `on_step=(split == "train")`, `is_train = phase == "train"`: True exactly when
            # a training batch hook passes that split down
            return self._test_holds_in_training(value)
        if (
            isinstance(value, cst.Attribute)
            and isinstance(value.value, cst.Name)
            and value.value.value == "self"
            and ctx.klass is not None
        ):
            return _attribute_defaults_true(ctx.klass, value.attr.value)
        return False

    def _test_holds_in_training(self, test: cst.BaseExpression) -> bool:
        """`split == "train"` with `split` a parameter of the helper that a training batch
        hook passes as that string, directly or forwarded through helpers between them."""
        ctx = self.ctx
        view, function = ctx.analysis.view, ctx.function
        if (
            view is None
            or function is None
            or not isinstance(test, cst.Comparison)
            or len(test.comparisons) != 1
            or not isinstance(test.comparisons[0].operator, cst.Equal)
            or not isinstance(test.left, cst.Name)
            or not isinstance(test.comparisons[0].comparator, cst.SimpleString)
        ):
            return False
        wanted = test.comparisons[0].comparator.evaluated_value
        fn = view._functions.get(function.key)
        if fn is None:
            return False
        if _string_from_training(view.model, fn.gkey, test.left.value, wanted, set()):
            self._training_shown = True
            return True
        return False

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if is_log_call(node) is None or not ctx.in_hot_code:
            return
        sync = keyword_arg(node, "sync_dist")
        if sync is None or _literal_bool(sync.value) is not True:
            return
        if self._logs_metric_objects(node):
            return  # Lightning never applies `sync_dist` to a Metric: it syncs in `compute`
        hook = ctx.function.root_hook if ctx.function is not None else None
        on_step_arg = keyword_arg(node, "on_step")
        if on_step_arg is not None:
            on_step = _literal_bool(on_step_arg.value)
            if on_step is None:
                on_step = self._passed_true_by_training_step(on_step_arg.value)
            if on_step is None:
                # True by default where a training batch hook reaches the helper: the hook
                # is this chain's root, or the value's own test names the training split
                self._training_shown = hook in _TRAIN_BATCH_HOOKS
                if self._true_on_training_path(on_step_arg.value) and self._training_shown:
                    on_step = True
            if on_step is None:
                return  # computed: unknown
        elif hook in _TRAIN_BATCH_HOOKS:
            on_step = True
        else:
            return
        if not on_step:
            return
        if on_step_arg is None and hook not in _TRAIN_BATCH_HOOKS:
            return
        # An explicit `on_step=True` logs every step wherever the step reaches it: a helper
        # the step calls, a `shared_step` that is its own entry point, a sub-module's forward.
        if "rare" in ctx.guards(node):
            return
        if self._one_device():
            return  # a single-device strategy: Lightning drops `sync_dist` (no collective)
        fixed = node
        missing: list[tuple[str, str]] = []
        if on_step_arg is not None:
            fixed = replace_arg(
                fixed, on_step_arg, [on_step_arg.with_changes(value=cst.Name("False"))]
            )
        else:
            missing.append(("on_step", "False"))
        on_epoch_arg = keyword_arg(fixed, "on_epoch")
        if on_epoch_arg is None:
            missing.append(("on_epoch", "True"))
        elif _literal_bool(on_epoch_arg.value) is not True:
            fixed = replace_arg(
                fixed, on_epoch_arg, [on_epoch_arg.with_changes(value=cst.Name("True"))]
            )
        if missing:
            fixed = add_keywords(fixed, missing)
        self.report(
            sync,
            f"`sync_dist=True` on a value logged every step in {ctx.hot_reason} all-reduces it "
            "across the TPU devices in every step; log it per epoch "
            "(`on_step=False, on_epoch=True`) or drop `sync_dist`",
            replacement=fixed,
            replaces=node,
        )


def _assignments(function: cst.FunctionDef, name: str) -> list[cst.BaseExpression]:
    """The values a function's own body assigns to the local `name` (nested functions
    aside); a tuple target or an augmented assignment counts as an unknown value."""
    found: list[cst.BaseExpression] = []

    class _Visitor(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is function

        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                if isinstance(target.target, cst.Name) and target.target.value == name:
                    found.append(node.value)
                elif name in {n.value for n in _names(target.target)}:
                    found.extend([cst.Name("None"), cst.Name("None")])

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            if isinstance(node.target, cst.Name) and node.target.value == name:
                found.extend([cst.Name("None"), cst.Name("None")])

        def visit_For(self, node: cst.For) -> None:
            if name in {n.value for n in _names(node.target)}:
                found.extend([cst.Name("None"), cst.Name("None")])

    function.visit(_Visitor())
    return found


def _names(node: cst.CSTNode) -> list[cst.Name]:
    if isinstance(node, cst.Name):
        return [node]
    if isinstance(node, (cst.Tuple, cst.List)):
        return [n for e in node.elements for n in _names(e.value)]
    if isinstance(node, cst.StarredElement):
        return _names(node.value)
    return []


def _attribute_defaults_true(klass: object, attr: str) -> bool:
    """Whether every assignment of `self.<attr>` in the class (and its bases in this file)
    is True by default: the literal True, a parameter of the method that defaults to True,
    or `<mapping>.get("...", True)`. At least one assignment."""
    seen = 0
    classes = [klass]
    while classes:
        info = classes.pop()
        classes.extend(getattr(info, "local_bases", []))
        for method in getattr(info, "methods", {}).values():
            defaults = {
                p.name.value: p.default
                for p in (*method.params.params, *method.params.kwonly_params)
                if p.default is not None
            }
            for assign in _self_assignments(method, attr):
                seen += 1
                if _literal_bool(assign) is True:
                    continue
                if (
                    isinstance(assign, cst.Name)
                    and assign.value in defaults
                    and _literal_bool(defaults[assign.value]) is True  # type: ignore[arg-type]
                    and _assignments(method, assign.value) == []
                ):
                    continue
                if (
                    isinstance(assign, cst.Call)
                    and isinstance(assign.func, cst.Attribute)
                    and assign.func.attr.value == "get"
                    and len(assign.args) == 2
                    and isinstance(assign.args[0].value, cst.SimpleString)
                    and _literal_bool(assign.args[1].value) is True
                ):
                    continue
                return False
    return seen > 0


def _self_assignments(method: cst.FunctionDef, attr: str) -> list[cst.BaseExpression]:
    found: list[cst.BaseExpression] = []

    class _Visitor(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                for element in _targets(target.target):
                    if (
                        isinstance(element, cst.Attribute)
                        and isinstance(element.value, cst.Name)
                        and element.value.value == "self"
                        and element.attr.value == attr
                    ):
                        single = isinstance(target.target, cst.Attribute)
                        found.append(node.value if single else cst.Name("None"))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            target = node.target
            if (
                isinstance(target, cst.Attribute)
                and isinstance(target.value, cst.Name)
                and target.value.value == "self"
                and target.attr.value == attr
            ):
                found.append(cst.Name("None"))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            target = node.target
            if (
                node.value is not None
                and isinstance(target, cst.Attribute)
                and isinstance(target.value, cst.Name)
                and target.value.value == "self"
                and target.attr.value == attr
            ):
                found.append(node.value)

    method.visit(_Visitor())
    return found


def _targets(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(node, (cst.Tuple, cst.List)):
        return [t for e in node.elements for t in _targets(e.value)]
    return [node]


def _string_from_training(model: object, gkey: str, param: str, wanted: object, seen: set) -> bool:
    """Whether a training batch hook calls function `gkey` with `param` set to the string
    `wanted`, itself or through helpers that forward their own parameter of that name."""
    if (gkey, param) in seen or len(seen) > 16:
        return False
    seen.add((gkey, param))
    fn = model.functions.get(gkey)  # type: ignore[attr-defined]
    if fn is None or param not in fn.summary.params:
        return False
    index = fn.summary.params.index(param)
    callers = list(model._callers().get(gkey, []))  # type: ignore[attr-defined]
    if fn.owner is not None:
        # `self.shared_step(batch, split="train")` in a base class runs a subclass's override
        for base in model.mro(fn.owner)[1:]:  # type: ignore[attr-defined]
            overridden = model.find_method(base, fn.summary.name)  # type: ignore[attr-defined]
            params = overridden.summary.params if overridden is not None else []
            if overridden is not None and params[: index + 1] == fn.summary.params[: index + 1]:
                callers += [
                    c
                    for c in model._callers().get(overridden.gkey, [])  # type: ignore[attr-defined]
                    if c[1].form == "self"
                ]
                break
    for caller, call, offset in callers:
        position = str(index - offset)
        if param in call.keywords:
            literal = call.literals.get(param)
            texts = call.keyword_texts.get(param, [])
        elif 0 <= index - offset < len(call.args):
            literal = call.literals.get(position)
            texts = call.arg_texts[index - offset] if index - offset < len(call.arg_texts) else []
        else:
            continue
        if literal == wanted and caller.summary.name in _TRAIN_BATCH_HOOKS:
            return True
        if (
            literal is None
            and len(texts) == 1
            and texts[0] in caller.summary.params
            and _string_from_training(model, caller.gkey, texts[0], wanted, seen)
        ):
            return True
    return False

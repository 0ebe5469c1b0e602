"""TPU106 per-step-sync-dist."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.project import FileView
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
    `on_step=True` (a step, a shared step helper both steps call, a sub-module's forward).

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
    """

    code = "TPU106"
    hot_only = True
    name = "per-step-sync-dist"
    summary = "`self.log(..., sync_dist=True)` logged on every training step"
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = "Log once per epoch: `on_step=False, on_epoch=True`"
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
    )
    INVALID = (
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
        # A callback's training batch hook.
        Invalid(
            "import lightning as L\n\n\nclass Log(L.Callback):\n"
            "    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):\n"
            '        pl_module.log("loss", outputs["loss"], sync_dist=True)\n',
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if is_log_call(node) is None or not ctx.in_hot_code:
            return
        sync = keyword_arg(node, "sync_dist")
        if sync is None or _literal_bool(sync.value) is not True:
            return
        hook = ctx.function.root_hook if ctx.function is not None else None
        on_step_arg = keyword_arg(node, "on_step")
        if on_step_arg is not None:
            on_step = _literal_bool(on_step_arg.value)
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

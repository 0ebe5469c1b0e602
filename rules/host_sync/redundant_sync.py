"""TPU105 redundant-sync."""

from __future__ import annotations

import re

import libcst as cst

from tpulint.analysis.context import FileContext, get_arg
from tpulint.datatypes.diagnostics import Applicability
from tpulint.rule_api.cst_helpers import make_arg
from tpulint.rule_api.rule import Invalid, Rule, Valid, last_names

from ..shared.matchers import source_of
from .helpers import _HEAD, _statement_of_call

_MARK_STEP = "torch_xla.core.xla_model.mark_step"
_SYNC_CALLS = {
    _MARK_STEP: "xm.mark_step()",
    "torch_xla.sync": "torch_xla.sync()",
    "torch_xla.torch_xla.sync": "torch_xla.sync()",
}
_OPTIMIZER_STEP = "torch_xla.core.xla_model.optimizer_step"


def in_lightning_code(ctx: FileContext) -> bool:
    """In a method of a Lightning class (module, data module, callback), a hot helper of a
    file that defines one, or hot code (a sub-module's `forward`, an optimizer's `step`) of
    a module that Lightning code imports: Lightning drives its step."""
    if ctx.lightning_class is not None:
        return True
    info = ctx.function
    if info is None or not info.hot:
        return False
    if info.cls is None and ctx.analysis.has_lightning:
        return True
    view = ctx.analysis.view
    return view is not None and view.imported_by_lightning_code


_MANUAL_OPTIMIZATION = re.compile(
    r"automatic_optimization\s*=\s*False|manual_backward\(|self\.optimizers\("
)


def manual_optimization(ctx: FileContext) -> bool:
    klass = ctx.lightning_class
    if klass is None:
        return False
    code = ctx.module.code_for_node(klass.node)
    return bool(_MANUAL_OPTIMIZATION.search(code))


class RedundantSync(Rule):
    """
    ## What it does
    Finds explicit XLA step boundaries in Lightning code: `xm.mark_step()`,
    `torch_xla.sync()` and `xm.optimizer_step(...)` in the methods of LightningModules,
    DataModules and Callbacks (and the helpers their hot hooks call), and in the code that
    runs every step of the modules a Lightning module imports (a layer's `forward`, a
    custom optimizer's `step`).

    ## Why is this bad on TPU?
    Lightning already cuts the graph once per step: its XLA precision plugin runs the
    optimizer through `xm.optimizer_step(optimizer, barrier=True)` (reduce the gradients,
    step, `mark_step`) and the XLA strategy wraps every loader in `MpDeviceLoader`, which
    syncs per batch. An extra `mark_step` in a hook splits the step into more, smaller
    graphs (more compilation, less fusion, an extra execution every step); an extra
    `xm.optimizer_step` in manual optimization reduces the gradients a second time.

    ## Example
    ```python
    import lightning as L
    import torch_xla.core.xla_model as xm


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self(batch).sum()
            xm.mark_step()
            return loss
    ```

    ## Use instead
    ```python
    import lightning as L


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self(batch).sum()
            return loss
    ```

    ## Fix safety
    Removing `xm.mark_step()` / `torch_xla.sync()` is unsafe: the graph boundaries move,
    which changes what is compiled and when the values are materialised (results are the
    same, but code that relied on the sync to bound memory or to time steps behaves
    differently). For `xm.optimizer_step(opt, ...)` the suggestion `opt.step(...)` is
    display-only: it is right under manual optimization with Lightning's XLA strategy,
    which reduces gradients itself.

    ## References
    - [Lightning `XLAPrecision.optimizer_step` calls `xm.optimizer_step(..., barrier=True)`](https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/fabric/plugins/precision/xla.py)
    - [Lightning `XLAStrategy` wraps loaders in `MpDeviceLoader`](https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/strategies/xla.py)
    - [torch_xla: PJRT runtime (`mark_step` and `rendezvous`)](https://github.com/pytorch/xla/blob/master/docs/source/learn/pjrt.md)
    """

    code = "TPU105"
    name = "redundant-sync"
    summary = "`xm.mark_step()`, `torch_xla.sync()`, `xm.optimizer_step()` in Lightning code"
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = "Remove the call: Lightning syncs once per step"
    requires = ("mark_step", "sync(", "optimizer_step(")
    screen_calls = last_names(_SYNC_CALLS, (_OPTIMIZER_STEP,))

    VALID = (
        # A raw torch_xla loop outside Lightning is the user's own step boundary.
        Valid(
            "import torch_xla.core.xla_model as xm\n\n\ndef train(model, loader, opt):\n"
            "    for batch in loader:\n        opt.zero_grad()\n"
            "        model(batch).sum().backward()\n        xm.optimizer_step(opt)\n"
            "        xm.mark_step()\n"
        ),
        # Lightning's own optimizer_step hook override without torch_xla.
        Valid(
            _HEAD + "    def optimizer_step(self, epoch, batch_idx, optimizer, closure):\n"
            "        optimizer.step(closure=closure)\n"
        ),
        # Some other object's sync method.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        self.ema.sync()\n        return self(batch)\n"
        ),
    )
    INVALID = (
        Invalid(
            "import lightning as L\nimport torch_xla.core.xla_model as xm\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        loss = self(batch).sum()\n        xm.mark_step()\n        return loss\n",
            expected_fix="import lightning as L\nimport torch_xla.core.xla_model as xm\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        loss = self(batch).sum()\n        return loss\n",
            line=8,
            message="in training_step",
        ),
        Invalid(
            "import lightning as L\nimport torch_xla\n\n\n"
            "class Sync(L.Callback):\n"
            "    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):\n"
            "        if batch_idx % 10 == 0:\n            torch_xla.sync()\n",
            expected_fix="import lightning as L\nimport torch_xla\n\n\n"
            "class Sync(L.Callback):\n"
            "    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):\n"
            "        if batch_idx % 10 == 0:\n            pass\n",
        ),
        Invalid(
            "import lightning as L\nimport torch_xla.core.xla_model as xm\n\n\n"
            "class GAN(L.LightningModule):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.automatic_optimization = False\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        opt = self.optimizers()\n        self.manual_backward(self(batch).sum())\n"
            "        xm.optimizer_step(opt)\n        opt.zero_grad()\n",
            applicability=Applicability.DISPLAY_ONLY,
            expected_suggestion="import lightning as L\nimport torch_xla.core.xla_model as xm\n\n\n"
            "class GAN(L.LightningModule):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.automatic_optimization = False\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        opt = self.optimizers()\n        self.manual_backward(self(batch).sum())\n"
            "        opt.step()\n        opt.zero_grad()\n",
        ),
        # `xm` bound by the function that sets up the TPU run (`global xm` before its
        # import): the hook override calls torch_xla's step once that function ran.
        Invalid(
            "import pytorch_lightning as pl\n\n\n"
            "class Tuner(pl.LightningModule):\n"
            "    def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_idx, closure):\n"
            "        if self.trainer.use_tpu:\n"
            "            xm.optimizer_step(optimizer)\n"
            "        else:\n"
            "            optimizer.step()\n"
            "        optimizer.zero_grad()\n\n\n"
            "def run(model, args):\n"
            "    if args.tpu_cores:\n"
            "        global xm\n"
            "        import torch_xla.core.xla_model as xm\n"
            "    pl.Trainer(max_epochs=1).fit(model)\n",
            line=7,
            applicability=Applicability.DISPLAY_ONLY,
            message="in optimizer_step reduces gradients and syncs a second time",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        qualified = ctx.qualify(node.func)
        if qualified not in _SYNC_CALLS and qualified != _OPTIMIZER_STEP:
            return
        if ctx.function is None or not in_lightning_code(ctx):
            return
        where = ctx.hot_reason or f"`{ctx.function.name}`"
        if qualified == _OPTIMIZER_STEP:
            self._optimizer_step(node, where)
            return
        statement = _statement_of_call(ctx, node)
        self.report(
            node,
            f"`{source_of(ctx, node)}` in {where} cuts the XLA graph a second time: Lightning "
            "already syncs once per step (optimizer step and `MpDeviceLoader`); remove it",
            replacement=cst.RemovalSentinel.REMOVE if statement is not None else None,
            replaces=statement,
        )

    def _optimizer_step(self, node: cst.Call, where: str) -> None:
        ctx = self.ctx
        optimizer = get_arg(node, "optimizer", 0)
        replacement = None
        if optimizer is not None:
            args: list[cst.Arg] = []
            extra = get_arg(node, "optimizer_args", 2)
            if extra is not None:
                if isinstance(extra.value, cst.Dict) and all(
                    isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
                    for e in extra.value.elements
                ):
                    for element in extra.value.elements:
                        key = element.key.evaluated_value  # type: ignore[union-attr]
                        args.append(make_arg(str(key), element.value))  # type: ignore[union-attr]
                else:
                    args.append(cst.Arg(extra.value, star="**"))
            args = [
                a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                for a in args[:-1]
            ] + args[-1:]
            replacement = cst.Call(
                func=cst.Attribute(value=optimizer.value, attr=cst.Name("step")), args=args
            )
        manual = manual_optimization(ctx)
        advice = (
            "under manual optimization call `opt.step()`; Lightning's XLA plugin reduces "
            "gradients and marks the step"
            if manual
            else "let Lightning step the optimizer (its XLA plugin calls `xm.optimizer_step`)"
        )
        statement = _statement_of_call(ctx, node)
        self.report(
            node,
            f"`{source_of(ctx, node)}` in {where} reduces gradients and syncs a second "
            f"time; {advice}",
            replacement=replacement,
            applicability=Applicability.DISPLAY_ONLY,
            fix_message="Call `opt.step()` instead",
            replaces=node if statement is not None or replacement is not None else None,
        )

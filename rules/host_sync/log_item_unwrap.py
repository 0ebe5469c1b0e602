"""TPU102 log-item-unwrap."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.context import get_arg
from tpulint.analysis.values import ValueKind
from tpulint.datatypes.diagnostics import Applicability
from tpulint.rule_api.cst_helpers import strip_call_suffix
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.matchers import is_log_call, is_method_call, source_of
from .helpers import _HEAD, _LOSS, _conversion_arg


class LogItemUnwrap(Rule):
    """
    ## What it does
    Finds `.item()`, `float(...)` and `int(...)` conversions of tensors passed to
    `self.log(name, value)` or as values of the dictionary passed to `self.log_dict(...)`,
    in code that runs every step.

    ## Why is this bad on TPU?
    `self.log` accepts tensors and keeps them on the device until Lightning reduces them.
    Converting to a Python number first forces a device-to-host sync in every step: the
    XLA graph is cut and executed early, and the host waits for the TPU.

    ## Example
    ```python
    import lightning as L


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self.loss_fn(self(batch))
            self.log("train_loss", loss.item(), prog_bar=True)
            return loss
    ```

    ## Use instead
    ```python
    import lightning as L


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self.loss_fn(self(batch))
            self.log("train_loss", loss, prog_bar=True)
            return loss
    ```

    ## Fix safety
    The fix drops the conversion and is safe: Lightning turns numbers into tensors and
    detaches tensors before logging, so the logged values are the same. (An integer tensor is
    converted to float by Lightning with a one-time warning, where the number was converted
    silently.)

    ## References
    - [Lightning: `LightningModule.log` accepts tensors](https://lightning.ai/docs/pytorch/stable/extensions/logging.html)
    - [torch_xla troubleshooting: known performance caveats](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    - [Lightning docs: TPU basics, "tensor evaluation"](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_basic.html)
    """

    code = "TPU102"
    hot_only = True
    name = "log-item-unwrap"
    summary = "`.item()` / `float()` on a tensor passed to `self.log` in hot code"
    fix_applicability = Applicability.SAFE
    fix_message = "Log the tensor: drop the conversion"
    requires = (".log(", ".log_dict(")
    screen_calls = frozenset({"log", "log_dict"})

    VALID = (
        Valid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + '        self.log("loss", loss)\n        return loss\n'
        ),
        # Epoch-level hooks run once per epoch.
        Valid(
            _HEAD + "    def on_validation_epoch_end(self):\n"
            '        self.log("acc", self.acc.compute().item())\n'
        ),
        # A field of the record a sub-module returns that holds a Python count.
        Valid(
            "import lightning as L\nimport torch\nfrom torch import nn\n\n"
            "from outlib import HeadOutput\n\n\n"
            "class Head(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.proj = nn.Linear(8, 2)\n\n"
            "    def forward(self, x):\n"
            "        logits = self.proj(x)\n"
            "        return HeadOutput(loss=logits.pow(2).mean(), count=len(x))\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.head = Head()\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        out = self.head(batch)\n"
            '        self.log("count", float(out.count))\n'
            "        return out.loss\n"
        ),
        # float() of a Python number is not a sync.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            '        self.log("lr", float(self.hparams.lr))\n        return self(batch)\n'
        ),
    )
    INVALID = (
        # A field of the record a sub-module's forward returns (`HeadOutput(loss=...)`):
        # the loss tensor it was built with, on the device.
        Invalid(
            "import lightning as L\nimport torch\nfrom torch import nn\n\n"
            "from outlib import HeadOutput\n\n\n"
            "class Head(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.proj = nn.Linear(8, 2)\n\n"
            "    def forward(self, x):\n"
            "        logits = self.proj(x)\n"
            "        return HeadOutput(loss=logits.pow(2).mean(), count=len(x))\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.head = Head()\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        out = self.head(batch)\n"
            '        self.log("loss", float(out.loss))\n'
            "        return out.loss\n",
            line=25,
        ),
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + '        self.log("train_loss", loss.item(), on_epoch=True)\n        return loss\n',
            expected_fix=_HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + '        self.log("train_loss", loss, on_epoch=True)\n        return loss\n',
            line=8,
        ),
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        g, d = self(batch)\n"
            '        self.log_dict({"g": g.item(), "d": float(d)}, prog_bar=True)\n'
            "        return g + d\n",
            expected_fix=_HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        g, d = self(batch)\n"
            '        self.log_dict({"g": g, "d": d}, prog_bar=True)\n'
            "        return g + d\n",
            message="and in the same statement: `float(d)`",  # one call, one finding
        ),
        Invalid(
            _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        acc = (self(batch).argmax(1) == batch.y).float().mean()\n"
            '        self.log(name="val_acc", value=float(acc.item()))\n',
            expected_fix=_HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        acc = (self(batch).argmax(1) == batch.y).float().mean()\n"
            '        self.log(name="val_acc", value=acc)\n',
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        kind = is_log_call(node)
        if kind is None or not self.ctx.in_hot_code:
            return
        if kind == "log":
            arg = get_arg(node, "value", 1)
            if arg is not None:
                self._check_value(arg.value)
        else:
            arg = get_arg(node, "dictionary", 0)
            if arg is not None and isinstance(arg.value, cst.Dict):
                for element in arg.value.elements:
                    if isinstance(element, cst.DictElement):
                        self._check_value(element.value)

    def _check_value(self, value: cst.BaseExpression) -> None:
        ctx = self.ctx
        tensor = self._unwrap(value)
        if tensor is None:
            return
        kind = ctx.value_kind(tensor)
        # `x.item()` says x is a tensor; `float(x)` alone needs x to be known as one.
        converted_only = _conversion_arg(value) is not None and not is_method_call(
            _conversion_arg(value), "item"
        )
        if not (kind is ValueKind.DEVICE or (kind.may_be_device and not converted_only)):
            return
        if "rare" in ctx.guards(value):
            return
        tensor_code = source_of(ctx, tensor)
        self.report(
            value,
            f"`self.log` accepts tensors: `{source_of(ctx, value)}` forces a device-to-host "
            f"sync in {ctx.hot_reason} every step; log `{tensor_code}` directly",
            replacement=tensor.with_changes(lpar=value.lpar, rpar=value.rpar)
            if value.lpar
            else tensor,
        )

    @staticmethod
    def _unwrap(value: cst.BaseExpression) -> cst.BaseExpression | None:
        """The tensor inside `x.item()`, `float(x)`, `float(x.item())`; None otherwise."""
        inner = _conversion_arg(value)
        if inner is not None:
            value = inner
            if is_method_call(value, "item"):
                return strip_call_suffix(value)  # type: ignore[arg-type]
            return value
        if is_method_call(value, "item"):
            return strip_call_suffix(value)  # type: ignore[arg-type]
        return None

"""TPU1xx: host-device synchronisation in hot code (every step)."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.context import FileContext, get_arg
from tpulint.analysis.values import ValueKind
from tpulint.cst_helpers import strip_call_suffix
from tpulint.diagnostics import Applicability
from tpulint.rule import Invalid, Rule, Valid

from ._common import is_log_call, is_method_call, source_of

_HEAD = "import lightning as L\nimport torch\n\n\nclass Model(L.LightningModule):\n"
_LOSS = "        loss = self.loss_fn(self(batch))\n"



def _conversion_arg(node: cst.CSTNode) -> cst.BaseExpression | None:
    """For `float(x)` / `int(x)`: `x`; else None."""
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value in ("float", "int")
        and len(node.args) == 1
        and node.args[0].keyword is None
        and not node.args[0].star
    ):
        return node.args[0].value
    return None


def logged_value(ctx: FileContext, node: cst.CSTNode) -> bool:
    """Whether `node` (an `.item()` call or a conversion) is the value passed to
    `self.log(name, value)` or a value of the dict literal passed to `self.log_dict(...)`,
    possibly wrapped in `float(...)`/`int(...)`."""
    current = node
    parent = ctx.parent(current)
    # float(x.item()) -> climb to the float() call
    if isinstance(parent, cst.Arg):
        grand = ctx.parent(parent)
        if grand is not None and _conversion_arg(grand) is current:
            current = grand
            parent = ctx.parent(current)
    if isinstance(parent, cst.Arg):
        call = ctx.parent(parent)
        if isinstance(call, cst.Call) and is_log_call(call) == "log":
            return get_arg(call, "value", 1) is parent
        return False
    if isinstance(parent, cst.DictElement) and parent.value is current:
        dict_node = ctx.parent(parent)
        arg = ctx.parent(dict_node) if dict_node is not None else None
        call = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
        if isinstance(call, cst.Call) and is_log_call(call) == "log_dict":
            return get_arg(call, "dictionary", 0) is arg
    return False


class ItemInHotPath(Rule):
    """
    ## What it does
    Finds `.item()` on tensors in code that runs for every batch: `training_step`,
    `validation_step`, `test_step`, `predict_step`, `forward`, batch-level hooks, and the
    helpers they call through `self.` or module-level functions. Values that are not device
    tensors (Python numbers, numpy and MLX arrays, CPU tensors such as `torch.rand(1)`) and
    code that only runs for some batches (`if batch_idx == 0:`) are not reported.

    ## Why is this bad on TPU?
    XLA builds a graph of the step lazily and runs it once per step. `.item()` needs the
    value now: it cuts the graph, runs the part computed so far, waits for the TPU and copies
    the result to the host, every step. torch_xla lists "accessing tensor values" as the main
    unexpected cause of compilations and executions, and the host waits for the device
    instead of queueing the next step.

    ## Example
    ```python
    import lightning as L


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self.loss_fn(self(batch))
            self.running_loss = 0.9 * self.running_loss + 0.1 * loss.item()
            return loss
    ```

    ## Use instead
    ```python
    import lightning as L


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self.loss_fn(self(batch))
            self.running_loss = 0.9 * self.running_loss + 0.1 * loss.detach()
            return loss
    ```

    Keep values as tensors (`self.log` accepts tensors, see TPU102), or read them in an
    epoch-level hook such as `on_train_epoch_end`, where one sync per epoch is harmless.

    ## Fix safety
    The suggested fix (drop `.item()`) is display-only: whether the surrounding code works
    with a tensor instead of a Python number depends on how the value is used.

    ## References
    - [torch_xla troubleshooting: known performance caveats](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    - [Lightning docs: TPU basics, "tensor evaluation"](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_basic.html)
    """

    code = "TPU101"
    name = "item-in-hot-path"
    summary = "`.item()` on a device tensor in code that runs every step"
    fix_applicability = Applicability.DISPLAY_ONLY
    fix_message = "Keep the value as a tensor: drop `.item()`"
    requires = (".item()",)

    VALID = (
        # Once per epoch is fine.
        Valid(_HEAD + "    def on_train_epoch_end(self):\n        print(self.total.item())\n"),
        # CPU tensors, numpy values and MLX arrays are not device syncs.
        Valid(_HEAD + "    def training_step(self, batch, batch_idx):\n"
              "        if torch.rand(1).item() < self.p:\n            batch = batch.flip(0)\n"
              "        return self.loss_fn(self(batch))\n"),
        Valid("import numpy as np\nimport lightning as L\n\n\nclass Attn(L.LightningModule):\n"
              "    def forward(self, x):\n"
              '        u = np.ceil(np.log(x.shape[1])).astype("int").item()\n'
              "        return x[:, :u]\n"),
        Valid("import lightning as L\nimport mlx.core as mx\n\n\nclass Plan(L.LightningModule):\n"
              "    def train_step(self, batch):\n        loss = mx.mean(mx.array(batch))\n"
              "        mx.eval(loss)\n        return {'loss': loss.item()}\n"),
        # dict.items() is not Tensor.item().
        Valid(_HEAD + "    def training_step(self, batch, batch_idx):\n"
              "        logs = {'a': 1}\n        for k, v in logs.items():\n            pass\n"
              "        return self(batch)\n"),
        # Only for the first batch: a sync per epoch, not per step.
        Valid(_HEAD + "    def validation_step(self, batch, batch_idx):\n"
              "        if batch_idx > 0:\n            return\n"
              "        self.first = self(batch).sum().item()\n"),
        # Logged values are TPU102's business.
        Valid(_HEAD + "    def training_step(self, batch, batch_idx):\n" + _LOSS
              + '        self.log("loss", loss.item())\n        return loss\n'),
        # Not a Lightning class and not forward/step: not hot.
        Valid("import torch\n\ndef report(t):\n    return t.item()\n"),
    )
    INVALID = (
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n" + _LOSS
            + "        self.seen += loss.item()\n        return loss\n",
            line=8,
            message="in training_step",
            expected_suggestion=_HEAD + "    def training_step(self, batch, batch_idx):\n" + _LOSS
            + "        self.seen += loss\n        return loss\n",
        ),
        # A helper called from a step method is hot too.
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        return self.shared(batch)\n\n"
            "    def shared(self, batch):\n"
            "        n = batch.sum().item()\n"
            "        return self(batch) / n\n",
            line=10,
            message="called from training_step",
        ),
        # forward of any nn.Module runs inside the step.
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Head(nn.Module):\n"
            "    def forward(self, x, lengths):\n"
            "        longest = lengths.max().item()\n"
            "        return x[:, :longest]\n",
            line=7,
        ),
        # A tensor created on the device is synced.
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        if torch.rand(1, device=self.device).item() < 0.5:\n"
            "            batch = batch.flip(0)\n"
            "        return self(batch)\n",
        ),
        # Returned metrics dictionaries are synced too.
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n" + _LOSS
            + '        return {"loss": loss, "value": loss.item()}\n',
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not is_method_call(node, "item"):
            return
        ctx = self.ctx
        if not ctx.in_hot_code:
            return
        receiver = node.func.value  # type: ignore[union-attr]
        if not ctx.value_kind(receiver).may_be_device:
            return
        if logged_value(ctx, node) or "rare" in ctx.guards(node):
            return
        where = ctx.hot_reason
        self.report(
            node,
            f"`{source_of(ctx, node)}` in {where} waits for the TPU and copies the value to the "
            "host every step; keep it a tensor or read it in an epoch-end hook",
            replacement=strip_call_suffix(node),
        )


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
    name = "log-item-unwrap"
    summary = "`.item()` / `float()` on a tensor passed to `self.log` in hot code"
    fix_applicability = Applicability.SAFE
    fix_message = "Log the tensor: drop the conversion"
    requires = (".log(", ".log_dict(")

    VALID = (
        Valid(_HEAD + "    def training_step(self, batch, batch_idx):\n" + _LOSS
              + '        self.log("loss", loss)\n        return loss\n'),
        # Epoch-level hooks run once per epoch.
        Valid(_HEAD + "    def on_validation_epoch_end(self):\n"
              '        self.log("acc", self.acc.compute().item())\n'),
        # float() of a Python number is not a sync.
        Valid(_HEAD + "    def training_step(self, batch, batch_idx):\n"
              '        self.log("lr", float(self.hparams.lr))\n        return self(batch)\n'),
    )
    INVALID = (
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n" + _LOSS
            + '        self.log("train_loss", loss.item(), on_epoch=True)\n        return loss\n',
            expected_fix=_HEAD + "    def training_step(self, batch, batch_idx):\n" + _LOSS
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
            count=2,
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

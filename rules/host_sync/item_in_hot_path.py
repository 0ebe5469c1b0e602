"""TPU101 item-in-hot-path."""

from __future__ import annotations

import libcst as cst

from tpulint.datatypes.diagnostics import Applicability
from tpulint.rule_api.cst_helpers import strip_call_suffix
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..rewrite.sync import item_fix
from ..shared.matchers import is_method_call, source_of
from .helpers import _HEAD, _LOSS, logged_value


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
    Where the number only accumulates into module state or goes to Lightning, the fix is
    **unsafe** (`--unsafe-fixes`) and replaces `.item()` with `.detach()`: the same value,
    without the graph, as a 0-dim tensor on the device that is read back only where it is
    used (an epoch-end hook, a logger). That is when the value, through arithmetic only
    (`+`, `-`, `*`, `/`), is

    - assigned or added to an attribute (`self.avg = 0.9 * self.avg + 0.1 * loss.item()`,
      `self.total += loss.item()`), or appended to an attribute's list
      (`self.losses.append(loss.item())`);
    - a value of the dict a step returns, or passed to a `.log(...)` / `.log_dict(...)` call
      (of a module other than `self`; `self.log` is TPU102's).

    It is exact under one condition the fix title states: the value is only used as a
    number later (arithmetic, logging, `torch.stack`). It is now a float32 tensor where it
    was a Python float (float64): a long running sum rounds differently, `f"{value}"`
    prints `tensor(...)`, and numpy or `json` need `.item()` in the epoch-end hook. With
    `tpulint fix --prove module:Class --apply --unsafe-fixes` the training is run both ways
    and the rewrite applied only if it changes nothing.

    Other uses (a size, an index, `int(x.item())`, a Python branch) have a display-only
    suggestion (drop `.item()`): whether that code works with a tensor depends on the code.

    ## References
    - [torch_xla troubleshooting: known performance caveats](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    - [Lightning docs: TPU basics, "tensor evaluation"](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_basic.html)
    """

    code = "TPU101"
    hot_only = True
    name = "item-in-hot-path"
    summary = "`.item()` on a device tensor in code that runs every step"
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = "Keep the value as a tensor: drop `.item()`"
    requires = (".item()",)
    screen_calls = frozenset({"item"})

    VALID = (
        # Once per epoch is fine.
        Valid(_HEAD + "    def on_train_epoch_end(self):\n        print(self.total.item())\n"),
        # CPU tensors, numpy values and MLX arrays are not device syncs.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        if torch.rand(1).item() < self.p:\n            batch = batch.flip(0)\n"
            "        return self.loss_fn(self(batch))\n"
        ),
        Valid(
            "import numpy as np\nimport lightning as L\n\n\nclass Attn(L.LightningModule):\n"
            "    def forward(self, x):\n"
            '        u = np.ceil(np.log(x.shape[1])).astype("int").item()\n'
            "        return x[:, :u]\n"
        ),
        Valid(
            "import lightning as L\nimport mlx.core as mx\n\n\nclass Plan(L.LightningModule):\n"
            "    def train_step(self, batch):\n        loss = mx.mean(mx.array(batch))\n"
            "        mx.eval(loss)\n        return {'loss': loss.item()}\n"
        ),
        # dict.items() is not Tensor.item().
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        logs = {'a': 1}\n        for k, v in logs.items():\n            pass\n"
            "        return self(batch)\n"
        ),
        # Only for the first batch: a sync per epoch, not per step.
        Valid(
            _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        if batch_idx > 0:\n            return\n"
            "        self.first = self(batch).sum().item()\n"
        ),
        # Logged values are TPU102's business.
        Valid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + '        self.log("loss", loss.item())\n        return loss\n'
        ),
        # Not a Lightning class and not forward/step: not hot.
        Valid("import torch\n\ndef report(t):\n    return t.item()\n"),
    )
    INVALID = (
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        self.seen += loss.item()\n        return loss\n",
            line=8,
            message="in training_step",
            applicability=Applicability.UNSAFE,
            expected_fix=_HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        self.seen += loss.detach()\n        return loss\n",
        ),
        # Accumulated into module state, returned in the step's outputs, logged elsewhere.
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        self.avg_std = 0.9 * self.avg_std + 0.1 * self(batch).std().item()\n"
            "        self.losses.append(loss.item())\n"
            '        self.task.log_dict({"loss": loss.item()})\n'
            '        return {"loss": loss, "value": loss.item()}\n',
            count=4,
            applicability=Applicability.UNSAFE,
            expected_fix=_HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        self.avg_std = 0.9 * self.avg_std + 0.1 * self(batch).std().detach()\n"
            "        self.losses.append(loss.detach())\n"
            '        self.task.log_dict({"loss": loss.detach()})\n'
            '        return {"loss": loss, "value": loss.detach()}\n',
        ),
        # Used as a size: only the display-only suggestion.
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + "        n = int(batch.sum().item())\n"
            "        return self(batch[:n])\n",
            applicability=Applicability.DISPLAY_ONLY,
            expected_suggestion=_HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + "        n = int(batch.sum())\n"
            "        return self(batch[:n])\n",
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
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
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
            fix=item_fix(ctx, node),
            replacement=strip_call_suffix(node),
            applicability=Applicability.DISPLAY_ONLY,
        )

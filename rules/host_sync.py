"""TPU1xx: host-device synchronisation in hot code (every step)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import libcst as cst

from tpulint.analysis.context import FileContext, get_arg
from tpulint.analysis.guards import effective
from tpulint.analysis.project import ClassKind
from tpulint.analysis.values import ValueKind
from tpulint.cst_helpers import add_keywords, keyword_arg, make_arg, replace_arg, strip_call_suffix
from tpulint.diagnostics import Applicability, Severity
from tpulint.rule import ImportSpec, Invalid, Rule, Valid

from ._common import is_log_call, is_method_call, source_of, walk
from ._rewrites_sync import enclosing_print, if_fix, item_fix, print_fix
from ._shape_helpers import (
    TrackingRule,
    computed_tensor,
    is_torch_tensor,
    keyword,
    method_name,
    receiver,
    torch_name,
)

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
        # float() of a Python number is not a sync.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            '        self.log("lr", float(self.hparams.lr))\n        return self(batch)\n'
        ),
    )
    INVALID = (
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


# --- TPU103 to TPU107 ------------------------------------------------------------------

_PREDICT_HOOKS = ("predict_step", "on_predict_batch_end", "on_predict_batch_start")
_CONVERSIONS = ("float", "int", "bool")
_WRITER_NAME = re.compile(r"(write|save|dump|export|store)", re.IGNORECASE)


def quiet(ctx: FileContext, node: cst.CSTNode) -> bool:
    """Under a "rare" guard (first batch, logging flags) or a CUDA/device check."""
    guards = ctx.guards(node)
    return "rare" in guards or "device-check" in guards


def _function_returns(ctx: FileContext) -> set[str]:
    """Names read by the `return` statements of the current function."""
    info = ctx.function
    if info is None:
        return set()
    names: set[str] = set()
    for node in walk(info.node):
        if isinstance(node, cst.Return) and node.value is not None:
            for inner in walk(node.value):
                if isinstance(inner, cst.Name):
                    names.add(inner.value)
    return names


def returned_from_predict(ctx: FileContext, node: cst.CSTNode) -> bool:
    """In `predict_step` (or a helper it calls), whether `node` is returned: directly, by
    a name that is returned, or appended to a returned list. The host copy is the point."""
    info = ctx.function
    if info is None or info.root_hook not in _PREDICT_HOOKS:
        return False
    if _WRITER_NAME.search(info.name):
        return True  # `write_batch`, `save_predictions`: writing the outputs is the point
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.Return, cst.Yield)):
            return True
        if isinstance(ancestor, cst.FunctionDef):
            break
    statement = ctx.enclosing_statement(node)
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    returned = _function_returns(ctx)
    for small in statement.body:
        targets: list[cst.BaseExpression] = []
        if isinstance(small, cst.Assign):
            targets = [t.target for t in small.targets]
        elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
            targets = [small.target]
        elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            func = small.value.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("append", "extend"):
                targets = [func.value]
        for target in targets:
            for inner in walk(target):
                if isinstance(inner, cst.Name) and inner.value in returned:
                    return True
    return False


def _in_exception_path(ctx: FileContext, node: cst.CSTNode) -> bool:
    """Inside `raise ...(f"...")` or an assert message: only evaluated on failure."""
    child = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.Raise):
            return True
        if isinstance(ancestor, cst.Assert):
            return child is ancestor.msg
        if isinstance(ancestor, (cst.FunctionDef, cst.SimpleStatementLine)):
            return False
        child = ancestor
    return False


def _to_cpu(ctx: FileContext, node: cst.Call) -> bool:
    """`x.to("cpu")`, `x.to(device="cpu")`, `x.to(torch.device("cpu"))`."""
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value != "device":
            continue
        value = arg.value
        if isinstance(value, cst.SimpleString):
            text = value.evaluated_value
            return isinstance(text, str) and text.split(":", 1)[0] == "cpu"
        if isinstance(value, cst.Call) and ctx.qualify(value.func) == "torch.device" and value.args:
            inner = value.args[0].value
            return isinstance(inner, cst.SimpleString) and str(inner.evaluated_value) == "cpu"
        return False
    return False


class HostTransferInHotPath(TrackingRule, Rule):
    """
    ## What it does
    Finds device-to-host copies of tensors in code that runs for every batch: `.cpu()`,
    `.numpy()`, `.tolist()`, `.to("cpu")`, `float(t)` / `int(t)` / `bool(t)` / `str(t)`,
    `print(t)` and f-strings that format a tensor, in step methods, `forward`, batch hooks
    and the helpers they call. `.item()` is TPU101's, and conversions passed to `self.log`
    are TPU102's.

    It stays silent where the copy is not paid every step or is the point: under "rare"
    guards (`if batch_idx == 0:`, `if self.global_step % 100 == 0:`, plotting and logging
    flags, or after an early `if batch_idx > 0: return`), under CUDA checks, in
    `predict_step` for values it returns, in exception messages, and on values that are
    not device tensors (numpy arrays, Python numbers, CPU tensors).

    ## Why is this bad on TPU?
    Tensors on an XLA device are lazy: the step is recorded as a graph and run once per
    step. Reading a value on the host (`.cpu()`, printing, converting to a Python number)
    forces the graph recorded so far to be compiled and executed right there, and the host
    waits for the TPU and the transfer. torch_xla lists these accesses as the main
    unexpected cause of extra executions and `TransferFromDeviceTime` in its metrics.

    ## Example
    ```python
    import lightning as L


    class Model(L.LightningModule):
        def validation_step(self, batch, batch_idx):
            x, y = batch
            preds = self(x).argmax(dim=1)
            self.val_preds.append(preds.cpu())
    ```

    ## Use instead
    ```python
    import lightning as L


    class Model(L.LightningModule):
        def validation_step(self, batch, batch_idx):
            x, y = batch
            preds = self(x).argmax(dim=1)
            self.val_preds.append(preds.detach())

        def on_validation_epoch_end(self):
            preds = [p.cpu() for p in self.val_preds]
    ```

    Keep values as tensors during the step (a torchmetrics metric, `self.log`, a list of
    device tensors) and move them to the host once, in an epoch-end hook.

    ## Fix safety
    `print(t)` of a device tensor (or a `print` of an f-string that formats one) has an
    **unsafe** fix that removes the `print` statement: the training computes the same, but
    the output is gone (log the value with `self.log`, or print it in an epoch-end hook).
    `tpulint fix --prove module:Class --apply --unsafe-fixes` checks that the training is
    unchanged before writing it.

    For `.cpu()` and the conversions the suggestion (drop `.cpu()` or the conversion) is
    display-only: the code after it may need a host value (numpy, a Python list or number).

    ## References
    - [torch_xla troubleshooting: known performance caveats and compilation causes](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    - [torch_xla: migration to XLA on TPUs](https://github.com/pytorch/xla/blob/master/docs/source/learn/migration-to-xla-on-tpus.md)
    - [Lightning docs: TPU basics, "tensor evaluation"](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_basic.html)
    """

    code = "TPU103"
    hot_only = True
    name = "host-transfer-in-hot-path"
    summary = "`.cpu()`, `.tolist()`, `float(t)`, `print(t)` of device tensors in hot code"
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = "Keep the value on the device"
    requires = (
        ".cpu(",
        ".numpy(",
        ".tolist(",
        "float(",
        "int(",
        "bool(",
        "str(",
        "print(",
        'f"',
        "f'",
        ".to(",
    )

    VALID = (
        # The first validation batch only (EXAMPLES T9).
        Valid(
            _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        X, y = batch\n"
            "        if self.current_epoch == 0 or batch_idx > 0:\n            return\n"
            "        X = X.cpu().numpy()\n"
        ),
        Valid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        if batch_idx % 100 == 0:\n            print(f'loss {loss}')\n"
            "        return loss\n"
        ),
        # predict_step returns host values on purpose.
        Valid(
            _HEAD + "    def predict_step(self, batch, batch_idx):\n"
            "        ids = self(batch).argmax(-1)\n"
            "        ids = ids.cpu().numpy()\n        return list(zip(ids, batch))\n"
        ),
        Valid(
            _HEAD + "    def predict_step(self, batch, batch_idx):\n"
            "        return self(batch).cpu()\n"
        ),
        # numpy values and CPU tensors.
        Valid(
            "import numpy as np\n" + _HEAD + "    def forward(self, x):\n"
            "        weights = np.ones(4)\n        w = weights.tolist()\n"
            "        t = torch.tensor([1, 2]).tolist()\n        return x * w[0] * t[0]\n"
        ),
        # Epoch-level hooks run once.
        Valid(
            _HEAD + "    def on_validation_epoch_end(self):\n"
            "        preds = torch.cat(self.preds).cpu().numpy()\n"
        ),
        # Shapes and Python numbers.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        n = int(batch.shape[0])\n        scale = float(self.hparams.lr)\n"
            "        print(f'batch of {n} at {batch.shape}')\n"
            "        return self(batch) * scale\n"
        ),
        # Only raised on failure.
        Valid(
            _HEAD + "    def forward(self, x):\n"
            "        if x.dim() != 2:\n            raise ValueError(f'bad input {x}')\n"
            "        return x\n"
        ),
        # Under a CUDA check.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        if torch.cuda.is_available():\n            batch.cpu()\n"
            "        return self(batch)\n"
        ),
        # Conversions passed to self.log are TPU102's.
        Valid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + '        self.log("loss", float(loss))\n        return loss\n'
        ),
    )
    INVALID = (
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        samples, indices, weights = batch\n"
            "        indices = indices.cpu().numpy()\n"
            "        return self(samples)\n",
            line=8,
            message="in training_step",
            expected_suggestion=_HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        samples, indices, weights = batch\n"
            "        indices = indices.numpy()\n"
            "        return self(samples)\n",
        ),
        Invalid(
            _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        x, y = batch\n        preds = self(x)\n"
            "        self.preds.append(preds.detach().cpu())\n"
            "        self.targets.append(y.cpu())\n",
            count=2,
        ),
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        print(loss)\n        print(f'loss={loss:.3f}')\n"
            "        self.total += float(loss)\n        return loss\n",
            count=3,
            applicability=Applicability.UNSAFE,
            expected_fix=_HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        self.total += float(loss)\n        return loss\n",
        ),
        # A helper called from the step, and a tolist() on a device tensor.
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        return self.reshape_labels(self(batch), batch)\n\n"
            "    def reshape_labels(self, logits, labels):\n"
            "        labels = labels.cpu().tolist()\n        return logits\n",
            message="called from training_step",
        ),
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        out = self(batch)\n"
            '        host = out.to("cpu")\n        return out\n',
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if not ctx.in_hot_code:
            return
        func = node.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if (
                method in ("cpu", "tolist")
                or (method == "numpy" and keyword(node, "force") is not None)
                or (method == "to" and _to_cpu(ctx, node))
            ):
                self._check_transfer(node, method)
            return
        if isinstance(func, cst.Name) and func.value not in ctx.aliases.bindings:
            if func.value in _CONVERSIONS and len(node.args) == 1 and not node.args[0].star:
                self._check_conversion(node, func.value)
            elif func.value == "print":
                self._check_print(node)

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
        ctx = self.ctx
        if not ctx.in_hot_code:
            return
        value = node.expression
        if not computed_tensor(ctx, value, self.bindings):
            return
        if _in_exception_path(ctx, node) or quiet(ctx, node):
            return
        printed = enclosing_print(ctx, node)
        self.report(
            value,
            f"formatting the tensor `{source_of(ctx, value)}` in {ctx.hot_reason} copies it "
            "to the host and waits for the TPU every step; log it with `self.log` instead",
            fix=print_fix(ctx, printed) if printed is not None else None,
        )

    def _check_transfer(self, node: cst.Call, method: str) -> None:
        ctx = self.ctx
        tensor = node.func.value  # type: ignore[union-attr]
        kind = ctx.value_kind(tensor)
        if not kind.may_be_device:
            return
        if (
            method == "tolist"
            and kind is not ValueKind.DEVICE
            and not is_torch_tensor(ctx, tensor, self.bindings)
        ):
            return  # `.tolist()` of an unknown value may be a numpy array
        if quiet(ctx, node) or returned_from_predict(ctx, node) or _in_exception_path(ctx, node):
            return
        code = source_of(ctx, node)
        replacement = strip_call_suffix(node) if method == "cpu" and not node.args else None
        self.report(
            node,
            f"`{code}` in {ctx.hot_reason} copies a device tensor to the host and waits for "
            "the TPU every step; keep it on the device and move it once in an epoch-end hook",
            replacement=replacement,
            applicability=Applicability.DISPLAY_ONLY,
        )

    def _check_conversion(self, node: cst.Call, name: str) -> None:
        ctx = self.ctx
        value = node.args[0].value
        if is_method_call(value, "item"):
            return  # TPU101
        if ctx.value_kind(value) is not ValueKind.DEVICE:
            return
        if logged_value(ctx, node) or quiet(ctx, node) or _in_exception_path(ctx, node):
            return
        if returned_from_predict(ctx, node):
            return
        self.report(
            node,
            f"`{source_of(ctx, node)}` in {ctx.hot_reason} reads a device tensor on the host, "
            f"a sync every step; keep `{source_of(ctx, value)}` a tensor",
            replacement=value if name in ("float", "int") else None,
            applicability=Applicability.DISPLAY_ONLY,
        )

    def _check_print(self, node: cst.Call) -> None:
        ctx = self.ctx
        for arg in node.args:
            value = arg.value
            if isinstance(value, (cst.FormattedString, cst.SimpleString)):
                continue  # f-strings are checked by themselves
            if computed_tensor(ctx, value, self.bindings):
                if quiet(ctx, node):
                    return
                self.report(
                    node,
                    f"`print({source_of(ctx, value)})` in {ctx.hot_reason} copies the tensor "
                    "to the host and waits for the TPU every step; log it with `self.log`",
                    fix=print_fix(ctx, node),
                )
                return


_COMMA = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
_TENSOR_PREDICATES = frozenset(
    {
        "any",
        "all",
        "equal",
        "allclose",
        "isnan",
        "isinf",
        "isfinite",
        "is_nonzero",
        "isclose",
        "eq",
        "ne",
        "gt",
        "lt",
        "ge",
        "le",
        "count_nonzero",
        "sum",
        "max",
        "min",
        "numel",
    }
)


class TensorValueControlFlow(TrackingRule, Rule):
    """
    ## What it does
    Finds Python control flow decided by the value of a device tensor in code that runs
    every step: `if loss > 0:`, `while (x != 0).any():`, `assert torch.isfinite(loss)`,
    `a if score > t else b`. Conditions on shapes (`x.shape[0] > 1`), flags
    (`self.training`), `None` checks, hook arguments (`batch_idx == 0`), Python numbers
    and CPU tensors are not tensor values and are not reported.

    ## Why is this bad on TPU?
    Python needs a real `bool` to take a branch, so the pending XLA graph is cut and run
    and the value copied to the host: a sync in every step. Each outcome then records a
    different graph after the branch, so data-dependent branches also multiply the graphs
    XLA must compile. `torch.where` keeps both outcomes in one static graph.

    ## Example
    ```python
    import lightning as L


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self.loss_fn(self(batch), batch)
            if loss > 10:
                loss = loss / 10
            return loss
    ```

    ## Use instead
    ```python
    import lightning as L
    import torch


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self.loss_fn(self(batch), batch)
            loss = torch.where(loss > 10, loss / 10, loss)
            return loss
    ```

    ## Fix safety
    An `if` on a tensor condition whose branches only assign values (a pure update) has an
    **unsafe** fix that chooses with `torch.where` instead of branching:

    - `if c: x = a` becomes `x = torch.where(c, a, x)` (`x += a` becomes
      `x = torch.where(c, x + a, x)`), one statement per assignment;
    - `if c: x = a` / `else: x = b` becomes `x = torch.where(c, a, b)`;
    - `not c`, `c and d`, `c or d` become `torch.logical_not(c)`, `torch.logical_and(c, d)`,
      `torch.logical_or(c, d)`.

    It is offered only when the condition and every assigned value are pure (tensor
    operations, no module calls, no random draws, no in-place methods), every part of the
    condition is a device tensor, each assigned name already has a value before the `if`,
    and each assigned value provably has the shape of the value it replaces (`torch.where`
    gives one shape whichever way the condition goes): the same tensor transformed
    elementwise (`x / 10`, `x.clamp(max=m)`, `torch.zeros_like(x)`), integer indexing of one
    tensor (`t[0]` / `t[1]`), or single values on both sides; `x = x[:, :n]` or
    `x = x.sum()` under a tensor condition get no fix. It is exact when the assigned values
    are tensors or numbers (a Python number becomes a 0-dim tensor) and are finite when the
    condition is false: both sides are now computed every step, so a division by
    zero there, harmless in the forward value, would put `nan` into the gradients.
    `x += a` on a tensor updated `x` in place; the rewrite binds a new tensor (other
    references to the old one no longer see the update). `tpulint fix --prove
    module:Class --apply --unsafe-fixes` trains the module both ways before writing it.

    For a conditional expression `a if cond else b` the suggestion is
    `torch.where(cond, a, b)` (display-only: both sides are evaluated and broadcast to one
    shape and dtype). Other statements (`while`, `assert`, an `if` that returns, logs or
    calls a module) are reported without a fix.

    ## References
    - [torch_xla: recompilation causes, "control flow depending on tensor values"](https://github.com/pytorch/xla/blob/master/docs/source/perf/recompilation.md)
    - [torch_xla troubleshooting: known performance caveats](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    """

    code = "TPU104"
    hot_only = True
    name = "tensor-value-control-flow"
    summary = "`if` / `while` / `assert` / ternary decided by a device tensor's value in hot code"
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = "Use `torch.where(cond, a, b)`"
    requires = ("if ", "while ", "assert ")

    VALID = (
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        x, mask = batch\n"
            "        if x.shape[0] > 1 and self.training and mask is not None:\n"
            "            x = x * mask\n"
            "        if batch_idx == 0 or self.current_epoch > 3 or len(x) > 2:\n"
            "            pass\n"
            "        assert x.dim() == 2, x.shape\n"
            "        return self(x)\n"
        ),
        # A CPU random number decides augmentation: no device sync.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        if torch.rand(1) < 0.5:\n            batch = batch.flip(0)\n"
            "        return self(batch)\n"
        ),
        # .item() is TPU101's finding, not a second one here.
        Valid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        if loss.item() > 10:\n            print('high')\n        return loss\n"
        ),
        # Only on the first batch.
        Valid(
            _HEAD
            + "    def validation_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        if batch_idx == 0 and loss > 1:\n            self.plot(batch)\n"
        ),
        # Epoch-level hooks are not hot.
        Valid(
            _HEAD + "    def on_validation_epoch_end(self):\n"
            "        if self.best > self.metric.compute():\n            self.best = 0\n"
        ),
    )
    INVALID = (
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        if torch.isinf(loss):\n            return None\n        return loss\n",
            line=8,
            message="in training_step",
        ),
        Invalid(
            _HEAD + "    def forward(self, x):\n"
            "        while (x > 1).any():\n            x = x / 2\n"
            "        assert (x >= 0).all()\n        return x\n",
            count=2,
        ),
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        scale = 0.5 if loss > 1 else 1.0\n        return loss * scale\n",
            expected_suggestion=_HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        scale = torch.where(loss > 1, 0.5, 1.0)\n"
            "        return loss * scale\n",
        ),
        # A pure update under a tensor condition: torch.where.
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        if loss > 10:\n            loss = loss / 10\n"
            "        weight = 1.0\n"
            "        if not torch.isfinite(loss).all():\n            weight = 0.0\n"
            "        else:\n            weight = 2.0\n"
            "        return loss * weight\n",
            count=2,
            applicability=Applicability.UNSAFE,
            expected_fix=_HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        loss = torch.where(loss > 10, loss / 10, loss)\n"
            "        weight = 1.0\n"
            "        weight = torch.where(torch.logical_not(torch.isfinite(loss).all()), 0.0, "
            "2.0)\n"
            "        return loss * weight\n",
        ),
        # A branch that calls a module or returns is not a pure update: no fix.
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        if loss > 10:\n            loss = self.rescale(loss)\n"
            "        return loss\n",
        ),
        # A flag computed from tensors, then tested.
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        bad = torch.isnan(loss).any()\n"
            "        if not bad:\n            self.manual_backward(loss)\n",
            line=9,
        ),
    )

    def visit_If(self, node: cst.If) -> None:
        self._check(node, node.test, "if")

    def visit_While(self, node: cst.While) -> None:
        self._check(node, node.test, "while")

    def visit_Assert(self, node: cst.Assert) -> None:
        self._check(node, node.test, "assert")

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._check(node, node.test, "ternary", node)

    def _check(
        self,
        owner: cst.CSTNode,
        test: cst.BaseExpression,
        kind: str,
        ifexp: cst.IfExp | None = None,
    ) -> None:
        ctx = self.ctx
        if not ctx.in_hot_code:
            return
        found = self._tensor_test(test, 0)
        # (The test's own nodes are not linked to their parents yet: ask about the
        # statement, and `_tensor_test` stops at `rare_flag and tensor_test`.)
        if found is None or quiet(ctx, owner):
            return
        replacement = None
        if ifexp is not None and found is test:
            replacement = cst.Call(
                func=cst.Attribute(value=cst.Name("torch"), attr=cst.Name("where")),
                args=[
                    cst.Arg(test.with_changes(lpar=[], rpar=[]), comma=_COMMA),
                    cst.Arg(ifexp.body, comma=_COMMA),
                    cst.Arg(ifexp.orelse),
                ],
                lpar=ifexp.lpar,
                rpar=ifexp.rpar,
            )
        what = {
            "if": "an `if`",
            "while": "a `while` loop",
            "assert": "an `assert`",
            "ternary": "a conditional expression",
        }[kind]
        self.report(
            found,
            f"{what} on the tensor value `{source_of(ctx, found)}` in {ctx.hot_reason} "
            "syncs with the TPU every step and records one graph per outcome; "
            "use `torch.where` or masking",
            fix=if_fix(ctx, self.bindings, owner) if isinstance(owner, cst.If) else None,
            replacement=replacement,
            applicability=Applicability.DISPLAY_ONLY,
            replaces=ifexp,
            add_imports=[ImportSpec("torch")] if replacement is not None else (),
        )

    def _tensor_test(self, test: cst.BaseExpression, depth: int) -> cst.BaseExpression | None:
        if depth > 6:
            return None
        ctx = self.ctx
        if isinstance(test, cst.BooleanOperation):
            left = self._tensor_test(test.left, depth + 1)
            if left is not None:
                return left
            if isinstance(test.operator, cst.And) and effective(
                ctx.condition_kinds(test.left), ctx.function.root_hook if ctx.function else None
            ):
                return None  # `batch_idx == 0 and loss > 1`: only for some batches
            return self._tensor_test(test.right, depth + 1)
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self._tensor_test(test.expression, depth + 1)
        if isinstance(test, cst.Comparison):
            if any(
                isinstance(t.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn))
                for t in test.comparisons
            ):
                return None
            return test if ctx.value_kind(test) is ValueKind.DEVICE else None
        if isinstance(test, cst.Call):
            kind = ctx.value_kind(test)
            torch_function = (torch_name(ctx, test) or "").rsplit(".", 1)[-1]
            # `torch.isnan(x)` takes only tensors: the use says `x` is one.
            if kind is not ValueKind.DEVICE and not (
                kind is ValueKind.UNKNOWN and torch_function in _TENSOR_PREDICATES
            ):
                return None
            name = method_name(test) or torch_function
            return test if name in _TENSOR_PREDICATES else None
        if isinstance(test, cst.Name):
            binding = self.bindings.lookup(test.value)
            if binding is None or binding.value is None or binding.unpack_index is not None:
                return None
            value = binding.value
            if (
                isinstance(value, (cst.Comparison, cst.Call, cst.UnaryOperation))
                and self._tensor_test(value, depth + 1) is not None
            ):
                return test
        return None


_MARK_STEP = "torch_xla.core.xla_model.mark_step"
_SYNC_CALLS = {
    _MARK_STEP: "xm.mark_step()",
    "torch_xla.sync": "torch_xla.sync()",
    "torch_xla.torch_xla.sync": "torch_xla.sync()",
}
_OPTIMIZER_STEP = "torch_xla.core.xla_model.optimizer_step"


def in_lightning_code(ctx: FileContext) -> bool:
    """In a method of a Lightning class (module, data module, callback), or a hot helper
    of a file that defines one."""
    if ctx.lightning_class is not None:
        return True
    info = ctx.function
    return info is not None and info.hot and info.cls is None and ctx.analysis.has_lightning


def _statement_of_call(ctx: FileContext, node: cst.Call) -> cst.CSTNode | None:
    """The statement to delete for a call used as a statement of its own, else None."""
    expr = ctx.parent(node)
    if not isinstance(expr, cst.Expr):
        return None
    line = ctx.parent(expr)
    if isinstance(line, cst.SimpleStatementLine):
        return line if len(line.body) == 1 else expr
    return None


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
    DataModules and Callbacks (and the helpers their hot hooks call).

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
    defaults to True), and anywhere in a step with an explicit `on_step=True`.

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
        if not on_step or (hook not in _TRAIN_BATCH_HOOKS and hook not in _EVAL_BATCH_HOOKS):
            return
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


class RendezvousInStep(Rule):
    """
    ## What it does
    Finds `xm.rendezvous(...)` in code that runs every step (step methods, `forward`,
    batch hooks and their helpers).

    ## Why is this bad on TPU?
    `xm.rendezvous` is a barrier across all processes. Under PJRT it also runs
    `mark_step` before and after itself, so in a step it cuts the graph in two and blocks
    every device until the slowest reaches it; torch_xla warns it "may force an unwanted
    compilation". Barriers belong in setup and teardown code, not in the step.

    ## Example
    ```python
    import lightning as L
    import torch_xla.core.xla_model as xm


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            xm.rendezvous("step")
            return self(batch).sum()
    ```

    ## Use instead
    ```python
    import lightning as L
    import torch_xla.core.xla_model as xm


    class Model(L.LightningModule):
        def setup(self, stage):
            xm.rendezvous("setup")

        def training_step(self, batch, batch_idx):
            return self(batch).sum()
    ```

    ## Fix safety
    The suggestion removes the call and is display-only: whether the barrier is needed
    (and where it should move) depends on what the code synchronises.

    ## References
    - [torch_xla PJRT: changes to `xm.rendezvous`](https://github.com/pytorch/xla/blob/master/docs/source/learn/pjrt.md)
    - [torch_xla troubleshooting: known performance caveats](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    """

    code = "TPU107"
    hot_only = True
    name = "rendezvous-in-step"
    summary = "`xm.rendezvous(...)` in code that runs every step"
    fix_applicability = Applicability.DISPLAY_ONLY
    fix_sometimes = True
    fix_message = "Move the barrier out of the step"
    requires = ("rendezvous",)

    VALID = (
        Valid(
            "import lightning as L\nimport torch_xla.core.xla_model as xm\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def setup(self, stage):\n        xm.rendezvous('data')\n"
        ),
        # Once, on the first batch.
        Valid(
            "import lightning as L\nimport torch_xla.core.xla_model as xm\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        if batch_idx == 0:\n            xm.rendezvous('first')\n"
            "        return self(batch).sum()\n"
        ),
    )
    INVALID = (
        Invalid(
            "import lightning as L\nimport torch_xla.core.xla_model as xm\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        xm.rendezvous('step')\n        return self(batch).sum()\n",
            line=7,
            message="in training_step",
            expected_suggestion="import lightning as L\nimport torch_xla.core.xla_model as xm\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        return self(batch).sum()\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if not ctx.in_hot_code:
            return
        if ctx.qualify(node.func) != "torch_xla.core.xla_model.rendezvous":
            return
        if quiet(ctx, node):
            return
        statement = _statement_of_call(ctx, node)
        self.report(
            node,
            f"`{source_of(ctx, node)}` in {ctx.hot_reason} is a barrier with a `mark_step` "
            "before and after it, every step; move it to setup or teardown code",
            replacement=cst.RemovalSentinel.REMOVE if statement is not None else None,
            replaces=statement,
        )


# --- TPU108 -----------------------------------------------------------------------------

# Calls every process must make together: a process that skips one leaves the others waiting.
_COLLECTIVES = {
    "torch_xla.core.xla_model.save": "writes from the master ordinal after a rendezvous of "
    "every process",
    "torch_xla.core.xla_model.rendezvous": "is a barrier of every process",
    "torch_xla.core.xla_model.mesh_reduce": "gathers a value from every process",
    "torch_xla.core.xla_model.all_reduce": "reduces across every device",
    "torch_xla.core.xla_model.all_gather": "gathers from every device",
    "torch_xla.core.xla_model.reduce_scatter": "reduces across every device",
    "torch_xla.core.xla_model.all_to_all": "exchanges data between every device",
    "torch_xla.core.xla_model.collective_permute": "exchanges data between devices",
    "torch_xla.core.xla_model.optimizer_step": "all-reduces the gradients of every device",
    "torch.distributed.barrier": "is a barrier of every process",
    "torch.distributed.all_reduce": "reduces across every process",
    "torch.distributed.all_gather": "gathers from every process",
    "torch.distributed.all_gather_object": "gathers from every process",
    "torch.distributed.broadcast": "needs every process",
    "torch.distributed.broadcast_object_list": "needs every process",
    "torch.distributed.reduce": "needs every process",
    "torch.distributed.gather": "needs every process",
    "torch.distributed.scatter": "needs every process",
}
# Lightning methods that synchronise every process (through the strategy's barrier or
# collectives), called on the Trainer, its strategy or the module.
_LIGHTNING_COLLECTIVES = {
    "save_checkpoint": "waits for every process in the strategy's barrier",
    "barrier": "is a barrier of every process",
    "all_gather": "gathers from every process",
    "broadcast": "needs every process",
    "reduce": "reduces across every process",
}
_LIGHTNING_RECEIVERS = re.compile(r"(^|\.)(trainer|strategy|pl_module|fabric)$|^self$")
_RANK_TEST = re.compile(
    r"(global_rank|local_rank|node_rank|is_global_zero|is_local_zero|is_master|master_ordinal|"
    r"get_ordinal|global_ordinal|local_ordinal|get_rank|process_index|\brank\b)"
)
_RANK_ZERO_DECORATORS = frozenset({"rank_zero_only"})
# The text of a collective call, before parsing: `xm.save(`, `dist.barrier(`,
# `.save_checkpoint(`, `strategy.reduce(`, `all_gather(`.
_COLLECTIVE_TEXT = re.compile(
    r"(\.(save|rendezvous|mesh_reduce|all_reduce|all_gather|reduce_scatter|all_to_all|"
    r"collective_permute|optimizer_step|barrier|broadcast|broadcast_object_list|"
    r"all_gather_object|gather|scatter|reduce|save_checkpoint)\(|\ball_gather\(|\bbarrier\()"
)


class CollectiveInRankBranch(Rule):
    """
    ## What it does
    Finds calls every process must make together (`xm.save`, `xm.rendezvous`,
    `xm.mesh_reduce`, `xm.all_reduce`, `torch.distributed.barrier`, `trainer.save_checkpoint`,
    `self.all_gather`, `strategy.barrier()`, ...) that only some processes reach: under a
    condition on the rank (`if self.global_rank == 0:`, `if xm.is_master_ordinal():`,
    `if trainer.is_global_zero:`, either branch of it, or after an early
    `if not trainer.is_global_zero: return`), or in a function decorated with
    `@rank_zero_only`.

    ## Why is this bad on TPU?
    A collective completes only when every process (one per TPU core, or per host) has
    called it. Under a rank condition the other processes never call it, so the ones that
    did wait forever: the run hangs without an error, typically at the end of an epoch or at
    the first checkpoint. `xm.save` is one of them: it holds a rendezvous of every process
    and writes from the master ordinal only, so guarding it with `if xm.is_master_ordinal():`
    is what hangs.

    ## Example
    ```python
    import lightning as L
    import torch_xla.core.xla_model as xm


    class Model(L.LightningModule):
        def on_train_epoch_end(self):
            if self.global_rank == 0:
                xm.save(self.state_dict(), "model.pt")
    ```

    ## Use instead
    ```python
    import lightning as L
    import torch_xla.core.xla_model as xm


    class Model(L.LightningModule):
        def on_train_epoch_end(self):
            xm.save(self.state_dict(), "model.pt")  # writes from the master ordinal only
    ```

    Call the collective on every process; keep only the host-side work (printing, writing
    a file with `open`) under the rank condition.

    ## Fix safety
    No fix: which work belongs under the condition depends on the code.

    ## References
    - [torch_xla: `xm.save` "should be called by all processes"](https://github.com/pytorch/xla/blob/master/torch_xla/core/xla_model.py)
    - [torch_xla PJRT: `xm.rendezvous`](https://github.com/pytorch/xla/blob/master/docs/source/learn/pjrt.md)
    - [Lightning docs: `save_checkpoint` must run on all ranks](https://lightning.ai/docs/pytorch/stable/common/checkpointing_intermediate.html)
    """

    code = "TPU108"
    name = "collective-in-rank-branch"
    summary = "A collective (`xm.save`, `xm.rendezvous`, a barrier) only some ranks reach"
    severity = Severity.ERROR
    requires = (
        "save",
        "rendezvous",
        "mesh_reduce",
        "all_reduce",
        "all_gather",
        "barrier",
        "broadcast",
        "reduce",
        "all_to_all",
        "collective_permute",
        "optimizer_step",
    )

    @classmethod
    def applies(cls, source: str, view: object) -> bool:
        return bool(_COLLECTIVE_TEXT.search(source)) and any(
            t in source for t in ("rank", "ordinal", "is_global_zero", "is_master")
        )

    VALID = (
        # Every process calls it; only host-side work is guarded.
        Valid(
            "import lightning as L\nimport torch_xla.core.xla_model as xm\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def on_train_epoch_end(self):\n"
            "        xm.save(self.state_dict(), 'model.pt')\n"
            "        if self.global_rank == 0:\n"
            "            print('saved')\n"
        ),
        # A condition on the world size is the same on every process.
        Valid(
            "import torch.distributed as dist\n\n\n"
            "def sync(world_size):\n"
            "    if world_size > 1:\n"
            "        dist.barrier()\n"
        ),
        # torch.save is no collective.
        Valid(
            "import torch\nimport lightning as L\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def on_train_end(self):\n"
            "        if self.trainer.is_global_zero:\n"
            "            torch.save(self.state_dict(), 'model.pt')\n"
        ),
    )
    INVALID = (
        Invalid(
            "import lightning as L\nimport torch_xla.core.xla_model as xm\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def on_train_epoch_end(self):\n"
            "        if self.global_rank == 0:\n"
            "            xm.save(self.state_dict(), 'model.pt')\n",
            line=8,
            message="under `if self.global_rank == 0`",
        ),
        Invalid(
            "import torch_xla.core.xla_model as xm\n\n\n"
            "def report(value):\n"
            "    if not xm.is_master_ordinal():\n"
            "        return\n"
            "    total = xm.mesh_reduce('loss', value, sum)\n"
            "    print(total)\n",
            line=7,
            message="after `if not xm.is_master_ordinal(): return`",
        ),
        Invalid(
            "import lightning as L\nfrom lightning.pytorch.utilities import rank_zero_only\n\n\n"
            "class Saver(L.Callback):\n"
            "    @rank_zero_only\n"
            "    def on_validation_end(self, trainer, pl_module):\n"
            "        trainer.save_checkpoint('best.ckpt')\n",
            line=8,
            message="`@rank_zero_only`",
        ),
        Invalid(
            "import torch.distributed as dist\n\n\n"
            "def write(rank, data):\n"
            "    if rank == 0:\n"
            "        open('out.txt', 'w').write(data)\n"
            "    else:\n"
            "        dist.barrier()\n",
            line=8,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        what = self._collective(node)
        if what is None:
            return
        guard = self._rank_guard(node)
        if guard is None:
            return
        where = ctx.hot_reason or (f"`{ctx.function.name}`" if ctx.function else "module code")
        self.report(
            node,
            f"`{source_of(ctx, node)}` in {where} runs only on some processes ({guard}), but "
            f"it {what}: the processes that call it wait for the others forever and the run "
            "hangs; call it on every process and keep only host-side work under the condition",
        )

    def _collective(self, node: cst.Call) -> str | None:
        ctx = self.ctx
        qualified = ctx.qualify(node.func)
        if qualified is not None:
            return _COLLECTIVES.get(qualified)
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in _LIGHTNING_COLLECTIVES:
            return None
        receiver = source_of(ctx, func.value, 100)
        if not _LIGHTNING_RECEIVERS.search(receiver):
            return None
        method = func.attr.value
        if receiver == "self" and method not in ("all_gather",):
            return None  # `self.reduce(...)` of a user class: not Lightning's
        if method in ("reduce", "broadcast") and "strategy" not in receiver:
            return None
        return _LIGHTNING_COLLECTIVES[method]

    def _rank_guard(self, node: cst.Call) -> str | None:
        """How the call depends on the rank: the condition, the early exit or the
        decorator that keeps other processes away, or None."""
        ctx = self.ctx
        child: cst.CSTNode = node
        for ancestor in ctx.ancestors(node):
            if isinstance(ancestor, cst.If) and child is not ancestor.test:
                test = ctx.module.code_for_node(ancestor.test)
                if _RANK_TEST.search(test):
                    return f"under `if {' '.join(test.split())}`"
            elif isinstance(ancestor, cst.IfExp) and child is not ancestor.test:
                test = ctx.module.code_for_node(ancestor.test)
                if _RANK_TEST.search(test):
                    return f"under `{' '.join(test.split())}`"
            elif isinstance(ancestor, (cst.IndentedBlock, cst.Module)):
                for statement in ancestor.body:
                    if statement is child:
                        break
                    test_node = _early_return_test(statement)
                    if test_node is not None:
                        test = " ".join(ctx.module.code_for_node(test_node).split())
                        if _RANK_TEST.search(test):
                            return f"after `if {test}: return`"
            elif isinstance(ancestor, cst.FunctionDef):
                for decorator in ancestor.decorators:
                    expr = decorator.decorator
                    if isinstance(expr, cst.Call):
                        expr = expr.func
                    qualified = ctx.qualify(expr) or ""
                    if qualified.rsplit(".", 1)[-1] in _RANK_ZERO_DECORATORS:
                        return "`@rank_zero_only`"
                break
            elif isinstance(ancestor, (cst.ClassDef, cst.Lambda)):
                break
            child = ancestor
        return None


def _early_return_test(statement: cst.CSTNode) -> cst.BaseExpression | None:
    """`if TEST: return` (no else): the rest of the block runs only when TEST is false."""
    if not isinstance(statement, cst.If) or statement.orelse is not None:
        return None
    body = statement.body
    small: Sequence[cst.BaseSmallStatement] = ()
    if isinstance(body, cst.SimpleStatementSuite):
        small = body.body
    elif isinstance(body, cst.IndentedBlock) and len(body.body) == 1:
        only = body.body[0]
        if isinstance(only, cst.SimpleStatementLine):
            small = only.body
    if len(small) == 1 and isinstance(small[0], cst.Return):
        return statement.test
    return None


# --- TPU109 -----------------------------------------------------------------------------

# torch factories that make a new tensor on the CPU unless told `device=`.
_HOST_FACTORIES = frozenset(
    {
        "zeros",
        "ones",
        "empty",
        "full",
        "arange",
        "linspace",
        "logspace",
        "eye",
        "tensor",
        "as_tensor",
        "rand",
        "randn",
        "randint",
        "randperm",
        "tril_indices",
        "triu_indices",
    }
)
# Methods that keep a tensor where it is (so `torch.arange(n).float()[None]` is still on
# the host).
_KEEPS_DEVICE = frozenset(
    {
        "float",
        "long",
        "int",
        "bool",
        "half",
        "double",
        "bfloat16",
        "unsqueeze",
        "view",
        "reshape",
        "expand",
        "expand_as",
        "repeat",
        "t",
        "transpose",
        "flip",
        "contiguous",
        "clone",
        "detach",
        "requires_grad_",
    }
)
# torch functions that combine their tensor arguments.
_COMBINING = frozenset(
    {
        "cat",
        "concat",
        "stack",
        "where",
        "matmul",
        "mm",
        "bmm",
        "maximum",
        "minimum",
        "mul",
        "add",
        "sub",
        "div",
        "eq",
        "lt",
        "le",
        "gt",
        "ge",
        "ne",
        "masked_fill",
    }
)


class TensorWithoutDevice(TrackingRule, Rule):
    """
    ## What it does
    Finds tensors created in code that runs every step without `device=`
    (`torch.zeros(n)`, `torch.arange(T)`, `torch.tensor([...])`, `torch.eye(k)`) and then
    combined with the step's tensors (`x + pos`, `lengths[:, None] > torch.arange(T)`,
    `torch.cat([x, pad])`). A 0-dimensional `torch.tensor(number)` is not reported (PyTorch
    treats it as a scalar), nor are tensors moved with `.to(...)` / `.type_as(...)` or made
    with `*_like`/`x.new_*`.

    ## Why is this bad on TPU?
    Without `device=` the tensor is built in host memory. Combined with an XLA tensor it
    either fails ("Input tensor is not an XLA tensor", RuntimeError) or, where PyTorch
    accepts it, becomes an input the host copies to the TPU every step. Created on the
    device, it is a constant of the XLA graph: no copy, no error.

    ## Example
    ```python
    import lightning as L
    import torch


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            x, lengths = batch
            mask = torch.arange(x.size(1))[None, :] < lengths[:, None]
            return (self(x) * mask).sum()
    ```

    ## Use instead
    ```python
    import lightning as L
    import torch


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            x, lengths = batch
            mask = torch.arange(x.size(1), device=lengths.device)[None, :] < lengths[:, None]
            return (self(x) * mask).sum()
    ```

    ## Fix safety
    The fix adds `device=<the step tensor>.device` and is unsafe: it is exact when that
    tensor is on the accelerator (which Lightning makes sure of for the batch), and moves
    the computation there, which changes where (and how fast) it runs.

    ## References
    - [torch_xla: migration to XLA on TPUs ("create tensors on the XLA device")](https://github.com/pytorch/xla/blob/master/docs/source/learn/migration-to-xla-on-tpus.md)
    - [Lightning docs: hardware-agnostic training ("`device=self.device`")](https://lightning.ai/docs/pytorch/stable/accelerators/accelerator_prepare.html)
    """

    code = "TPU109"
    name = "tensor-without-device"
    summary = "A tensor made in step code without `device=` combined with the step's tensors"
    hot_only = True
    fix_applicability = Applicability.UNSAFE
    fix_message = "Create it on the device of the tensor it is combined with"
    requires = tuple(f"{name}(" for name in sorted(_HOST_FACTORIES))

    VALID = (
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        x, lengths = batch\n"
            "        pos = torch.arange(x.size(1), device=x.device)\n"
            "        eye = torch.eye(4).to(x.device)\n"
            "        pad = torch.zeros(3).type_as(x)\n"
            "        return self(x + pos + pad) @ eye * torch.tensor(0.5)\n"
        ),
        # Not combined with the step's tensors: shapes, CPU bookkeeping.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        counts = torch.zeros(10)\n"
            "        counts += torch.ones(10)\n"
            "        return self(batch)\n"
        ),
        # Epoch-level hooks are not step code.
        Valid(
            _HEAD + "    def on_validation_epoch_end(self):\n"
            "        self.total = self.total + torch.zeros(3)\n"
        ),
    )
    INVALID = (
        # Fed to a sub-module whose weights are on the device.
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass LM(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.pos = nn.Embedding(512, 64)\n\n"
            "    def forward(self, tokens):\n"
            "        return self.pos(torch.arange(tokens.size(1)))\n",
            line=11,
            message="fed to the sub-module `self.pos`",
            expected_fix="import torch\nfrom torch import nn\n\n\nclass LM(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.pos = nn.Embedding(512, 64)\n\n"
            "    def forward(self, tokens):\n"
            "        return self.pos(torch.arange(tokens.size(1), device=tokens.device))\n",
        ),
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        x, lengths = batch\n"
            "        mask = torch.arange(x.size(1))[None, :] < lengths[:, None]\n"
            "        return (self(x) * mask).sum()\n",
            line=8,
            message="combined with the step tensor `lengths[:, None]`",
            expected_fix=_HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        x, lengths = batch\n"
            "        mask = torch.arange(x.size(1), device=lengths.device)[None, :] < "
            "lengths[:, None]\n"
            "        return (self(x) * mask).sum()\n",
        ),
        # Bound to a name first, then concatenated.
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Head(nn.Module):\n"
            "    def forward(self, x):\n"
            "        pad = torch.zeros(x.size(0), 1)\n"
            "        return torch.cat([x, pad], dim=1)\n",
            line=7,
            expected_fix="import torch\nfrom torch import nn\n\n\nclass Head(nn.Module):\n"
            "    def forward(self, x):\n"
            "        pad = torch.zeros(x.size(0), 1, device=x.device)\n"
            "        return torch.cat([x, pad], dim=1)\n",
        ),
        Invalid(
            _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        logits = self(batch)\n"
            "        weights = torch.tensor([1.0, 2.0, 0.5])\n"
            "        return (logits * weights).sum()\n",
            line=8,
            expected_fix=_HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        logits = self(batch)\n"
            "        weights = torch.tensor([1.0, 2.0, 0.5], device=logits.device)\n"
            "        return (logits * weights).sum()\n",
        ),
    )

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self._combined([node.left, node.right])

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self._combined([node.left, *(t.comparator for t in node.comparisons)])

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if self._module_call(node):
            return
        name = torch_name(ctx, node)
        if name is None or name.rsplit(".", 1)[-1] not in _COMBINING:
            return
        operands: list[cst.BaseExpression] = []
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value not in ("other", "input"):
                continue
            value = arg.value
            if isinstance(value, (cst.List, cst.Tuple)):
                operands.extend(e.value for e in value.elements)
            else:
                operands.append(value)
        self._combined(operands)

    def _combined(self, operands: list[cst.BaseExpression]) -> None:
        ctx = self.ctx
        if not ctx.in_hot_code or len(operands) < 2:
            return
        factories = [(op, self._host_factory(op, 0)) for op in operands]
        device = [op for op, found in factories if found is None and self._on_device(op)]
        if not device:
            return
        seen: set[int] = getattr(self, "_seen", set())
        self._seen = seen
        for _op, factory in factories:
            if factory is None or id(factory) in seen:
                continue
            seen.add(id(factory))
            if quiet(ctx, factory):
                continue
            partner = device[0]
            reference = _device_reference(ctx, partner)
            fix = None
            if reference is not None:
                fix = add_keywords(factory, [("device", f"{reference}.device")])
            self.report(
                factory,
                f"`{source_of(ctx, factory)}` in {ctx.hot_reason} is created in host memory (no "
                f"`device=`) and combined with the step tensor `{source_of(ctx, partner, 30)}`: "
                'on XLA that is an input copied to the TPU every step, or the error "Input '
                'tensor is not an XLA tensor"; create it on the device'
                + (f" (`device={reference}.device`)" if reference else " (`device=...`)"),
                replacement=fix,
            )

    def _module_call(self, node: cst.Call) -> bool:
        """`self.embed(torch.arange(T))`: a host tensor fed to a sub-module, whose weights
        are on the device. Reported like a combination; True when the call was one."""
        ctx = self.ctx
        func = node.func
        if not (
            ctx.in_hot_code
            and isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
            and ctx.value_kind(func) is ValueKind.MODULE
        ):
            return False
        seen: set[int] = getattr(self, "_seen", set())
        self._seen = seen
        for arg in node.args:
            factory = self._host_factory(arg.value, 0)
            if factory is None or id(factory) in seen or quiet(ctx, factory):
                continue
            seen.add(id(factory))
            reference = _first_tensor_param(ctx)
            if reference is None:
                klass = ctx.lightning_class
                if klass is not None and klass.kind & ClassKind.LIGHTNING_MODULE:
                    reference = "self"
            self.report(
                factory,
                f"`{source_of(ctx, factory)}` in {ctx.hot_reason} is created in host memory (no "
                f"`device=`) and fed to the sub-module `{source_of(ctx, func)}`, whose weights "
                'are on the TPU: "Input tensor is not an XLA tensor", or an input copied to '
                "the TPU every step; create it on the device"
                + (f" (`device={reference}.device`)" if reference else " (`device=...`)"),
                replacement=add_keywords(factory, [("device", f"{reference}.device")])
                if reference
                else None,
            )
        return True

    def _host_factory(self, node: cst.BaseExpression, depth: int) -> cst.Call | None:
        """The `torch.<factory>(...)` call without `device=` that `node` is (through casts,
        reshapes, indexing and local names), or None."""
        if depth > 6:
            return None
        d = depth + 1
        if isinstance(node, cst.Subscript):
            return self._host_factory(node.value, d)
        if isinstance(node, cst.Call):
            method = method_name(node)
            if method in _KEEPS_DEVICE:
                return self._host_factory(receiver(node), d)
            name = torch_name(self.ctx, node)
            if name is None or name.rsplit(".", 1)[-1] not in _HOST_FACTORIES:
                return None
            if keyword(node, "device") is not None or any(a.star for a in node.args):
                return None
            if name.rsplit(".", 1)[-1] in ("tensor", "as_tensor"):
                data = node.args[0].value if node.args else None
                if not isinstance(data, (cst.List, cst.Tuple, cst.ListComp)):
                    return None  # a 0-dim scalar, or data whose shape is not visible
            return node
        if isinstance(node, cst.Name):
            binding = self.bindings.lookup(node.value)
            if binding is None or binding.value is None or binding.unpack_index is not None:
                return None
            return self._host_factory(binding.value, d)
        return None

    def _on_device(self, node: cst.BaseExpression) -> bool:
        return self.ctx.value_kind(node) is ValueKind.DEVICE


def _first_tensor_param(ctx: FileContext) -> str | None:
    """The first parameter of the current hot function known to be a device tensor."""
    info = ctx.function
    if info is None:
        return None
    params = info.node.params
    for param in [*params.posonly_params, *params.params]:
        name = param.name.value
        if name not in ("self", "cls") and ctx.value_kind(param.name) is ValueKind.DEVICE:
            return name
    return None


def _device_reference(ctx: FileContext, node: cst.BaseExpression) -> str | None:
    """A short expression whose `.device` is the step tensor's: the tensor itself when it is
    a name or attribute (`lengths`), its base for an index (`lengths[:, None]`), else
    `self` in a LightningModule."""
    while isinstance(node, cst.Subscript):
        node = node.value
    if isinstance(node, (cst.Name, cst.Attribute)) and ctx.module.code_for_node(node) != "self":
        text = ctx.module.code_for_node(node)
        if len(text) <= 40:
            return text
    klass = ctx.lightning_class
    if klass is not None and klass.kind & ClassKind.LIGHTNING_MODULE:
        return "self"
    return None

"""TPU103 host-transfer-in-hot-path."""

from __future__ import annotations

import re

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.values import ValueKind
from tpulint.datatypes.diagnostics import Applicability
from tpulint.rule_api.cst_helpers import strip_call_suffix
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..rewrite.sync import enclosing_print, print_fix
from ..shared.matchers import is_method_call, source_of, walk
from ..shared.tensors import TrackingRule, computed_tensor, is_torch_tensor, keyword
from .helpers import _HEAD, _LOSS, logged_value, quiet

_PREDICT_HOOKS = ("predict_step", "on_predict_batch_end", "on_predict_batch_start")
_CONVERSIONS = ("float", "int", "bool")
_WRITER_NAME = re.compile(r"(write|save|dump|export|store)", re.IGNORECASE)


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
        # The error path: printed just before the step raises, not every step.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        loss = self.loss_fn(self(batch))\n"
            "        if self.check_finite:\n"
            "            bad = loss * 0\n"
            "            print(f'non-finite loss {loss} ({bad})')\n"
            "            raise FloatingPointError('non-finite loss')\n"
            "        return loss\n"
        ),
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

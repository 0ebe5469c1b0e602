"""TPU503 save-xla-tensor-directly."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.project import FileView
from tpulint.datatypes.diagnostics import Applicability, Severity
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.configuration import imports_torch_xla, is_framework_file
from ..shared.matchers import source_of
from .helpers import _XM

_DEVICE_CALLS = frozenset(
    {"torch_xla.core.xla_model.xla_device", "torch_xla.device", "torch_xla.torch_xla.device"}
)


class SaveXlaTensorDirectly(Rule):
    """
    ## What it does
    Finds `torch.save(...)` of tensors or modules that the same function (or module) put on
    an XLA device, in torch_xla code outside Lightning classes: `model.to(device)` or
    `x = t.to(device)` with `device = xm.xla_device()` / `torch_xla.device()` /
    `torch.device("xla")`, then `torch.save(model.state_dict(), path)` or
    `torch.save(x, path)`. Lightning's checkpointing (`trainer.save_checkpoint`, the
    `ModelCheckpoint` callback) moves tensors to the CPU itself and is not concerned.

    ## Why is this bad on TPU?
    `torch.save` keeps the device of every tensor: a checkpoint of XLA tensors can only be
    loaded where an XLA device exists (loading it on a CPU-only machine, or before torch_xla
    is initialised, fails), and with several TPU processes every process writes the same
    file. torch_xla provides `xm.save(data, path)`, which moves the data to the CPU first
    and writes from the master process only.

    ## Example
    ```python
    import torch
    import torch_xla.core.xla_model as xm


    def train(model, path):
        device = xm.xla_device()
        model.to(device)
        torch.save(model.state_dict(), path)
    ```

    ## Use instead
    ```python
    import torch
    import torch_xla.core.xla_model as xm


    def train(model, path):
        device = xm.xla_device()
        model.to(device)
        xm.save(model.state_dict(), path)
    ```

    ## Fix safety
    Display-only: `xm.save` also changes who writes (only the master process by default),
    which matters if every process saved to its own path. Without an `xla_model` import the
    finding suggests nothing and the message names both remedies (`xm.save` or moving to the
    CPU with `.cpu()` first).

    ## References
    - [torch_xla docs: saving and loading XLA tensors](https://github.com/pytorch/xla/blob/master/docs/source/learn/pytorch-on-xla-devices.md)
    - [torch_xla troubleshooting: XLA tensor quirks](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    """

    code = "TPU503"
    name = "save-xla-tensor-directly"
    summary = "`torch.save` of tensors or modules placed on an XLA device"
    severity = Severity.WARNING
    fix_applicability = Applicability.DISPLAY_ONLY
    fix_sometimes = True
    fix_message = "Use `xm.save` (moves to the CPU, writes once)"
    requires = ("torch.save", "save(")

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        return "torch_xla" in source  # only files that use torch_xla

    VALID = (
        # Saved from the CPU.
        Valid(
            "import torch\nimport torch_xla.core.xla_model as xm\n\n\ndef f(model, path):\n"
            "    device = xm.xla_device()\n    model.to(device)\n"
            "    torch.save(model.cpu().state_dict(), path)\n"
        ),
        # Nothing was put on the XLA device here.
        Valid(
            "import torch\nimport torch_xla\n\n\ndef f(model, path):\n"
            "    torch.save(model.state_dict(), path)\n"
        ),
        # Lightning code: checkpointing handles XLA tensors.
        Valid(
            "import lightning as L\nimport torch\nimport torch_xla\n\n\n"
            "class M(L.LightningModule):\n"
            "    def on_train_end(self):\n        x = torch.ones(2).to(torch_xla.device())\n"
            "        torch.save(x, 'x.pt')\n"
        ),
        # Not torch_xla code.
        Valid(
            "import torch\n\n\ndef f(model, path):\n    model.to('cuda')\n"
            "    torch.save(model.state_dict(), path)\n"
        ),
    )
    INVALID = (
        Invalid(
            "import torch\nimport torch_xla.core.xla_model as xm\n\n\n"
            "def train(model, path):\n"
            "    device = xm.xla_device()\n"
            "    model.to(device)\n"
            "    torch.save(model.state_dict(), path)\n",
            line=8,
            message="xm.save",
            expected_suggestion="import torch\nimport torch_xla.core.xla_model as xm\n\n\n"
            "def train(model, path):\n"
            "    device = xm.xla_device()\n"
            "    model.to(device)\n"
            "    xm.save(model.state_dict(), path)\n",
        ),
        Invalid(
            "import torch\nimport torch_xla\n\n\n"
            "def dump(batch, path):\n"
            "    x = batch.to(torch_xla.device())\n"
            "    torch.save({'x': x, 'step': 3}, path)\n",
            message=".cpu()",
        ),
    )

    def visit_Module(self, node: cst.Module) -> bool | None:
        self._enabled = not is_framework_file(self.ctx) and imports_torch_xla_text(self.ctx)
        self._scopes: list[tuple[set[str], set[str]]] = [(set(), set())]  # (devices, xla values)
        return None

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append((set(), set()))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.pop()

    def _is_xla_device(self, node: cst.BaseExpression) -> bool:
        devices, _ = self._scopes[-1]
        if isinstance(node, cst.Name) and node.value in devices:
            return True
        if isinstance(node, cst.Call):
            qualified = self.ctx.qualify(node.func)
            if qualified in _DEVICE_CALLS:
                return True
            if qualified == "torch.device" and node.args:
                from tpulint.rule_api.cst_helpers import string_value

                value = string_value(node.args[0].value)
                return value is not None and value.split(":", 1)[0] == "xla"
        return False

    def _to_xla(self, node: cst.BaseExpression) -> cst.BaseExpression | None:
        """For `x.to(<xla device>)`: `x`; else None."""
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "to"
            and node.args
            and self._is_xla_device(node.args[0].value)
        ):
            return node.func.value
        return None

    def _is_xla_value(self, node: cst.BaseExpression) -> bool:
        _, values = self._scopes[-1]
        if isinstance(node, cst.Name):
            return node.value in values
        if self._to_xla(node) is not None:
            return True
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            method = node.func.attr.value
            if method in ("cpu", "numpy", "tolist", "item"):
                return False
            if method in ("state_dict", "detach", "clone", "float", "half", "bfloat16"):
                return self._is_xla_value(node.func.value)
        if isinstance(node, cst.Dict):
            return any(
                isinstance(e, cst.DictElement) and self._is_xla_value(e.value)
                for e in node.elements
            )
        if isinstance(node, (cst.List, cst.Tuple)):
            return any(self._is_xla_value(e.value) for e in node.elements)
        return False

    def leave_Assign(self, node: cst.Assign) -> None:
        if not self._enabled:
            return
        devices, values = self._scopes[-1]
        for target in node.targets:
            if not isinstance(target.target, cst.Name):
                continue
            name = target.target.value
            if self._is_xla_device(node.value):
                devices.add(name)
            elif self._is_xla_value(node.value):
                values.add(name)
            else:
                devices.discard(name)
                values.discard(name)

    def visit_Expr(self, node: cst.Expr) -> None:
        if not self._enabled:
            return
        moved = self._to_xla(node.value)
        if isinstance(moved, cst.Name):  # `model.to(device)` moves a module in place
            self._scopes[-1][1].add(moved.value)

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if not self._enabled or ctx.qualify(node.func) != "torch.save" or not node.args:
            return
        if ctx.lightning_class is not None:
            return
        data = node.args[0].value
        if not self._is_xla_value(data):
            return
        xm_local = next(
            (local for local, target in ctx.aliases.bindings.items() if target == _XM), None
        )
        head = (
            f"`{source_of(ctx, node)}` writes XLA tensors: the file can only be loaded where an "
            "XLA device exists, and every TPU process writes it"
        )
        if xm_local is not None:
            self.report(
                node,
                f"{head}; use `{xm_local}.save(...)` (moves to the CPU, writes from the master "
                "only)",
                replacement=node.with_changes(
                    func=cst.Attribute(cst.Name(xm_local), cst.Name("save"))
                ),
            )
        else:
            self.report(
                node,
                f"{head}; use `xm.save(...)` from `torch_xla.core.xla_model` or move the data to "
                "the CPU with `.cpu()` first",
            )


def imports_torch_xla_text(ctx) -> bool:
    """The file imports torch_xla (bindings are only complete at the end of the walk, so
    look at the text for the cheap answer and confirm on the module's imports)."""
    if "torch_xla" not in ctx.source:
        return False
    from ..shared.configuration import import_bindings

    return any(
        b.target.split(".", 1)[0] == "torch_xla" for b in import_bindings(ctx)
    ) or imports_torch_xla(ctx)

"""TPU506 optimizer-before-device-move: an optimizer over parameters taken before the module
moves to the XLA device."""

from __future__ import annotations

from typing import TypeVar

import libcst as cst

from tpulint.analysis.project import ClassKind, FileView
from tpulint.analysis.walker import iter_in_order
from tpulint.datatypes.diagnostics import Severity
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.configuration import is_framework_file
from ..shared.matchers import self_attribute_name, source_of

# Hooks Lightning calls before the strategy moves the module and sets up its optimizers
# (lightning/pytorch/trainer/trainer.py `_run`: setup, configure_model, then
# strategy.setup -> model_to_device, setup_optimizers).
_BEFORE_MOVE = ("__init__", "setup", "prepare_data", "configure_model", "configure_sharded_model")
_PARAMETERS = ("parameters", "named_parameters")


def _is_optimizer(ctx, call: cst.Call) -> bool:
    qualified = ctx.qualify(call.func) or ""
    parts = qualified.split(".")
    return (
        len(parts) == 3
        and parts[:2] == ["torch", "optim"]
        and parts[2][:1].isupper()
        and parts[2] not in ("Optimizer",)
    )


_NodeT = TypeVar("_NodeT", bound=cst.CSTNode)


def _all_of(root: cst.CSTNode, node_type: type[_NodeT]) -> list[_NodeT]:
    """`root` and the nodes under it of `node_type`, in source order (what
    `libcst.matchers.findall` gives, without importing libcst.matchers: its hundreds of
    generated classes cost 0.17 s of CPU at start-up, every run, for this rule alone)."""
    return [n for n in iter_in_order(root) if isinstance(n, node_type)]


def _takes_parameters(node: cst.CSTNode) -> bool:
    """Whether `node` calls `.parameters()` or `.named_parameters()` on something."""
    return any(
        isinstance(call.func, cst.Attribute) and call.func.attr.value in _PARAMETERS
        for call in _all_of(node, cst.Call)
    )


class OptimizerBeforeDeviceMove(Rule):
    """
    ## What it does
    Finds, in a LightningModule, an optimizer built before Lightning moves the module to the
    device: in `__init__` or `setup()` (kept as `self.<name>` and used elsewhere), or built in
    `configure_optimizers()` over a parameter list `__init__` or `setup()` stored
    (`self.params = list(self.parameters())`).

    ## Why is this bad on TPU?
    Moving a module to an XLA device replaces its parameter tensors: CPU and XLA tensors
    cannot share storage, so `Module._apply` sets new `Parameter` objects instead of swapping
    their data in place (on GPUs it swaps the data, and the old objects stay valid). An
    optimizer built before the move keeps the old CPU tensors: it never updates the weights
    the model trains with, and Lightning's gradient reduction meets parameters without
    gradients. On TPU cores such a module trains nothing (`tpulint verify` stops it before
    its first step, at the optimizer's line).

    ## Example
    ```python
    import lightning as L
    import torch


    class LM(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(32, 4)
            self.optimizer = torch.optim.AdamW(self.parameters(), lr=1e-3)

        def configure_optimizers(self):
            return self.optimizer
    ```

    ## Use instead
    ```python
    import lightning as L
    import torch


    class LM(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(32, 4)

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=1e-3)
    ```

    ## Fix safety
    No fix: the optimizer's arguments may depend on what `__init__` computed.

    ## References
    - [Lightning docs: `configure_optimizers`](https://lightning.ai/docs/pytorch/stable/common/lightning_module.html#configure-optimizers)
    - [PyTorch source: `Module._apply` replaces parameters that are not shallow-copy compatible](https://github.com/pytorch/pytorch/blob/main/torch/nn/modules/module.py)
    - [torch_xla: XLA tensors and moving modules](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    """

    code = "TPU506"
    name = "optimizer-before-device-move"
    summary = "An optimizer over a LightningModule's parameters taken before the move to XLA"
    severity = Severity.ERROR
    requires = ("torch.optim", "optim.")

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        # Reported only in the methods of a LightningModule (visit_FunctionDef).
        return bool(view.class_kinds & ClassKind.LIGHTNING_MODULE)

    VALID = (
        Valid(
            "import lightning as L\nimport torch\n\n\nclass LM(L.LightningModule):\n"
            "    def configure_optimizers(self):\n"
            "        return torch.optim.SGD(self.parameters(), lr=0.1)\n"
        ),
        # Built in __init__ but never used: configure_optimizers builds its own.
        Valid(
            "import lightning as L\nimport torch\n\n\nclass LM(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.net = torch.nn.Linear(2, 2)\n"
            "        self.unused = torch.optim.SGD(self.parameters(), lr=0.1)\n\n"
            "    def configure_optimizers(self):\n"
            "        return torch.optim.SGD(self.parameters(), lr=0.1)\n"
        ),
        # Not a LightningModule: a plain training loop moves the model first.
        Valid(
            "import torch\n\n\nclass Trainer:\n    def __init__(self, model):\n"
            "        self.model = model.to('xla')\n"
            "        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)\n\n"
            "    def step(self):\n        self.opt.step()\n"
        ),
    )
    INVALID = (
        Invalid(
            "import lightning as L\nimport torch\n\n\nclass LM(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.net = torch.nn.Linear(2, 2)\n"
            "        self.optimizer = torch.optim.AdamW(self.parameters(), lr=1e-3)\n\n"
            "    def configure_optimizers(self):\n"
            "        return self.optimizer\n",
            line=9,
            message="never updates the weights the model trains with",
        ),
        Invalid(
            "import lightning as L\nimport torch\n\n\nclass LM(L.LightningModule):\n"
            "    def setup(self, stage):\n"
            "        self.params = [p for p in self.parameters() if p.requires_grad]\n\n"
            "    def configure_optimizers(self):\n"
            "        return torch.optim.SGD(self.params, lr=0.1)\n",
            line=10,
            message="`self.params`, which `setup` took",
        ),
    )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        ctx = self.ctx
        info = ctx.function
        klass = info.cls if info is not None else None
        if klass is None or not klass.kind & ClassKind.LIGHTNING_MODULE or is_framework_file(ctx):
            return
        if node.name.value in _BEFORE_MOVE:
            self._built_before(node, klass)
        elif node.name.value == "configure_optimizers":
            self._over_stored_parameters(node, klass)

    def _built_before(self, node: cst.FunctionDef, klass) -> None:
        for assign in _all_of(node.body, cst.Assign):
            value = assign.value
            if not (isinstance(value, cst.Call) and _is_optimizer(self.ctx, value)):
                continue
            names = [self_attribute_name(t.target) for t in assign.targets]
            used = [n for n in names if n and self._used_elsewhere(klass, n, node)]
            if not used:
                continue
            self.report(
                value,
                f"`{source_of(self.ctx, value)}` in `{klass.name}.{node.name.value}` builds the"
                " optimizer before Lightning moves the module to the XLA device: the move"
                " replaces every parameter (CPU and XLA tensors cannot share storage), so it"
                " keeps the CPU ones and never updates the weights the model trains with;"
                " build it in `configure_optimizers()` over `self.parameters()`",
            )

    def _over_stored_parameters(self, node: cst.FunctionDef, klass) -> None:
        stored = self._stored_parameters(klass)
        if not stored:
            return
        for call in _all_of(node.body, cst.Call):
            if not _is_optimizer(self.ctx, call) or not call.args:
                continue
            taken = {
                name
                for attribute in _all_of(call.args[0].value, cst.Attribute)
                if (name := self_attribute_name(attribute)) in stored
            }
            if not taken:
                continue
            name = sorted(taken)[0]
            self.report(
                call,
                f"`{source_of(self.ctx, call)}` builds the optimizer over `self.{name}`, which"
                f" `{stored[name]}` took before Lightning moved the module to the XLA device:"
                " the move replaces every parameter, so the optimizer keeps the CPU ones and"
                " never updates the weights the model trains with; take them here"
                " (`self.parameters()`)",
            )

    def _stored_parameters(self, klass) -> dict[str, str]:
        """`self.<name>` attributes set from `.parameters()` in hooks that run before the move,
        with the hook's name."""
        stored: dict[str, str] = {}
        for hook in _BEFORE_MOVE:
            method = klass.methods.get(hook)
            if method is None:
                continue
            for assign in _all_of(method.body, cst.Assign):
                if not _takes_parameters(assign.value):
                    continue
                for target in assign.targets:
                    name = self_attribute_name(target.target)
                    if name:
                        stored.setdefault(name, hook)
        return stored

    @staticmethod
    def _used_elsewhere(klass, name: str, builder: cst.FunctionDef) -> bool:
        for method in klass.methods.values():
            if method is builder:
                continue
            for attribute in _all_of(method.body, cst.Attribute):
                if self_attribute_name(attribute) == name:
                    return True
        return False

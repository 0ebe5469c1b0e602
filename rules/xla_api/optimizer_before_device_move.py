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


# Calls that pass a parameter collection through (the stored value is still the parameters):
# `list(self.parameters())`, `filter(lambda p: p.requires_grad, self.parameters())`,
# `itertools.chain(a.parameters(), b.parameters())`.
_PASS_THROUGH = ("list", "tuple", "set", "filter", "chain", "sorted")


def _takes_parameters(node: cst.CSTNode) -> bool:
    """Whether `node` evaluates to a collection of parameters taken now: `.parameters()` or
    `.named_parameters()`, passed through `list`/`filter`/`chain`, in a list, tuple or
    parameter-group dict, concatenated, or a comprehension over them that keeps the
    parameter. A module built from arguments that read parameters (`Wrapper(net,
    names={n for n, _ in net.named_parameters()})`) is not one: a sub-module moves with its
    parent, and its `.parameters()` read in `configure_optimizers` are the moved ones."""
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _PARAMETERS:
            return True
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
        if name in _PASS_THROUGH:
            return any(_takes_parameters(arg.value) for arg in node.args)
        return False
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        return any(_takes_parameters(element.value) for element in node.elements)
    if isinstance(node, cst.Dict):
        return any(
            isinstance(element, cst.DictElement) and _takes_parameters(element.value)
            for element in node.elements
        )
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return _takes_parameters(node.left) or _takes_parameters(node.right)
    if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        return _comprehension_keeps_parameter(node)
    return False


def _comprehension_keeps_parameter(node: cst.ListComp | cst.SetComp | cst.GeneratorExp) -> bool:
    """Whether a comprehension over `.parameters()` (or `.named_parameters()`) yields the
    parameters: its element reads the loop's parameter name (`p` of `for p in` or of
    `for n, p in`), not only the names (`{n for n, _ in m.named_parameters()}`)."""
    used = {n.value for n in _all_of(node.elt, cst.Name)}
    clause: cst.CompFor | None = node.for_in
    while clause is not None:
        if _takes_parameters(clause.iter):
            target = clause.target
            if isinstance(target, cst.Name):
                kept = {target.value}
            elif isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
                second = target.elements[1].value
                kept = {second.value} if isinstance(second, cst.Name) else set()
            else:
                kept = {n.value for n in _all_of(target, cst.Name)}
            if kept & used:
                return True
        clause = clause.inner_for_in
    return False


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

    ## Status
    Preview (issue 21). Every finding read on code frozen after the rule was added was
    wrong (sci19: 1, sci21: 2): an optimizer `configure_optimizers` builds over a
    sub-module whose constructor only read parameter names, taken for parameters stored
    before the move. That shape is fixed (only a stored parameter collection counts:
    `.parameters()`, lists and groups of them, comprehensions keeping the parameter); with
    no right finding on fresh code yet, it reports in preview (`--preview`) until a fresh
    read shows it at 95%.
    """

    code = "TPU506"
    preview = True  # 0 of 3 right on code read after it was added (see Status)
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
        # A sub-module built in __init__ from arguments that read parameters (their names):
        # it moves with the module, and configure_optimizers reads its moved parameters
        # (Lightning's strategy.setup calls model_to_device before setup_optimizers).
        Valid(
            "import lightning as L\nimport torch\n\n\nclass LM(L.LightningModule):\n"
            "    def __init__(self, backbone, Editor):\n"
            "        super().__init__()\n"
            "        self.backbone = backbone\n"
            "        self.editor = Editor(\n"
            "            backbone,\n"
            "            names={n for n, _ in backbone.named_parameters() if 'norm' not in n},\n"
            "        )\n"
            "        self.scale = torch.nn.Parameter(torch.ones(()))\n\n"
            "    def configure_optimizers(self):\n"
            "        return torch.optim.RMSprop(\n"
            "            [{'params': self.editor.parameters()}, {'params': [self.scale]}]\n"
            "        )\n"
        ),
        # Stored parameter names, not parameters.
        Valid(
            "import lightning as L\nimport torch\n\n\nclass LM(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.net = torch.nn.Linear(2, 2)\n"
            "        self.frozen = [n for n, p in self.named_parameters() if 'bias' in n]\n\n"
            "    def configure_optimizers(self):\n"
            "        keep = [p for n, p in self.named_parameters() if n not in self.frozen]\n"
            "        return torch.optim.SGD(keep, lr=0.1)\n"
        ),
    )
    INVALID = (
        Invalid(
            "import lightning as L\nimport torch\n\n\nclass LM(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.body = torch.nn.Linear(2, 2)\n"
            "        self.top = torch.nn.Linear(2, 1)\n"
            "        self.groups = [\n"
            "            {'params': list(self.body.parameters()) + list(self.top.parameters())},\n"
            "        ]\n\n"
            "    def configure_optimizers(self):\n"
            "        return torch.optim.Adam(self.groups, lr=0.1)\n",
            line=15,
            message="`self.groups`, which `__init__` took",
        ),
        Invalid(
            "import lightning as L\nimport torch\n\n\nclass LM(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.net = torch.nn.Linear(2, 2)\n"
            "        self.decay = [p for n, p in self.named_parameters() if 'bias' not in n]\n\n"
            "    def configure_optimizers(self):\n"
            "        return torch.optim.SGD(self.decay, lr=0.1)\n",
            line=12,
            message="`self.decay`, which `__init__` took",
        ),
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

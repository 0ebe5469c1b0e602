"""TPU005 xla-device-in-lightning."""

from __future__ import annotations

import libcst as cst

from tpulint.datatypes.diagnostics import Applicability, Severity
from tpulint.rule_api.cst_helpers import strip_call_suffix
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.configuration import Rename, plan_renames
from ..shared.matchers import source_of
from .helpers import _root_local, device_expression

_XLA_DEVICE_FUNCS = frozenset(
    {"torch_xla.core.xla_model.xla_device", "torch_xla.device", "torch_xla.torch_xla.device"}
)


class XlaDeviceInLightning(Rule):
    """
    ## What it does
    Finds `xm.xla_device()` and `torch_xla.device()` inside LightningModules, DataModules and
    Callbacks.

    ## Why is this bad on TPU?
    Lightning owns device placement on TPUs: it spawns one process per TPU device, moves the
    module to that process's device and wraps the loaders in `MpDeviceLoader`. Asking
    torch_xla for a device yourself fights that: called before the processes are spawned
    (in `__init__`, at import time, in `prepare_data`), it initialises the XLA runtime in the
    launcher process and the spawn then fails ("Cannot replicate if number of devices (1) is
    different from 8"); inside the workers it returns the default device rather than the
    module's. Lightning's TPU FAQ says: "Don't use `xm.xla_device()` while working on
    Lightning + TPUs!"

    ## Example
    ```python
    import lightning as L
    import torch
    import torch_xla.core.xla_model as xm


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            noise = torch.randn(batch.shape, device=xm.xla_device())
            return self(batch + noise).sum()
    ```

    ## Use instead
    ```python
    import lightning as L
    import torch


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            noise = torch.randn(batch.shape, device=self.device)
            return self(batch + noise).sum()
    ```

    ## Fix safety
    In LightningModule methods that run after the move (step methods, `forward`, `on_*`
    hooks and the helpers they call) the fix writes `self.device` (`pl_module.device` in
    Callback hooks); it is unsafe because the process's default XLA device and the module's
    device can differ when a specific core was chosen (`devices=[5]`). In `__init__`,
    `setup` and other hooks that run before the move there is no device to ask for: create
    tensors on the CPU (`register_buffer` for state) and let Lightning move them; there the
    finding has no fix, or a display-only one that drops `.to(xm.xla_device())`.

    ## References
    - [Lightning docs: TPU FAQ ("Don't use xm.xla_device()")](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_faq.html)
    - [Lightning docs: hardware-agnostic code (`self.device`, `register_buffer`)](https://lightning.ai/docs/pytorch/stable/accelerators/accelerator_prepare.html)
    """

    code = "TPU005"
    name = "xla-device-in-lightning"
    summary = "`xm.xla_device()` / `torch_xla.device()` inside Lightning classes"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = "Use the device Lightning chose (`self.device`)"
    requires = ("xla_device", "torch_xla")

    VALID = (
        # Plain torch_xla training loops own their devices.
        Valid(
            "import torch_xla.core.xla_model as xm\n\ndef main():\n    device = xm.xla_device()\n"
        ),
        Valid(
            "import lightning as L\nimport torch\n\n\nclass Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        return self(batch.to(self.device)).sum()\n"
        ),
        # A plain nn.Module is not Lightning's to place.
        Valid(
            "import torch\nimport torch_xla\n\n\nclass Block(torch.nn.Module):\n"
            "    def forward(self, x):\n        return x.to(torch_xla.device())\n"
        ),
    )
    INVALID = (
        Invalid(
            "import lightning as L\nimport torch\nimport torch_xla.core.xla_model as xm\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        mask = torch.ones(4, device=xm.xla_device())\n"
            "        return self(batch * mask).sum()\n",
            expected_fix="import lightning as L\nimport torch\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        mask = torch.ones(4, device=self.device)\n"
            "        return self(batch * mask).sum()\n",
            line=8,
            applicability=Applicability.UNSAFE,
            message="Lightning owns device placement",
        ),
        # A callback hook uses the module it is given.
        Invalid(
            "import torch\nimport torch_xla\nfrom lightning.pytorch.callbacks import Callback\n\n\n"
            "class Probe(Callback):\n"
            "    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):\n"
            "        self.seen = torch.zeros(1, device=torch_xla.device())\n",
            expected_fix="import torch\nimport torch_xla\n"
            "from lightning.pytorch.callbacks import Callback\n\n\n"
            "class Probe(Callback):\n"
            "    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):\n"
            "        self.seen = torch.zeros(1, device=pl_module.device)\n",
        ),
        # In __init__ there is no device yet: drop the move (display-only).
        Invalid(
            "import lightning as L\nimport torch\nimport torch_xla.core.xla_model as xm\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.net = torch.nn.Linear(4, 4).to(xm.xla_device())\n",
            message="in `__init__`",
            applicability=Applicability.DISPLAY_ONLY,
            expected_suggestion="import lightning as L\nimport torch\n"
            "import torch_xla.core.xla_model as xm\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.net = torch.nn.Linear(4, 4)\n",
        ),
        Invalid(
            "import lightning as L\nimport torch_xla.core.xla_model as xm\n\n\n"
            "class Data(L.LightningDataModule):\n"
            "    def setup(self, stage):\n"
            "        self.device = xm.xla_device()\n",
            message="before Lightning moves",
        ),
    )

    def visit_Module(self, node: cst.Module) -> bool | None:
        self._renames: list[Rename] = []
        return None

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if ctx.lightning_class is None or ctx.qualify(node.func) not in _XLA_DEVICE_FUNCS:
            return
        call_code = source_of(ctx, node)
        expression, why = device_expression(ctx)
        head = (
            f"`{call_code}` in a Lightning class: Lightning owns device placement on TPUs (one "
            "process per device, module already moved)"
        )
        if expression is not None and not node.args:
            root = _root_local(node.func)
            self._renames.append(
                Rename(
                    report_node=node,
                    old=node,
                    new=cst.parse_expression(expression),
                    local=root,
                    needs=None,
                    message=f"{head}; use `{expression}`",
                    applicability=Applicability.UNSAFE,
                    fix_message=f"Use `{expression}`",
                    drop_old=root != "torch_xla",
                )
            )
            return
        move = _to_call_around(ctx, node)
        if move is not None:
            self.report(
                node,
                f"{head}; {why} there is no device to ask for: drop the `.to(...)` and let "
                "Lightning move the module",
                replacement=strip_call_suffix(move),
                replaces=move,
                applicability=Applicability.DISPLAY_ONLY,
            )
            return
        self.report(
            node,
            f"{head}; {why}: create tensors on the CPU (`register_buffer` for state) and let "
            "Lightning move them",
        )

    def leave_Module(self, node: cst.Module) -> None:
        if self._renames:
            plan_renames(self.ctx, self, self._renames)


def _to_call_around(ctx, node: cst.Call) -> cst.Call | None:
    """`x.to(<node>)` when `node` is the only argument of a `.to(...)` call."""
    arg = ctx.parent(node)
    call = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
    if (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "to"
        and len(call.args) == 1
    ):
        return call
    return None

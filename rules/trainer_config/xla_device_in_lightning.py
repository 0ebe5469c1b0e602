"""TPU005 xla-device-in-lightning."""

from __future__ import annotations

import libcst as cst

from tpulint.datatypes.diagnostics import Applicability, Severity
from tpulint.rule_api.cst_helpers import strip_call_suffix
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.matchers import builds_lightning_object, enclosing_method, source_of

_XLA_DEVICE_FUNCS = frozenset(
    {"torch_xla.core.xla_model.xla_device", "torch_xla.device", "torch_xla.torch_xla.device"}
)


class XlaDeviceInLightning(Rule):
    """
    ## What it does
    Finds `xm.xla_device()` and `torch_xla.device()` where a LightningModule, DataModule or
    Callback is built (`__init__`, `__new__`, `__post_init__`, the class body): code that runs
    in the launching process, before Lightning spawns its processes.

    ## Why is this bad on TPU?
    With more than one TPU device, Lightning's XLA strategy starts one process per device
    from `trainer.fit` (`xmp.spawn`), and torch_xla refuses to spawn once the launching process
    has initialised the XLA runtime: asking for a device while the module is built does that,
    and the spawn fails ("Cannot replicate if number of devices (1) is different from 8" /
    "Runtime is already initialized"). Inside the spawned processes (the steps, hooks,
    `setup`, `*_dataloader`) the call is harmless: Lightning's own `XLAStrategy.root_device`
    is `xm.xla_device()` (lightning/pytorch/strategies/xla.py:107-112), so it returns the
    device the module is on, and those calls are not reported.

    ## Example
    ```python
    import lightning as L
    import torch
    import torch_xla.core.xla_model as xm


    class Model(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(4, 4).to(xm.xla_device())
    ```

    ## Use instead
    ```python
    import lightning as L
    import torch


    class Model(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(4, 4)  # Lightning moves it to the process's device
    ```

    ## Fix safety
    Where the device only feeds a `.to(...)`, the suggestion drops the move (display-only:
    code between construction and `fit` may expect the tensors on the device). Elsewhere there
    is no fix: create the tensors on the CPU (`register_buffer` for state) and let Lightning
    move them.

    ## References
    - [Lightning docs: TPU FAQ ("Don't use xm.xla_device()")](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_faq.html)
    - [Lightning docs: hardware-agnostic code (`self.device`, `register_buffer`)](https://lightning.ai/docs/pytorch/stable/accelerators/accelerator_prepare.html)
    """

    code = "TPU005"
    name = "xla-device-in-lightning"
    summary = "`xm.xla_device()` / `torch_xla.device()` while a Lightning class is built"
    severity = Severity.ERROR
    fix_applicability = Applicability.DISPLAY_ONLY
    fix_sometimes = True
    fix_message = "Drop the move: Lightning moves the module"
    requires = ("xla_device", "torch_xla")

    VALID = (
        # Plain torch_xla training loops own their devices.
        Valid(
            "import torch_xla.core.xla_model as xm\n\ndef main():\n    device = xm.xla_device()\n"
        ),
        # Inside the spawned processes it is the device Lightning uses (its root_device).
        Valid(
            "import lightning as L\nimport torch\nimport torch_xla.core.xla_model as xm\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        mask = torch.ones(4, device=xm.xla_device())\n"
            "        return self(batch * mask).sum()\n"
        ),
        Valid(
            "import lightning as L\nimport torch_xla.core.xla_model as xm\n"
            "import torch_xla.distributed.parallel_loader as pl\n\n\n"
            "class Data(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return pl.MpDeviceLoader(self.loader(), xm.xla_device())\n"
        ),
        Valid(
            "import torch\nimport torch_xla\nfrom lightning.pytorch.callbacks import Callback\n\n\n"
            "class Probe(Callback):\n"
            "    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):\n"
            "        self.seen = torch.zeros(1, device=torch_xla.device())\n"
        ),
        # A plain nn.Module is not Lightning's to place.
        Valid(
            "import torch\nimport torch_xla\n\n\nclass Block(torch.nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.w = torch.zeros(4, device=torch_xla.device())\n"
        ),
    )
    INVALID = (
        # In __init__ there is no device yet: drop the move (display-only).
        Invalid(
            "import lightning as L\nimport torch\nimport torch_xla.core.xla_model as xm\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.net = torch.nn.Linear(4, 4).to(xm.xla_device())\n",
            message="before Lightning spawns",
            applicability=Applicability.DISPLAY_ONLY,
            expected_suggestion="import lightning as L\nimport torch\n"
            "import torch_xla.core.xla_model as xm\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.net = torch.nn.Linear(4, 4)\n",
        ),
        Invalid(
            "import lightning as L\nimport torch\nimport torch_xla\n\n\n"
            "class Data(L.LightningDataModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.offsets = torch.arange(8, device=torch_xla.device())\n",
            line=9,
            message="register_buffer",
        ),
        Invalid(
            "import lightning as L\nimport torch_xla.core.xla_model as xm\n\n\n"
            "class Model(L.LightningModule):\n"
            "    device_here = xm.xla_device()\n",
            message="class body",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if ctx.lightning_class is None or ctx.qualify(node.func) not in _XLA_DEVICE_FUNCS:
            return
        if not builds_lightning_object(ctx):
            return  # runs in a spawned process: the device Lightning uses
        _, method = enclosing_method(ctx)
        where = "the class body" if method is None else f"`{method.name.value}`"
        head = (
            f"`{source_of(ctx, node)}` in {where} runs in the launching process, before "
            "Lightning spawns one process per TPU device: it initialises the XLA runtime there "
            "and the spawn fails"
        )
        move = _to_call_around(ctx, node)
        if move is not None:
            self.report(
                node,
                f"{head}; drop the `.to(...)` and let Lightning move the module",
                replacement=strip_call_suffix(move),
                replaces=move,
                applicability=Applicability.DISPLAY_ONLY,
            )
            return
        self.report(
            node,
            f"{head}; create tensors on the CPU (`register_buffer` for state) and let "
            "Lightning move them",
        )


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

"""TPU107 rendezvous-in-step."""

from __future__ import annotations

import libcst as cst

from tpulint.datatypes.diagnostics import Applicability
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.matchers import source_of
from .helpers import _statement_of_call, quiet


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
    screen_calls = frozenset({"rendezvous"})

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

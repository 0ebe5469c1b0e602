"""TPU502 removed-post-move-hook."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.project import ClassKind
from tpulint.datatypes.diagnostics import Applicability, Severity
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.configuration import is_framework_file


class RemovedPostMoveHook(Rule):
    """
    ## What it does
    Finds `on_post_move_to_device` methods in LightningModules.

    ## Why is this bad on TPU?
    Lightning 1.5 added the hook so TPU users could re-tie shared weights after the module
    moved to the XLA device (moving broke the tie into two independent copies). Lightning
    1.7 removed it (#13548): Lightning now re-ties weights itself after the move, and never
    calls the method, so whatever it does is dead code; if it did more than tying, that work
    silently stopped happening.

    ## Example
    ```python
    import lightning as L
    import torch


    class LM(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(100, 32)
            self.head = torch.nn.Linear(32, 100)
            self.head.weight = self.embed.weight

        def on_post_move_to_device(self):
            self.head.weight = self.embed.weight
    ```

    ## Use instead
    ```python
    import lightning as L
    import torch


    class LM(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(100, 32)
            self.head = torch.nn.Linear(32, 100)
            self.head.weight = self.embed.weight
    ```

    ## Fix safety
    Display-only: the suggestion deletes the method, which is right when it only re-ties
    weights (tie them in `__init__`, as above); anything else it did has to move to a hook
    that still exists, such as `on_fit_start`.

    ## References
    - [Lightning 1.7 changelog: removed `on_post_move_to_device` (#13548)](https://github.com/Lightning-AI/pytorch-lightning/pull/13548)
    - [Lightning docs: TPU advanced (weight sharing)](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_advanced.html)
    - [torch_xla troubleshooting: XLA tensor quirks (weight tying after the move)](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    """

    code = "TPU502"
    name = "removed-post-move-hook"
    summary = "`on_post_move_to_device` hook, never called since Lightning 1.7"
    severity = Severity.WARNING
    fix_applicability = Applicability.DISPLAY_ONLY
    fix_message = "Delete the hook (tie weights in `__init__`)"
    requires = ("on_post_move_to_device",)

    VALID = (
        Valid(
            "import torch\n\n\nclass Block(torch.nn.Module):\n    def forward(self, x):\n"
            "        return x\n"
        ),
        # Lightning 1.x is targeted: the hook is still called there (until 1.7).
        Valid(
            "import pytorch_lightning as pl\n\n\nclass LM(pl.LightningModule):\n"
            "    def on_post_move_to_device(self):\n        pass\n",
            config={"lightning-version": "1.6"},
        ),
        # Not a Lightning class.
        Valid("class Wrapper:\n    def on_post_move_to_device(self):\n        pass\n"),
    )
    INVALID = (
        Invalid(
            "import pytorch_lightning as pl\n\n\nclass LM(pl.LightningModule):\n"
            "    def on_post_move_to_device(self):\n"
            "        self.head.weight = self.embed.weight\n\n"
            "    def forward(self, x):\n        return x\n",
            line=5,
            message="removed in Lightning 1.7",
            expected_suggestion="import pytorch_lightning as pl\n\n\n"
            "class LM(pl.LightningModule):\n"
            "\n    def forward(self, x):\n        return x\n",
        ),
    )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        ctx = self.ctx
        if node.name.value != "on_post_move_to_device" or is_framework_file(ctx):
            return
        from ..shared.configuration import lightning_at_least

        if not lightning_at_least(ctx, "1.7"):
            return
        info = ctx.function
        klass = info.cls if info is not None else None
        if klass is None or not (klass.is_lightning or _looks_like_lightning_module(klass)):
            return
        message = (
            "`on_post_move_to_device` was removed in Lightning 1.7 and is never called; Lightning "
            "re-ties shared weights after moving to the TPU itself: tie them in `__init__` and "
            "delete this hook"
        )
        body = klass.node.body
        if isinstance(body, cst.IndentedBlock) and len(body.body) > 1:
            self.report(node.name, message, replacement=cst.RemovalSentinel.REMOVE, replaces=node)
        else:
            self.report(node.name, message)


def _looks_like_lightning_module(klass) -> bool:
    """A torch Module subclass with Lightning's own hooks (when the project index resolves
    LightningModule to Lightning's source, only TORCH_MODULE is known)."""
    return bool(klass.kind & ClassKind.TORCH_MODULE) and bool(
        {"training_step", "configure_optimizers", "validation_step"} & set(klass.methods)
    )

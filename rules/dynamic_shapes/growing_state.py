"""TPU207 growing-state."""

from __future__ import annotations

import libcst as cst

from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.matchers import source_of
from ..shared.tensors import is_self_attribute, positional, torch_name
from .helpers import _HEAD, _quiet

_CONCATENATIONS = frozenset({"cat", "concat", "concatenate", "vstack", "hstack", "row_stack"})
_METRIC = (
    "import torch\nfrom torchmetrics import Metric\n\n\n"
    "class AllPreds(Metric):\n"
    "    def __init__(self):\n        super().__init__()\n"
)


class GrowingState(Rule):
    """
    ## What it does
    Finds state that grows by concatenation every step: an attribute reassigned from a
    concatenation that includes itself (`self.preds = torch.cat([self.preds, p])`,
    `torch.vstack`, `torch.hstack`) in code that runs every step, such as a torchmetrics
    `Metric.update` or a training or validation step. A concatenation cut back to a fixed
    size (`torch.cat([self.queue, k])[-size:]`) does not grow and is not reported.

    ## Why is this bad on TPU?
    The attribute has a new shape after every step, so every step traces and compiles a new
    graph for everything that uses it, and the state keeps growing in device memory. On
    GPUs this only costs memory; on a TPU it recompiles every step. torchmetrics' list
    states (`self.add_state("preds", default=[], dist_reduce_fx="cat")`, appended to in
    `update`, concatenated once in `compute`) or a preallocated buffer written with
    `index_copy_` keep the step's shapes fixed.

    ## Example
    ```python
    import torch
    from torchmetrics import Metric


    class AllPreds(Metric):
        def __init__(self):
            super().__init__()
            self.add_state("preds", default=torch.empty(0), dist_reduce_fx="cat")

        def update(self, preds):
            self.preds = torch.cat([self.preds, preds])

        def compute(self):
            return self.preds.mean()
    ```

    ## Use instead
    ```python
    import torch
    from torchmetrics import Metric


    class AllPreds(Metric):
        def __init__(self):
            super().__init__()
            self.add_state("preds", default=[], dist_reduce_fx="cat")

        def update(self, preds):
            self.preds.append(preds)

        def compute(self):
            return torch.cat(self.preds).mean()
    ```

    ## Fix safety
    No automatic fix: the state's declaration and `compute` change with it.

    ## References
    - [torchmetrics docs: implementing a metric (list states)](https://lightning.ai/docs/torchmetrics/stable/pages/implement.html)
    - [torch_xla: recompilation causes (dynamic shapes)](https://github.com/pytorch/xla/blob/master/docs/source/perf/recompilation.md)

    ## Status
    Preview (new in issue 21): from one miss of the sci1 batch (a metric's `update` that
    grows its state with `torch.vstack` every validation step). No fresh batch has been read
    with it yet.
    """

    code = "TPU207"
    name = "growing-state"
    summary = (
        "State grown by concatenating to itself every step (`self.x = torch.cat([self.x, y])`)"
    )
    hot_only = True
    preview = True
    requires = ("cat(", "concat", "stack(")

    VALID = (
        # A queue cut back to its size.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        k = self(batch)\n"
            "        self.queue = torch.cat([self.queue, k.detach()])[-4096:]\n"
            "        return k.sum()\n"
        ),
        # A list state, concatenated once in compute.
        Valid(
            _METRIC + "        self.add_state('preds', default=[], dist_reduce_fx='cat')\n\n"
            "    def update(self, p):\n        self.preds.append(p)\n\n"
            "    def compute(self):\n        return torch.cat(self.preds).mean()\n"
        ),
        # Concatenating other tensors, and growing at the end of an epoch.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        self.features = torch.cat([batch['a'], batch['b']])\n"
            "        return self(self.features).sum()\n\n"
            "    def on_validation_epoch_end(self):\n"
            "        self.history = torch.cat([self.history, self.current])\n"
        ),
    )
    INVALID = (
        Invalid(
            _METRIC + "        self.add_state('preds', default=torch.empty(0), "
            "dist_reduce_fx='cat')\n\n"
            "    def update(self, p):\n"
            "        self.preds = torch.vstack([self.preds, p])\n",
            line=11,
            message="a new shape after every step",
        ),
        Invalid(
            _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        out = self(batch)\n"
            "        self.all_out = torch.cat((self.all_out, out), dim=0)\n"
            "        return out\n",
            line=8,
        ),
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        ctx = self.ctx
        if not ctx.in_hot_code or len(node.targets) != 1:
            return
        target = node.targets[0].target
        if not (isinstance(target, cst.Attribute) and is_self_attribute(target)):
            return
        value = node.value
        if not isinstance(value, cst.Call):
            return  # a sliced result (`cat(...)[-n:]`) keeps a fixed size
        name = torch_name(ctx, value)
        if name is None or name.rsplit(".", 1)[-1] not in _CONCATENATIONS:
            return
        args = positional(value)
        if not args or not isinstance(args[0].value, (cst.List, cst.Tuple)):
            return
        attribute = target.attr.value
        grows = any(
            isinstance(element.value, cst.Attribute)
            and is_self_attribute(element.value)
            and element.value.attr.value == attribute
            for element in args[0].value.elements
        )
        if not grows or _quiet(ctx, node):
            return
        self.report(
            node,
            f"`{source_of(ctx, node, 60)}` in {ctx.hot_reason} grows `self.{attribute}` every "
            "step: it has a new shape after every step, so XLA compiles a new graph each time "
            "(and the state fills device memory); keep a list state (`add_state(..., "
            "default=[])`, append in `update`, concatenate in `compute`) or a preallocated "
            "buffer written with `index_copy_`",
        )

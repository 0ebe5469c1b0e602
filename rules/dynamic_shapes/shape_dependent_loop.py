"""TPU203 shape-dependent-loop."""

from __future__ import annotations

import re

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.values import CPU, DEVICE, ValueKind
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.matchers import source_of
from ..shared.tensors import (
    TrackingRule,
    is_self_attribute,
    is_torch_tensor,
    positional,
    shape_source,
)
from .helpers import _HEAD, _MOD, _quiet

# Loop bounds named after dimensions fixed by the model (codebooks, channels, heads,
# experts, layers), not by the data.
_STRUCTURAL_DIM = re.compile(
    r"^([CDHEKQ]|d|n_?q|.*codebooks?.*|.*channels?|.*heads?|.*experts?|.*layers?|.*groups?|"
    r".*dims?|.*features?)$",
    re.IGNORECASE,
)


class ShapeDependentLoop(TrackingRule, Rule):
    """
    ## What it does
    Finds Python loops whose trip count is a dimension of a tensor computed in the step:
    `for i in range(x.size(0))`, `range(len(x))`, `range(x.shape[1])`, or a name bound
    to one (`B, T, _ = x.shape` ... `range(T)`), in code that runs every step. Loops over
    Python lists and `nn.ModuleList`s (`for layer in self.layers`,
    `range(len(self.layers))`) and over the shape of module state (buffers, parameters)
    are static and are not reported.

    ## Why is this bad on TPU?
    XLA traces Python loops: every iteration is unrolled into the graph. A loop over the
    batch or the sequence length makes the graph grow with that size, compiles slowly, and
    any change of the size (a shorter last batch, a different sequence length) gives a new
    graph and a new compilation. Per-element Python loops also stop XLA from fusing the
    work into a few large operations.

    ## Example
    ```python
    from torch import nn


    class Pool(nn.Module):
        def forward(self, x):
            out = []
            for i in range(x.size(0)):
                out.append(x[i].max(dim=0).values)
            return out
    ```

    ## Use instead
    ```python
    from torch import nn


    class Pool(nn.Module):
        def forward(self, x):
            return x.max(dim=1).values
    ```

    ## Fix safety
    No automatic fix: vectorising a loop is a rewrite of the algorithm.

    ## References
    - [torch_xla troubleshooting: "loops with a different number of iterations"](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    - [Hugging Face Accelerate: training on TPUs (no for loops of varying length)](https://huggingface.co/docs/accelerate/basic_tutorials/tpu)
    """

    code = "TPU203"
    hot_only = True
    name = "shape-dependent-loop"
    summary = "`for i in range(t.size(0))` / `range(len(t))` over a tensor in hot code"
    requires = ("range(",)

    VALID = (
        # As many iterations as the model has sub-modules (neuralforecast TimeMixer shape).
        Valid(
            _MOD + "    def forward(self, trend_list, codes):\n"
            "        trends = trend_list.copy()\n"
            "        out = trends[0]\n"
            "        for i in range(len(trends) - 1):\n"
            "            out = out + self.up_sampling_layers[i](out)\n"
            "        for c in range(codes.size(1)):\n"
            "            out = out + self.projections[c](codes[:, c])\n"
            "        return out\n"
        ),
        Valid(
            _MOD + "    def forward(self, x):\n"
            "        for layer in self.layers:\n            x = layer(x)\n"
            "        for i in range(len(self.layers)):\n            x = self.layers[i](x)\n"
            "        for j in range(self.weight.size(0)):\n            pass\n"
            "        for k in range(4):\n            pass\n"
            "        return x\n"
        ),
        Valid(
            _HEAD + "    def on_validation_epoch_end(self):\n"
            "        for i in range(len(self.outputs)):\n            pass\n"
        ),
        # A Python list built in the step.
        Valid(
            _MOD + "    def forward(self, x, texts):\n"
            "        tokens = [t.split() for t in texts]\n"
            "        for i in range(len(tokens)):\n            pass\n        return x\n"
        ),
    )
    INVALID = (
        Invalid(
            _MOD + "    def forward(self, x):\n"
            "        out = []\n        for i in range(x.size(0)):\n"
            "            out.append(x[i].sum())\n        return out\n",
            line=8,
            message="in forward",
        ),
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        B, T, C = batch.shape\n        h = self(batch)\n"
            "        for t in range(1, T):\n            h = h + batch[:, t]\n"
            "        for b in range(len(h)):\n            pass\n"
            "        return h\n",
            count=2,
        ),
    )

    def visit_For(self, node: cst.For) -> None:
        super().visit_For(node)
        ctx = self.ctx
        if not ctx.in_hot_code:
            return
        iterator = node.iter
        if not (
            isinstance(iterator, cst.Call)
            and isinstance(iterator.func, cst.Name)
            and iterator.func.value == "range"
            and "range" not in ctx.aliases.bindings
        ):
            return
        args = positional(iterator)
        if not args:
            return
        stop = args[1].value if len(args) > 1 else args[0].value
        if isinstance(stop, cst.Name) and _STRUCTURAL_DIM.match(stop.value):
            return  # `for c in range(C)` over codebooks, channels, heads: fixed by the model
        tensor = shape_source(ctx, stop, self.bindings)
        if tensor is None or is_self_attribute(tensor):
            return
        if _indexes_modules(ctx, node):
            return  # `self.layers[i]` for each i: as many iterations as the model has modules
        kind = ctx.value_kind(tensor)
        if kind is not DEVICE and not is_torch_tensor(ctx, tensor, self.bindings):
            return
        if kind.is_host or kind is CPU or _quiet(ctx, node):
            return
        self.report(
            iterator,
            f"`for ... in {source_of(ctx, iterator)}` in {ctx.hot_reason} unrolls one copy of "
            f"the loop body per element of `{source_of(ctx, tensor, 30)}` into the XLA graph, "
            "and recompiles when that size changes; vectorise the loop",
        )


def _indexes_modules(ctx: FileContext, loop: cst.For) -> bool:
    """Whether the loop's body indexes a container of sub-modules (or calls an element of a
    container on `self`) with its variable (`self.up_sampling_layers[i](x)`,
    `self.heads[k + 1]`): the count is the model's."""
    if not isinstance(loop.target, cst.Name):
        return False
    name = loop.target.value
    stack: list[cst.CSTNode] = [loop.body]
    from tpulint.analysis.walker import iter_children

    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Subscript):
            node = node.func  # `self.projections[i](x)`: a container of callables
            called = True
        else:
            called = False
        if (
            isinstance(node, cst.Subscript)
            and is_self_attribute(node.value)
            and (called or ctx.value_kind(node.value) is ValueKind.MODULE)
            and any(
                isinstance(n, cst.Name) and n.value == name
                for element in node.slice
                for n in _names(element)
            )
        ):
            return True
        stack.extend(iter_children(node))
    return False


def _names(node: cst.CSTNode) -> list[cst.CSTNode]:
    from tpulint.analysis.walker import iter_children

    out: list[cst.CSTNode] = []
    stack = [node]
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(iter_children(current))
    return out

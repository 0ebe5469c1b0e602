"""TPU203 shape-dependent-loop."""

from __future__ import annotations

import ast

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.values import DEVICE, ValueKind
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.matchers import source_of
from ..shared.tensors import (
    Bindings,
    TrackingRule,
    computed_tensor,
    is_self_attribute,
    is_torch_tensor,
    mask_in_index,
    method_name,
    positional,
    receiver,
    shape_source,
    torch_name,
    value_size,
)
from .helpers import _HEAD, _MOD, _quiet

_VALUE_SHAPED_OPS = frozenset(
    {"nonzero", "argwhere", "unique", "unique_consecutive", "masked_select"}
)
# Methods whose result keeps the data-dependent size of their receiver (`idx.long()`,
# `sel.view(b, -1)`: every dimension of a reshaped value-shaped tensor depends on the count).
_KEEPS_SIZE = frozenset(
    {
        "long",
        "int",
        "float",
        "to",
        "detach",
        "clone",
        "contiguous",
        "squeeze",
        "unsqueeze",
        "view",
        "reshape",
        "flatten",
        "transpose",
        "permute",
        "t",
    }
)
_HOST_READS = frozenset({"item", "tolist"})


class ShapeDependentLoop(TrackingRule, Rule):
    """
    ## What it does
    Finds Python loops, in code that runs every step, whose trip count comes from a device
    tensor's values: read on the host (`range(int(n))`, `range(count.item())`,
    `range(mask.sum())`), or the size of a result whose shape depends on the values
    (`range(len(mask.nonzero()))`, `range(x[mask].size(0))`, `range(len(torch.unique(t)))`,
    a name bound to one). Only loops whose body does tensor work are reported.

    Loops over a dimension fixed by the model or the data layout (channels, classes, heads,
    a padded sequence length, a fixed window, the batch dimension of a fixed batch:
    `range(x.shape[1])`) are not reported: XLA unrolls them once and nothing recompiles.
    Neither are loops over Python lists (`range(len(names))`) or loops whose body does no
    tensor work.

    ## Why is this bad on TPU?
    XLA traces Python loops: every iteration is unrolled into the graph. When the number of
    iterations comes from the data, the value must first be copied to the host (a sync in
    every step), and each new count unrolls a different graph, which XLA compiles again.
    Looping over a fixed maximum and masking the unused iterations (or vectorising the loop)
    keeps one graph.

    ## Example
    ```python
    import torch
    from torch import nn


    class PerObject(nn.Module):
        def forward(self, feats, labels):
            objects = (labels > 0).nonzero()
            total = feats.new_zeros(())
            for i in range(len(objects)):
                total = total + feats[objects[i, 0]].sum()
            return total
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn


    class PerObject(nn.Module):
        def forward(self, feats, labels):
            keep = (labels > 0).unsqueeze(-1)
            return torch.where(keep, feats, 0).sum()
    ```

    ## Fix safety
    No automatic fix: vectorising a loop is a rewrite of the algorithm.

    ## References
    - [torch_xla troubleshooting: "loops with a different number of iterations"](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    - [torch_xla: recompilation causes (dynamic shapes)](https://github.com/pytorch/xla/blob/master/docs/source/perf/recompilation.md)
    - [Hugging Face Accelerate: training on TPUs (no for loops of varying length)](https://huggingface.co/docs/accelerate/basic_tutorials/tpu)

    ## Status
    Stable since issue 21. Before it the rule reported every loop over a tensor dimension and
    was right on 1 of 14 findings read on code frozen before it was read (sci1: 0 of 9,
    tpu1: 1 of 5): the counts were channels, classes, output variables, a fixed time window,
    the batch of a fixed-size batch, a Python list of bags, and a body without tensor work.
    The rule now reports only counts that come from values, which compile a graph per count
    by construction; the corpus diff (docs/corpus-report.md) was read finding by finding.
    """

    code = "TPU203"
    hot_only = True
    name = "shape-dependent-loop"
    summary = (
        "Python loop whose trip count comes from a device tensor's values "
        "(`range(int(n))`, `range(len(mask.nonzero()))`) in hot code"
    )
    requires = ("range(",)
    # `visit_For` goes on only with `for ... in range(...)`.
    hot_shapes = {
        ast.For: lambda node, _code: (
            isinstance(node.iter, ast.Call)
            and isinstance(node.iter.func, ast.Name)
            and node.iter.func.id == "range"
        ),
        ast.AsyncFor: lambda node, _code: (
            isinstance(node.iter, ast.Call)
            and isinstance(node.iter.func, ast.Name)
            and node.iter.func.id == "range"
        ),
    }
    # `for i in range(int(n))`: the host read (TPU101/TPU103) and this loop are one problem.
    folds_into = ("TPU101", "TPU103")

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
        # Static trip counts: channels or classes fixed by the head, the time axis of a
        # fixed window, the batch of a fixed-size batch. XLA unrolls them once.
        Valid(
            _MOD + "    def forward(self, logits, target, x, h):\n"
            "        scores = [self.score(logits[:, c], target == c) "
            "for c in range(logits.shape[1])]\n"
            "        for t in range(x.shape[1]):\n            h = self.cell(x[:, t], h)\n"
            "        b, _, n = x.shape\n"
            "        for i in range(b):\n            h = h + x[i].sum()\n"
            "        for k in range(len(x)):\n            h = h * 2\n"
            "        return torch.stack(scores).mean() + h\n"
        ),
        # A loop over a value-dependent count whose body does no tensor work: the host read
        # is TPU101/TPU103's finding; no graph is unrolled.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        meta = batch['meta']\n"
            "        n = int(batch['count'].sum())\n"
            "        for i in range(n):\n"
            "            meta[i]['prompt'] = meta[(i + 1) % n]['prompt']\n"
            "        return self(batch['x'])\n"
        ),
        # A Python list of variable-size items (one tensor per element): `len` of a list.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        bags = batch['bags']\n"
            "        logits = [self(bags[k]) for k in range(len(batch['label']))]\n"
            "        for k in range(len(bags)):\n            logits[k] = logits[k] * 2\n"
            "        return sum(logits)\n"
        ),
    )
    INVALID = (
        Invalid(
            _MOD + "    def forward(self, x, mask):\n"
            "        idx = mask.nonzero()\n"
            "        out = []\n        for i in range(idx.size(0)):\n"
            "            out.append(x[idx[i, 0]].sum())\n        return out\n",
            line=9,
            message="comes from `mask.nonzero()`",
        ),
        # Tokens kept by a mask, reshaped: every dimension depends on the count.
        Invalid(
            _MOD + "    def forward(self, targets, memory, eos: int):\n"
            "        targets = targets[targets != eos].view(targets.size(0), -1)\n"
            "        out = memory\n"
            "        for t in range(targets.size(1)):\n"
            "            out = self.step(targets[:, t], out)\n"
            "        return out\n",
            line=9,
            message="comes from `targets[targets != eos]`",
        ),
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        h = self(batch['x'])\n"
            "        n = int(batch['count'].max())\n"
            "        for t in range(1, n):\n            h = h + self.step(h)\n"
            "        for b in range(len(h[batch['valid']])):\n            h = h * 2\n"
            "        return h\n",
            count=2,
            message="read from the device",
        ),
        # `t.item()` of a device tensor (no reduction): a host read and a graph per count.
        Invalid(
            _MOD + "    def forward(self, x, steps):\n"
            "        for _ in range(steps.item()):\n            x = self.block(x)\n"
            "        return x\n",
            line=7,
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
        args = positional(iterator)[:2]
        origin = None
        for arg in args:
            origin = _count_origin(ctx, arg.value, self.bindings)
            if origin is not None:
                break
        if origin is None or _quiet(ctx, node):
            return
        if not _does_tensor_work(ctx, node.body, self.bindings):
            return  # no graph is unrolled: a host read in the count is TPU101/TPU103's
        how, source = origin
        loop = source_of(ctx, iterator)
        if how == "value":
            why = f"`{source_of(ctx, source, 40)}`, a value read from the device"
        else:
            why = (
                f"the size of a result whose shape comes from `{source_of(ctx, source, 40)}`, "
                "which depends on the data"
            )
        self.report(
            iterator,
            f"`for ... in {loop}` in {ctx.hot_reason} runs as many times as {why}: XLA "
            "unrolls the body once per iteration, so every new count compiles a new graph "
            "(after a sync to learn it); loop over a fixed maximum and mask the extra "
            "iterations, or vectorise the loop",
            note=f"the loop `{loop}` then runs that many times, unrolled into a new graph "
            "for every count (TPU203): loop over a fixed maximum and mask",
        )


def _count_origin(
    ctx: FileContext, node: cst.BaseExpression, bindings: Bindings, depth: int = 0
) -> tuple[str, cst.BaseExpression] | None:
    """Where a loop count comes from when it depends on a device tensor's values:
    ("value", the read) for a number read on the host (`int(t)`, `t.item()`, `t.sum()`),
    ("shape", the op) for the size of a value-shaped result (`len(mask.nonzero())`)."""
    if depth > 6:
        return None
    d = depth + 1
    read = value_size(ctx, node, bindings)
    if read is not None:
        return "value", read
    if isinstance(node, cst.Call):
        func = node.func
        if (
            isinstance(func, cst.Name)
            and func.value in ("int", "round", "float", "abs", "max", "min")
            and func.value not in ctx.aliases.bindings
            and node.args
        ):
            for arg in node.args:
                if func.value in ("int", "round", "float", "abs") and _device_tensor(
                    ctx, arg.value, bindings
                ):
                    return "value", node
                found = _count_origin(ctx, arg.value, bindings, d)
                if found is not None:
                    return found
            return None
        if method_name(node) in _HOST_READS and _device_tensor(ctx, receiver(node), bindings):
            return "value", node
    if isinstance(node, cst.BinaryOperation) and isinstance(
        node.operator, (cst.Add, cst.Subtract, cst.FloorDivide, cst.Multiply)
    ):
        return _count_origin(ctx, node.left, bindings, d) or _count_origin(
            ctx, node.right, bindings, d
        )
    if isinstance(node, cst.Name):
        binding = bindings.lookup(node.value)
        if binding is not None and binding.value is not None and binding.unpack_index is None:
            found = _count_origin(ctx, binding.value, bindings, d)
            if found is not None:
                return found
    tensor = shape_source(ctx, node, bindings)
    if tensor is None or is_self_attribute(tensor):
        return None
    op = _value_shaped(ctx, tensor, bindings)
    return ("shape", op) if op is not None else None


def _device_tensor(ctx: FileContext, node: cst.BaseExpression, bindings: Bindings) -> bool:
    kind = ctx.value_kind(node)
    if kind is DEVICE:
        return True
    return kind is ValueKind.UNKNOWN and is_torch_tensor(ctx, node, bindings)


def _value_shaped(
    ctx: FileContext, node: cst.BaseExpression, bindings: Bindings, depth: int = 0
) -> cst.BaseExpression | None:
    """The op that gives `node` a shape depending on a device tensor's values (`nonzero`,
    `unique`, `masked_select`, one-argument `where`, a boolean-mask selection), looking
    through names and ops that keep the rows (`idx[:, 0]`, `idx.long()`), or None."""
    if depth > 6:
        return None
    d = depth + 1
    if isinstance(node, cst.Name):
        binding = bindings.lookup(node.value)
        if binding is None or binding.value is None:
            return None
        return _value_shaped(ctx, binding.value, bindings, d)
    if isinstance(node, cst.Subscript):
        inner = _value_shaped(ctx, node.value, bindings, d)
        if inner is not None:
            return inner
        if mask_in_index(ctx, node, bindings) is not None and _device_tensor(
            ctx, node.value, bindings
        ):
            return node
        return None
    if isinstance(node, cst.Attribute) and node.attr.value in ("T", "data"):
        return _value_shaped(ctx, node.value, bindings, d)
    if isinstance(node, cst.Call):
        name = torch_name(ctx, node)
        args = positional(node)
        if name is not None:
            op = name.rsplit(".", 1)[-1]
            if op in _VALUE_SHAPED_OPS and args and _device_tensor(ctx, args[0].value, bindings):
                return node
            if op == "where" and len(node.args) == 1:
                return node
            return None
        method = method_name(node)
        if method in _VALUE_SHAPED_OPS and _device_tensor(ctx, receiver(node), bindings):
            return node
        if method in _KEEPS_SIZE:
            return _value_shaped(ctx, receiver(node), bindings, d)
    return None


_CONTAINER_METHODS = frozenset(
    {"append", "extend", "insert", "pop", "get", "keys", "items", "values", "copy", "update"}
)


def _does_tensor_work(ctx: FileContext, body: cst.CSTNode, bindings: Bindings) -> bool:
    """Whether a loop body computes with tensors: a torch call, a module call, a tensor
    method, arithmetic or a comparison on device values, an indexed write into a device
    tensor, or indexing into a tensor computed in the step. Only then does XLA unroll it.
    Indexing the batch container (which may hold lists, strings, metadata) is not."""
    from tpulint.analysis.walker import iter_children

    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Call):
            if torch_name(ctx, node) is not None or ctx.value_kind(node.func) is ValueKind.MODULE:
                return True
            if is_self_attribute(node.func) and any(
                ctx.value_kind(a.value) is DEVICE for a in node.args
            ):
                return True  # `self.block(x)`: a sub-module applied to a tensor
            method = method_name(node)
            if (
                method is not None
                and method not in _CONTAINER_METHODS
                and ctx.value_kind(receiver(node)) is DEVICE
            ):
                return True
        elif isinstance(node, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison)):
            if ctx.value_kind(node) is DEVICE:
                return True
        elif isinstance(node, (cst.Assign, cst.AugAssign)):
            targets = node.targets if isinstance(node, cst.Assign) else [node]
            for target in targets:
                sub = target.target
                if isinstance(sub, cst.Subscript) and _tensor_index(ctx, sub, bindings):
                    return True
        elif (
            isinstance(node, cst.Subscript)
            and _tensor_index(ctx, node, bindings)
            and computed_tensor(ctx, node.value, bindings)
        ):
            return True
        stack.extend(iter_children(node))
    return False


def _tensor_index(ctx: FileContext, node: cst.Subscript, bindings: Bindings) -> bool:
    """An index into a device tensor (not a dict access by a string key)."""
    if any(
        isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.SimpleString)
        for e in node.slice
    ):
        return False
    value = node.value
    while isinstance(value, cst.Subscript):
        if any(
            isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.SimpleString)
            for e in value.slice
        ):
            return False  # `meta[i]["prompt"][j]`: inside a container of metadata
        value = value.value
    return ctx.value_kind(node.value) is DEVICE

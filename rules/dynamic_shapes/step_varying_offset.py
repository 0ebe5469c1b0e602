"""TPU206 step-varying-offset."""

from __future__ import annotations

import re

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.values import DEVICE, ValueKind
from tpulint.rule_api.rule import Invalid, RelatedNode, Rule, Valid

from ..shared.matchers import self_attribute_name, source_of, walk
from ..shared.tensors import (
    Bindings,
    TrackingRule,
    is_self_attribute,
    is_torch_tensor,
    method_name,
    receiver,
)
from .helpers import _HEAD, _MOD, _quiet

# Parameters of the step hooks that count steps (`training_step(self, batch, batch_idx)`).
_STEP_PARAM = re.compile(r"^(batch_?idx|batch_?nb|batch_?index|batch_?num|step|it|iteration)$")
_STEP_ATTRS = frozenset({"self.global_step", "self.trainer.global_step", "trainer.global_step"})
_HOST_RANDOM = ("random.", "numpy.random.")


class StepVaryingOffset(TrackingRule, Rule):
    """
    ## What it does
    Finds slices of device tensors whose bounds are Python numbers that change from step to
    step, in code that runs every step: an offset read from the device (`ptr =
    int(self.queue_ptr)` ... `self.queue[:, ptr:ptr + b] = keys`), one computed from the step
    counter (`start = batch_idx * bs` ... `self.bank[start:start + bs] = z`, a pointer
    attribute the step advances), or one drawn on the host (`s = random.randint(0, n - w)` ...
    `x[:, s:s + w] = 0`). Offsets from shapes, configuration or loop variables over a fixed
    range are static and are not reported.

    ## Why is this bad on TPU?
    A Python number in a slice is a constant of the traced graph: every new offset is a new
    graph, so XLA compiles again nearly every step (a memory-bank queue cycles through all
    its offsets, a random crop draws a new one each time). When the offset is read from a
    device tensor (`int(self.queue_ptr)`) the step also waits for that read. Keeping the
    offset on the device and writing with `index_copy_` or `scatter_` (or shifting with
    `torch.roll`), or masking with a comparison against `torch.arange`, keeps one graph.

    ## Example
    ```python
    import torch
    from torch import nn


    class Queue(nn.Module):
        def __init__(self, dim=128, size=4096):
            super().__init__()
            self.register_buffer("queue", torch.randn(dim, size))
            self.register_buffer("ptr", torch.zeros(1, dtype=torch.long))

        def forward(self, keys):
            ptr = int(self.ptr)
            self.queue[:, ptr : ptr + keys.shape[0]] = keys.T
            self.ptr[0] = (ptr + keys.shape[0]) % self.queue.shape[1]
            return self.queue
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn


    class Queue(nn.Module):
        def __init__(self, dim=128, size=4096):
            super().__init__()
            self.register_buffer("queue", torch.randn(dim, size))
            self.register_buffer("ptr", torch.zeros(1, dtype=torch.long))

        def forward(self, keys):
            size = self.queue.shape[1]
            index = (self.ptr + torch.arange(keys.shape[0], device=keys.device)) % size
            self.queue.index_copy_(1, index, keys.T)
            self.ptr.copy_((self.ptr + keys.shape[0]) % size)
            return self.queue
    ```

    ## Fix safety
    No automatic fix: the device-side index (or mask) depends on what the offset means.

    ## References
    - [torch_xla: recompilation causes (values that become graph constants)](https://github.com/pytorch/xla/blob/master/docs/source/perf/recompilation.md)
    - [torch_xla troubleshooting: known performance caveats](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    - [PyTorch docs: `Tensor.index_copy_`](https://pytorch.org/docs/stable/generated/torch.Tensor.index_copy_.html)

    ## Status
    Preview (new in issue 21): from three misses of the fresh batches (random mask offsets
    drawn per sample in two training steps of sci1, and the MoCo queue pointer of issue 21's
    list). No fresh batch has been read with it yet.
    """

    code = "TPU206"
    name = "step-varying-offset"
    summary = "A slice of a device tensor at a Python offset that changes every step"
    hot_only = True
    preview = True
    # `ptr = int(self.ptr)`: the host read (TPU101/TPU103), or the size read from values
    # (TPU205), and the slice at it are one problem.
    folds_into = ("TPU101", "TPU103", "TPU205")

    VALID = (
        # Offsets from shapes, configuration and a loop over a fixed range.
        Valid(
            _MOD + "    def forward(self, x):\n"
            "        n = x.shape[1] // 2\n"
            "        head = x[:, :n]\n"
            "        for i in range(4):\n"
            "            head = head + x[:, i : i + self.window]\n"
            "        return head\n"
        ),
        # An offset kept on the device.
        Valid(
            _MOD + "    def forward(self, keys):\n"
            "        index = self.ptr + torch.arange(keys.shape[0], device=keys.device)\n"
            "        self.queue.index_copy_(1, index % self.size, keys.T)\n"
            "        return self.queue\n"
        ),
        # A host tensor built from shapes: its value is static.
        Valid(
            _MOD + "    def forward(self, est, ref):\n"
            "        n = int(torch.min(torch.tensor([est.size(-1), ref.size(-1)])))\n"
            "        return est[..., :n] - ref[..., :n]\n"
        ),
        # An attribute set from another module's, not advanced by the step.
        Valid(
            _MOD + "    def __init__(self, encoder):\n"
            "        super().__init__()\n"
            "        self.patch = self.encoder_patch(encoder)\n\n"
            "    def forward(self, x):\n"
            "        return x[:, :, self.patch :]\n"
        ),
        # A Python list sliced at a step offset: no graph.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        names = self.names[batch_idx : batch_idx + 4]\n"
            "        return self(batch).sum()\n"
        ),
    )
    INVALID = (
        # MoCo-style queue: the pointer is read from the device.
        Invalid(
            _MOD + "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.register_buffer('queue', torch.randn(128, 4096))\n"
            "        self.register_buffer('queue_ptr', torch.zeros(1, dtype=torch.long))\n\n"
            "    def forward(self, keys):\n"
            "        ptr = int(self.queue_ptr)\n"
            "        self.queue[:, ptr : ptr + keys.shape[0]] = keys.T\n"
            "        return self.queue\n",
            line=13,
            message="read from the device",
        ),
        # A memory bank written at the step counter.
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        z = self(batch)\n"
            "        start = batch_idx * z.shape[0]\n"
            "        self.bank[start : start + z.shape[0]] = z.detach()\n"
            "        return z.sum()\n",
            line=9,
            message="the step counter",
        ),
        # One offset read once and used by two writes: one finding.
        Invalid(
            _MOD + "    def __init__(self, size: int = 4096):\n"
            "        super().__init__()\n"
            "        self.size = size\n"
            "        self.register_buffer('bank', torch.zeros(size, 128))\n"
            "        self.register_buffer('ptr_buffer', torch.zeros(1, dtype=torch.long))\n\n"
            "    def forward(self, z):\n"
            "        ptr = int(self.ptr_buffer[0])\n"
            "        if ptr + z.shape[0] > self.size:\n"
            "            self.bank[ptr:] = z[: self.size - ptr]\n"
            "        else:\n"
            "            self.bank[ptr : ptr + z.shape[0]] = z\n"
            "        return self.bank\n",
            line=15,
        ),
        # Offsets drawn on the host for each sample.
        Invalid(
            "import random\n\nimport torch\nfrom torch import nn\n\n\n"
            "class Masker(nn.Module):\n"
            "    def forward(self, x):\n"
            "        x = x.clone()\n"
            "        for row in range(x.shape[0]):\n"
            "            s = random.randint(0, x.shape[1] - 8)\n"
            "            x[row, s : s + 8] = 0\n"
            "        return x\n",
            line=12,
            message="drawn on the host",
        ),
        # A pointer attribute the step advances.
        Invalid(
            _MOD + "    def forward(self, z):\n"
            "        self.bank[self.pos : self.pos + z.shape[0]] = z\n"
            "        self.pos = (self.pos + z.shape[0]) % self.bank.shape[0]\n"
            "        return self.bank\n",
            line=7,
            message="the step advances",
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._by_origin: dict[int, object] = {}

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if not hasattr(self, "_counters"):
            self._counters: dict[int, frozenset[str]] = {}
            self._tensors: dict[int, frozenset[str]] = {}
        self._counters[id(node)] = _advanced_attributes(node)
        self._tensors[id(node)] = _tensor_attributes(self.ctx, node)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        ctx = self.ctx
        if not ctx.in_hot_code or not self._device_base(node):
            return
        for element in node.slice:
            index = element.slice
            if not isinstance(index, cst.Slice):
                continue
            for bound in (index.lower, index.upper):
                if bound is None:
                    continue
                origin = self._origin(bound, 0)
                if origin is None:
                    continue
                if _quiet(ctx, node):
                    return
                reported = self._by_origin.get(id(origin[1])) if origin[1] is not bound else None
                if reported is not None:
                    # The same offset used again: one problem, this slice a related place.
                    reported.related.append(RelatedNode(node, "the same offset is used here"))
                    return
                self._report(node, bound, *origin)
                if origin[1] is not bound:
                    self._by_origin[id(origin[1])] = self.reports[-1]
                return

    def _origin(self, node: cst.BaseExpression, depth: int) -> tuple[str, cst.CSTNode] | None:
        """Why a slice bound changes every step: ("device", the host read), ("counter", the
        step counter or an advanced attribute), ("random", the host draw); or None."""
        if depth > 6:
            return None
        ctx = self.ctx
        d = depth + 1
        if isinstance(node, cst.BinaryOperation):
            return self._origin(node.left, d) or self._origin(node.right, d)
        if isinstance(node, cst.UnaryOperation):
            return self._origin(node.expression, d)
        if isinstance(node, cst.Name):
            if self.bindings.is_param(node.value):
                return ("counter", node) if _STEP_PARAM.match(node.value) else None
            binding = self.bindings.lookup(node.value)
            if binding is None or binding.value is None or binding.unpack_index is not None:
                return None
            return self._origin(binding.value, d)
        if isinstance(node, cst.Attribute):
            written = source_of(ctx, node, 80)
            if written in _STEP_ATTRS:
                return "counter", node
            if is_self_attribute(node) and node.attr.value in self._class_counters():
                return "counter", node
            return None
        if isinstance(node, cst.Call):
            func = node.func
            qualified = ctx.qualify(func) or ""
            if qualified.startswith(_HOST_RANDOM):
                return "random", node
            if (
                isinstance(func, cst.Name)
                and func.value in ("int", "round")
                and node.args
                and self._tensor(node.args[0].value)
            ):
                inner = node.args[0].value
                return ("random", node) if _host_random_tensor(ctx, inner) else ("device", node)
            if method_name(node) == "item" and self._tensor(receiver(node)):
                return (
                    ("random", node)
                    if _host_random_tensor(ctx, receiver(node))
                    else (
                        "device",
                        node,
                    )
                )
        return None

    def _device_base(self, node: cst.Subscript) -> bool:
        """The sliced value is a device tensor: a tensor of the step, a module's buffer or
        tensor attribute, or a target that a device tensor is written into."""
        ctx = self.ctx
        base = node.value
        if _device_base(ctx, base, self.bindings):
            return True
        klass = ctx.klass
        if (
            klass is not None
            and isinstance(base, cst.Attribute)
            and is_self_attribute(base)
            and base.attr.value in getattr(self, "_tensors", {}).get(id(klass.node), ())
        ):
            return True
        target = ctx.parent(ctx.parent(node))
        return (
            isinstance(target, cst.Assign)
            and any(t.target is node for t in target.targets)
            and ctx.value_kind(target.value) is DEVICE
        )

    def _tensor(self, node: cst.BaseExpression) -> bool:
        """A tensor whose values a read brings from the device (a step tensor, a module's
        buffer), or a host random draw (`torch.randint(...)`); not a host tensor built from
        Python numbers (`torch.tensor([a.size(-1), b.size(-1)])`)."""
        if self.ctx.value_kind(node) is DEVICE or _host_random_tensor(self.ctx, node):
            return True
        while isinstance(node, cst.Subscript):
            node = node.value  # `self.ptr[0]`: an element of the buffer
        klass = self.ctx.klass
        return (
            klass is not None
            and isinstance(node, cst.Attribute)
            and is_self_attribute(node)
            and node.attr.value in getattr(self, "_tensors", {}).get(id(klass.node), ())
        )

    def _class_counters(self) -> frozenset[str]:
        klass = self.ctx.klass
        counters = getattr(self, "_counters", {})
        return counters.get(id(klass.node), frozenset()) if klass is not None else frozenset()

    def _report(self, node: cst.Subscript, bound: cst.BaseExpression, how: str, source) -> None:
        ctx = self.ctx
        written = source_of(ctx, node, 50)
        where = ctx.hot_reason
        if how == "device":
            why = f"read from the device every step with `{source_of(ctx, source, 40)}`"
        elif how == "random":
            why = f"drawn on the host with `{source_of(ctx, source, 40)}`"
        elif isinstance(source, cst.Attribute) and source_of(ctx, source) not in _STEP_ATTRS:
            why = f"`{source_of(ctx, source)}`, an attribute the step advances"
        else:
            why = f"the step counter `{source_of(ctx, source)}`"
        advice = (
            "keep the offset on the device and write with `index_copy_`/`scatter_` (indices "
            "`offset + torch.arange(n, device=...)`) or shift with `torch.roll`; for a mask, "
            "compare `torch.arange` with a device-side offset"
        )
        related = [RelatedNode(source, "the offset comes from here")] if source is not bound else []
        self.report(
            node,
            f"`{written}` in {where} slices at a bound that changes every step ({why}): a "
            f"Python number in a slice is a constant of the traced graph, so XLA compiles a new "
            f"graph for every value; {advice}",
            related=related,
            note=f"the value is then an offset into `{written}`, a new graph for every offset "
            f"(TPU206): {advice}",
        )


def _host_random_tensor(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """`torch.randint(...)` without a device: drawn on the host."""
    while isinstance(node, cst.Subscript):
        node = node.value
    if not isinstance(node, cst.Call):
        return False
    qualified = ctx.qualify(node.func) or ""
    return qualified.startswith("torch.rand") and not any(
        a.keyword is not None and a.keyword.value == "device" for a in node.args
    )


def _device_base(ctx: FileContext, node: cst.BaseExpression, bindings: Bindings) -> bool:
    """The sliced value is a device tensor: a tensor of the step, or a module's buffer."""
    kind = ctx.value_kind(node)
    if kind is DEVICE:
        return True
    if kind.is_host or kind is ValueKind.CPU:
        return False
    return is_torch_tensor(ctx, node, bindings)


def _tensor_attributes(ctx: FileContext, klass: cst.ClassDef) -> frozenset[str]:
    """`self.<name>` attributes that hold tensors: registered buffers and parameters
    (`self.register_buffer("queue", ...)`), and attributes assigned a torch call."""
    out: set[str] = set()
    for node in walk(klass.body):
        if (
            isinstance(node, cst.Call)
            and method_name(node) in ("register_buffer", "register_parameter")
            and node.args
            and isinstance(node.args[0].value, cst.SimpleString)
        ):
            out.add(node.args[0].value.value[1:-1])
        elif isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
            value = node.value
            if (
                isinstance(target, cst.Attribute)
                and is_self_attribute(target)
                and isinstance(value, cst.Call)
                and (ctx.qualify(value.func) or "").startswith(("torch.", "nn."))
            ):
                out.add(target.attr.value)
    return frozenset(out)


def _advanced_attributes(klass: cst.ClassDef) -> frozenset[str]:
    """`self.<name>` attributes a method other than `__init__` advances from their own value
    (`self.pos = (self.pos + n) % size`, `self.pos += n`): step counters kept on the
    module."""
    out: set[str] = set()
    for method in walk(klass.body):
        if not isinstance(method, cst.FunctionDef) or method.name.value in _SETUP_METHODS:
            continue
        for node in walk(method.body):
            if isinstance(node, cst.AugAssign) and self_attribute_name(node.target) is not None:
                out.add(self_attribute_name(node.target))  # type: ignore[arg-type]
            elif isinstance(node, cst.Assign) and len(node.targets) == 1:
                name = self_attribute_name(node.targets[0].target)
                if name is not None and any(
                    self_attribute_name(part) == name for part in walk(node.value)
                ):
                    out.add(name)
    return frozenset(out)


_SETUP_METHODS = frozenset({"__init__", "setup", "reset", "reset_parameters", "build"})

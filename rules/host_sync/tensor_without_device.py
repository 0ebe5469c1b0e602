"""TPU109 tensor-without-device."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.project import ClassKind
from tpulint.analysis.values import ValueKind
from tpulint.datatypes.diagnostics import Applicability
from tpulint.rule_api.cst_helpers import add_keywords
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.matchers import source_of
from ..shared.tensors import TrackingRule, keyword, method_name, receiver, torch_name
from .helpers import _HEAD, quiet

# torch factories that make a new tensor on the CPU unless told `device=`.
_HOST_FACTORIES = frozenset(
    {
        "zeros",
        "ones",
        "empty",
        "full",
        "arange",
        "linspace",
        "logspace",
        "eye",
        "tensor",
        "as_tensor",
        "rand",
        "randn",
        "randint",
        "randperm",
        "tril_indices",
        "triu_indices",
        "normal",
    }
)
# Methods that keep a tensor where it is (so `torch.arange(n).float()[None]` is still on
# the host).
_KEEPS_DEVICE = frozenset(
    {
        "float",
        "long",
        "int",
        "bool",
        "half",
        "double",
        "bfloat16",
        "unsqueeze",
        "view",
        "reshape",
        "expand",
        "expand_as",
        "repeat",
        "t",
        "transpose",
        "flip",
        "contiguous",
        "clone",
        "detach",
        "requires_grad_",
    }
)
# torch functions that combine their tensor arguments.
_COMBINING = frozenset(
    {
        "cat",
        "concat",
        "stack",
        "where",
        "matmul",
        "mm",
        "bmm",
        "maximum",
        "minimum",
        "mul",
        "add",
        "sub",
        "div",
        "eq",
        "lt",
        "le",
        "gt",
        "ge",
        "ne",
        "masked_fill",
    }
)


class TensorWithoutDevice(TrackingRule, Rule):
    """
    ## What it does
    Finds tensors created in code that runs every step without `device=`
    (`torch.zeros(n)`, `torch.arange(T)`, `torch.tensor([...])`, `torch.eye(k)`,
    `torch.normal(0, 1, size=x.shape)` of numbers, also scaled
    by a number: `torch.ones(n, 1) * c`), and tensors kept as plain module attributes (not
    registered buffers, so moving the module leaves them on the host), then combined with or
    indexed by the step's tensors (`x + pos`, `lengths[:, None] > torch.arange(T)`,
    `torch.cat([x, pad])`). A 0-dimensional `torch.tensor(number)` is not reported (PyTorch
    treats it as a scalar), nor are tensors moved with `.to(...)` / `.type_as(...)` or made
    with `*_like`/`x.new_*`.

    ## Why is this bad on TPU?
    Without `device=` the tensor is built in host memory. Combined with an XLA tensor it
    either fails ("Input tensor is not an XLA tensor", RuntimeError) or, where PyTorch
    accepts it, becomes an input the host copies to the TPU every step. Created on the
    device, it is a constant of the XLA graph: no copy, no error.

    ## Example
    ```python
    import lightning as L
    import torch


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            x, lengths = batch
            mask = torch.arange(x.size(1))[None, :] < lengths[:, None]
            return (self(x) * mask).sum()
    ```

    ## Use instead
    ```python
    import lightning as L
    import torch


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            x, lengths = batch
            mask = torch.arange(x.size(1), device=lengths.device)[None, :] < lengths[:, None]
            return (self(x) * mask).sum()
    ```

    ## Fix safety
    The fix adds `device=<the step tensor>.device` and is unsafe: it is exact when that
    tensor is on the accelerator (which Lightning makes sure of for the batch), and moves
    the computation there, which changes where (and how fast) it runs.

    ## References
    - [torch_xla: migration to XLA on TPUs ("create tensors on the XLA device")](https://github.com/pytorch/xla/blob/master/docs/source/learn/migration-to-xla-on-tpus.md)
    - [Lightning docs: hardware-agnostic training ("`device=self.device`")](https://lightning.ai/docs/pytorch/stable/accelerators/accelerator_prepare.html)

    ## Status
    Preview. Read on the fifth held-out pair (sci4, tpu4), frozen after the rule was added:
    right once in five. The four wrong findings were values that never meet a device tensor
    the way the rule assumed: 0-dim CPU tensors (PyTorch combines a 0-dim CPU tensor with a
    device tensor without a transfer), dataset transforms that run on CPU samples in loader
    workers, and a placeholder replaced by a buffer before the only path that reads it. It
    returns to the default set when a fresh batch read after those shapes are handled shows
    it at 95%.
    """

    code = "TPU109"
    name = "tensor-without-device"
    preview = True
    summary = "A tensor made in step code without `device=` combined with the step's tensors"
    hot_only = True
    fix_applicability = Applicability.UNSAFE
    fix_message = "Create it on the device of the tensor it is combined with"
    requires = tuple(f"{name}(" for name in sorted(_HOST_FACTORIES))
    screen_calls = _HOST_FACTORIES  # every finding is a factory call (_host_factory)

    VALID = (
        # `torch.normal` of tensors is made where its mean is.
        Valid(
            "import torch\nfrom torch import nn\n\n\nclass Jitter(nn.Module):\n"
            "    def forward(self, x):\n"
            "        eps = torch.normal(x, torch.ones_like(x))\n"
            "        return x + eps\n"
        ),
        # A registered buffer moves with the module.
        Valid(
            "import torch\nfrom torch import nn\n\n\nclass Prior(nn.Module):\n"
            "    def __init__(self, n):\n"
            "        super().__init__()\n"
            "        self.register_buffer('table', torch.randn(n, 8))\n\n"
            "    def forward(self, ids, x):\n"
            "        return x + self.table[ids]\n"
        ),
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        x, lengths = batch\n"
            "        pos = torch.arange(x.size(1), device=x.device)\n"
            "        eye = torch.eye(4).to(x.device)\n"
            "        pad = torch.zeros(3).type_as(x)\n"
            "        return self(x + pos + pad) @ eye * torch.tensor(0.5)\n"
        ),
        # Not combined with the step's tensors: shapes, CPU bookkeeping.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        counts = torch.zeros(10)\n"
            "        counts += torch.ones(10)\n"
            "        return self(batch)\n"
        ),
        # Epoch-level hooks are not step code.
        Valid(
            _HEAD + "    def on_validation_epoch_end(self):\n"
            "        self.total = self.total + torch.zeros(3)\n"
        ),
    )
    INVALID = (
        # A tensor kept as a plain attribute: `.to(device)` of the module does not move it.
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Prior(nn.Module):\n"
            "    def __init__(self, n):\n"
            "        super().__init__()\n"
            "        self.table = torch.randn(n, 8)\n\n"
            "    def forward(self, ids, x):\n"
            "        return x + self.table[ids]\n",
            line=11,
            message="kept as a plain attribute",
        ),
        # Noise drawn from numbers with `size=`: a host tensor added to the step's input.
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Jitter(nn.Module):\n"
            "    def forward(self, x):\n"
            "        eps = torch.normal(0.0, 1.0, size=x.shape)\n"
            "        return x + eps\n",
            line=7,
        ),
        # Scaled by a number: still a host tensor.
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Head(nn.Module):\n"
            "    def forward(self, x, scale):\n"
            "        bias = torch.ones(x.size(0), 1) * 0.5\n"
            "        return torch.cat([x, bias], dim=1)\n",
            line=7,
        ),
        # Fed to a sub-module whose weights are on the device.
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass LM(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.pos = nn.Embedding(512, 64)\n\n"
            "    def forward(self, tokens):\n"
            "        return self.pos(torch.arange(tokens.size(1)))\n",
            line=11,
            message="fed to the sub-module `self.pos`",
            expected_fix="import torch\nfrom torch import nn\n\n\nclass LM(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.pos = nn.Embedding(512, 64)\n\n"
            "    def forward(self, tokens):\n"
            "        return self.pos(torch.arange(tokens.size(1), device=tokens.device))\n",
        ),
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        x, lengths = batch\n"
            "        mask = torch.arange(x.size(1))[None, :] < lengths[:, None]\n"
            "        return (self(x) * mask).sum()\n",
            line=8,
            message="combined with the step tensor `lengths[:, None]`",
            expected_fix=_HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        x, lengths = batch\n"
            "        mask = torch.arange(x.size(1), device=lengths.device)[None, :] < "
            "lengths[:, None]\n"
            "        return (self(x) * mask).sum()\n",
        ),
        # Bound to a name first, then concatenated.
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Head(nn.Module):\n"
            "    def forward(self, x):\n"
            "        pad = torch.zeros(x.size(0), 1)\n"
            "        return torch.cat([x, pad], dim=1)\n",
            line=7,
            expected_fix="import torch\nfrom torch import nn\n\n\nclass Head(nn.Module):\n"
            "    def forward(self, x):\n"
            "        pad = torch.zeros(x.size(0), 1, device=x.device)\n"
            "        return torch.cat([x, pad], dim=1)\n",
        ),
        Invalid(
            _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        logits = self(batch)\n"
            "        weights = torch.tensor([1.0, 2.0, 0.5])\n"
            "        return (logits * weights).sum()\n",
            line=8,
            expected_fix=_HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        logits = self(batch)\n"
            "        weights = torch.tensor([1.0, 2.0, 0.5], device=logits.device)\n"
            "        return (logits * weights).sum()\n",
        ),
    )

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self._combined([node.left, node.right])

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self._combined([node.left, *(t.comparator for t in node.comparisons)])

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if self._module_call(node):
            return
        name = torch_name(ctx, node)
        if name is None or name.rsplit(".", 1)[-1] not in _COMBINING:
            return
        operands: list[cst.BaseExpression] = []
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value not in ("other", "input"):
                continue
            value = arg.value
            if isinstance(value, (cst.List, cst.Tuple)):
                operands.extend(e.value for e in value.elements)
            else:
                operands.append(value)
        self._combined(operands)

    def _combined(self, operands: list[cst.BaseExpression]) -> None:
        ctx = self.ctx
        if not ctx.in_hot_code or len(operands) < 2:
            return
        factories = [(op, self._host_factory(op, 0)) for op in operands]
        device = [op for op, found in factories if found is None and self._on_device(op)]
        if not device:
            return
        for op in operands:
            if _host_attribute(ctx, op):
                self._report_attribute(op, device[0])
        seen: set[int] = getattr(self, "_seen", set())
        self._seen = seen
        for _op, factory in factories:
            if factory is None or id(factory) in seen:
                continue
            seen.add(id(factory))
            if quiet(ctx, factory):
                continue
            partner = device[0]
            reference = _device_reference(ctx, partner)
            fix = None
            if reference is not None:
                fix = add_keywords(factory, [("device", f"{reference}.device")])
            self.report(
                factory,
                f"`{source_of(ctx, factory)}` in {ctx.hot_reason} is created in host memory (no "
                f"`device=`) and combined with the step tensor `{source_of(ctx, partner, 30)}`: "
                'on XLA that is an input copied to the TPU every step, or the error "Input '
                'tensor is not an XLA tensor"; create it on the device'
                + (f" (`device={reference}.device`)" if reference else " (`device=...`)"),
                replacement=fix,
            )

    def _module_call(self, node: cst.Call) -> bool:
        """`self.embed(torch.arange(T))`: a host tensor fed to a sub-module, whose weights
        are on the device. Reported like a combination; True when the call was one."""
        ctx = self.ctx
        func = node.func
        if not (
            ctx.in_hot_code
            and isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
            and ctx.value_kind(func) is ValueKind.MODULE
        ):
            return False
        seen: set[int] = getattr(self, "_seen", set())
        self._seen = seen
        for arg in node.args:
            factory = self._host_factory(arg.value, 0)
            if factory is None or id(factory) in seen or quiet(ctx, factory):
                continue
            seen.add(id(factory))
            reference = _first_tensor_param(ctx)
            if reference is None:
                klass = ctx.lightning_class
                if klass is not None and klass.kind & ClassKind.LIGHTNING_MODULE:
                    reference = "self"
            self.report(
                factory,
                f"`{source_of(ctx, factory)}` in {ctx.hot_reason} is created in host memory (no "
                f"`device=`) and fed to the sub-module `{source_of(ctx, func)}`, whose weights "
                'are on the TPU: "Input tensor is not an XLA tensor", or an input copied to '
                "the TPU every step; create it on the device"
                + (f" (`device={reference}.device`)" if reference else " (`device=...`)"),
                replacement=add_keywords(factory, [("device", f"{reference}.device")])
                if reference
                else None,
            )
        return True

    def _host_factory(self, node: cst.BaseExpression, depth: int) -> cst.Call | None:
        """The `torch.<factory>(...)` call without `device=` that `node` is (through casts,
        reshapes, indexing and local names), or None."""
        if depth > 6:
            return None
        d = depth + 1
        if isinstance(node, cst.Subscript):
            return self._host_factory(node.value, d)
        if isinstance(node, cst.Call):
            method = method_name(node)
            if method in _KEEPS_DEVICE:
                return self._host_factory(receiver(node), d)
            name = torch_name(self.ctx, node)
            if name is None or name.rsplit(".", 1)[-1] not in _HOST_FACTORIES:
                return None
            if keyword(node, "device") is not None or any(a.star for a in node.args):
                return None
            if name.rsplit(".", 1)[-1] == "normal" and (
                keyword(node, "size") is None
                or any(not self.ctx.value_kind(a.value).is_host for a in node.args[:2])
            ):
                return None  # `torch.normal(mean, std)` of tensors: placed like `mean`
            if name.rsplit(".", 1)[-1] in ("tensor", "as_tensor"):
                data = node.args[0].value if node.args else None
                if not isinstance(data, (cst.List, cst.Tuple, cst.ListComp)):
                    return None  # a 0-dim scalar, or data whose shape is not visible
            return node
        if isinstance(node, cst.Name):
            binding = self.bindings.lookup(node.value)
            if binding is None or binding.value is None or binding.unpack_index is not None:
                return None
            return self._host_factory(binding.value, d)
        if isinstance(node, cst.BinaryOperation) and isinstance(
            node.operator, (cst.Multiply, cst.Add, cst.Subtract, cst.Divide)
        ):
            # `torch.ones(n, 1) * c`: scaled by a number, still in host memory
            for side, other in ((node.left, node.right), (node.right, node.left)):
                factory = self._host_factory(side, d)
                if factory is not None and self.ctx.value_kind(other).is_host:
                    return factory
        return None

    def visit_Subscript(self, node: cst.Subscript) -> None:
        """`self.table[ids]`: a host tensor attribute indexed by the step's tensor."""
        ctx = self.ctx
        if not ctx.in_hot_code or not _host_attribute(ctx, node.value):
            return
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index) and self._on_device(index.value):
                self._report_attribute(node.value, index.value)
                return

    def _report_attribute(self, attribute: cst.BaseExpression, partner: cst.BaseExpression) -> None:
        ctx = self.ctx
        seen: set[int] = getattr(self, "_seen", set())
        self._seen = seen
        if id(attribute) in seen or quiet(ctx, attribute):
            return
        seen.add(id(attribute))
        self.report(
            attribute,
            f"`{source_of(ctx, attribute)}` in {ctx.hot_reason} is a tensor kept as a plain "
            "attribute (not a registered buffer), so moving the module to the TPU leaves it in "
            f"host memory, and it meets the step tensor `{source_of(ctx, partner, 30)}`: "
            '"Input tensor is not an XLA tensor", or a copy to the TPU every step; register '
            "it with `self.register_buffer(...)` (or `persistent=False`)",
        )

    def _on_device(self, node: cst.BaseExpression) -> bool:
        return self.ctx.value_kind(node) is ValueKind.DEVICE


def _host_attribute(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """`self.<name>` holding a CPU tensor: assigned a tensor made without `device=` (not
    registered as a buffer or parameter, which the module's `.to()` would move)."""
    return (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
        and ctx.value_kind(node) is ValueKind.CPU
    )


def _first_tensor_param(ctx: FileContext) -> str | None:
    """The first parameter of the current hot function known to be a device tensor."""
    info = ctx.function
    if info is None:
        return None
    params = info.node.params
    for param in [*params.posonly_params, *params.params]:
        name = param.name.value
        if name not in ("self", "cls") and ctx.value_kind(param.name) is ValueKind.DEVICE:
            return name
    return None


def _device_reference(ctx: FileContext, node: cst.BaseExpression) -> str | None:
    """A short expression whose `.device` is the step tensor's: the tensor itself when it is
    a name or attribute (`lengths`), its base for an index (`lengths[:, None]`), else
    `self` in a LightningModule."""
    while isinstance(node, cst.Subscript):
        node = node.value
    if isinstance(node, (cst.Name, cst.Attribute)) and ctx.module.code_for_node(node) != "self":
        text = ctx.module.code_for_node(node)
        if len(text) <= 40:
            return text
    klass = ctx.lightning_class
    if klass is not None and klass.kind & ClassKind.LIGHTNING_MODULE:
        return "self"
    return None

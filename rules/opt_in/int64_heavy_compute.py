"""TPU902 int64-heavy-compute."""

from __future__ import annotations

import re

import libcst as cst

from tpulint.analysis.values import ValueKind
from tpulint.datatypes.diagnostics import Applicability, Severity
from tpulint.rule_api.cst_helpers import keyword_arg
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.matchers import source_of

_HEAD9 = (
    "import lightning as L\nimport torch\nimport torch.nn.functional as F\n\n\n"
    "class Model(L.LightningModule):\n"
)


_LONG_DTYPES = frozenset({"torch.long", "torch.int64", "torch.LongTensor", "torch.uint64"})
# Whole-tensor int64 work: scans and products (reductions to a count, such as
# `mask.long().sum()`, are cheap bookkeeping and are not reported).
_ARITHMETIC_METHODS = frozenset(
    {
        "cumsum",
        "cumprod",
        "matmul",
        "mm",
        "bmm",
        "mul",
        "add",
        "sub",
        "remainder",
        "fmod",
        "floor_divide",
        "mul_",
        "add_",
        "sub_",
        "cumsum_",
        "pow",
    }
)
_ARITHMETIC_FUNCS = frozenset(
    {
        "torch.cumsum",
        "torch.cumprod",
        "torch.matmul",
        "torch.mm",
        "torch.bmm",
        "torch.einsum",
        "torch.mul",
        "torch.add",
        "torch.sub",
        "torch.remainder",
        "torch.floor_divide",
    }
)
# Factories that fill a tensor with a constant or a range: ids, positions, lengths.
_FILL_FACTORIES = frozenset(
    {
        "torch.ones",
        "torch.zeros",
        "torch.full",
        "torch.empty",
        "torch.arange",
        "torch.tensor",
        "torch.as_tensor",
        "torch.ones_like",
        "torch.zeros_like",
        "torch.full_like",
        "torch.LongTensor",
    }
)
_ARITHMETIC_OPERATORS = (
    cst.Add,
    cst.Subtract,
    cst.Multiply,
    cst.Divide,
    cst.FloorDivide,
    cst.Modulo,
    cst.Power,
    cst.MatrixMultiply,
    cst.LeftShift,
    cst.RightShift,
)
_COUNT_NAMES = re.compile(r"(?i)(^(num|n|count|total)_|(count|total|sum|len|length)s?$)")
_INDEX_NAMES = re.compile(
    r"(?i)(idx|index|indices|ids?$|_id|label|target|tgt|pos|position|token|offset|seed)"
)


def _long_conversion(ctx, node: cst.Call) -> str | None:
    """ "long()" for `x.long()`, "to" for `x.to(torch.long)`, "dtype" for
    `torch.f(..., dtype=torch.int64)`, else None."""
    func = node.func
    if isinstance(func, cst.Attribute):
        if func.attr.value == "long" and not node.args:
            return "long()"
        if func.attr.value in ("to", "type") and node.args:
            first = node.args[0]
            value = first.value if first.keyword is None or first.keyword.value == "dtype" else None
            if value is not None and ctx.qualify(value) in _LONG_DTYPES:
                return "to"
    dtype = keyword_arg(node, "dtype")
    if dtype is not None and ctx.qualify(dtype.value) in _LONG_DTYPES:
        qualified = ctx.qualify(func) or ""
        if qualified.startswith("torch.") and not qualified.startswith("torch.nn"):
            return "dtype"
    return None


class Int64HeavyCompute(Rule):
    """
    ## What it does
    Finds 64-bit integer tensors that feed whole-tensor arithmetic in code that runs every
    step: a `.long()`, `.to(torch.int64)` or `dtype=torch.long` whose result is directly an
    operand of `+ - * // % @` with another device tensor, or of a scan or product
    (`.cumsum()`, `.cumprod()`, `torch.matmul`, `torch.einsum`...). Not reported: integer
    tensors used as indices, embedding inputs, `gather`/`scatter` indices or loss targets
    (many PyTorch APIs require int64 there), values whose name says they are indices,
    labels, positions or ids, reductions to a count (`mask.long().sum()`: cheap
    bookkeeping), arithmetic with a scalar, and tensors filled with a constant or a range
    (`torch.ones(B, dtype=torch.long) * blank_id`, `torch.arange(...)`).

    ## Why is this bad on TPU?
    TPU vector units have no 64-bit integer arithmetic: XLA emulates int64 operations with
    pairs of 32-bit ones, so int64 sums, products and cumulative sums cost several times
    their int32 versions, and int64 tensors take twice the memory bandwidth. torch_xla used
    to offer `XLA_USE_32BIT_LONG` to downcast them for this reason. Counting and masking
    arithmetic is just as exact in int32 (up to 2^31) or float32 (up to 2^24).

    ## Example
    ```python
    import lightning as L


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            x, mask = batch
            run_lengths = (x > 0).long().cumsum(dim=1)
            return self(x, run_lengths * mask).sum()
    ```

    ## Use instead
    ```python
    import lightning as L


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            x, mask = batch
            run_lengths = (x > 0).int().cumsum(dim=1)
            return self(x, run_lengths * mask).sum()
    ```

    ## Fix safety
    Display-only: the suggestion uses int32 (`.int()`, `torch.int32`), which is exact below
    2^31; whether the values can grow past that, or feed an API that requires int64, is for
    the user to judge.

    ## References
    - [torch_xla troubleshooting (historic): `XLA_USE_32BIT_LONG`, 64-bit integers are expensive](https://github.com/pytorch/xla/blob/master/TROUBLESHOOTING.md)
    - [pytorch/xla#8571: re-introduce `XLA_USE_32BIT_LONG`](https://github.com/pytorch/xla/pull/8571)
    - [Cloud TPU performance guide](https://cloud.google.com/tpu/docs/performance-guide)
    """

    code = "TPU902"
    hot_only = True
    name = "int64-heavy-compute"
    summary = "64-bit integer arithmetic on tensors in code that runs every step"
    severity = Severity.INFO
    fix_applicability = Applicability.DISPLAY_ONLY
    fix_message = "Use int32"
    default_enabled = False
    requires = (".long()", "torch.long", "torch.int64", "LongTensor")

    VALID = (
        # Indices and targets must stay int64.
        Valid(
            _HEAD9 + "    def training_step(self, batch, batch_idx):\n"
            "        x, y = batch\n"
            "        emb = self.embed(x.long())\n"
            "        return F.cross_entropy(self.head(emb), y.long())\n"
        ),
        Valid(
            _HEAD9 + "    def forward(self, x, idx):\n"
            "        return x.gather(1, idx.long()) + x[idx.long()]\n"
        ),
        Valid(
            _HEAD9 + "    def forward(self, x):\n"
            "        positions = torch.arange(x.shape[1], dtype=torch.long)\n"
            "        return self.pos(positions) + x\n"
        ),
        # Counting is cheap bookkeeping, and filled tensors are ids or lengths.
        Valid(
            _HEAD9 + "    def training_step(self, batch, batch_idx):\n"
            "        x, mask = batch\n"
            "        n_tokens = mask.long().sum()\n"
            "        blank = torch.ones(x.shape[0], dtype=torch.long, device=x.device) * 3\n"
            "        return self(x, blank).sum() / n_tokens\n"
        ),
        # Not hot: once per epoch.
        Valid(
            _HEAD9 + "    def on_train_epoch_end(self):\n"
            "        self.total = self.counts.long().sum()\n"
        ),
    )
    INVALID = (
        Invalid(
            _HEAD9 + "    def training_step(self, batch, batch_idx):\n"
            "        x, mask = batch\n"
            "        run_lengths = (x > 0).long().cumsum(dim=1)\n"
            "        return self(x, run_lengths * mask).sum()\n",
            line=9,
            message="int64",
            expected_suggestion=_HEAD9 + "    def training_step(self, batch, batch_idx):\n"
            "        x, mask = batch\n"
            "        run_lengths = (x > 0).int().cumsum(dim=1)\n"
            "        return self(x, run_lengths * mask).sum()\n",
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Hash(nn.Module):\n"
            "    def forward(self, x, salt):\n"
            "        return (x * 1000).long() * salt.long() + x.long()\n",
            message="and in the same statement: `salt.long()`, `x.long()`",
            line=7,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if not ctx.in_hot_code:
            return
        kind = _long_conversion(ctx, node)
        if kind is None:
            return
        if kind != "dtype" and not ctx.value_kind(node.func.value).may_be_device:  # type: ignore[union-attr]
            return
        if kind == "dtype" and (ctx.qualify(node.func) or "") in _FILL_FACTORIES:
            return
        receiver = node.func.value if isinstance(node.func, cst.Attribute) else None
        if (
            receiver is not None
            and isinstance(receiver, cst.Call)
            and ((ctx.qualify(receiver.func) or "") in _FILL_FACTORIES)
        ):
            return  # torch.ones(B).long() * n: a filled tensor of ids or lengths
        if not self._feeds_arithmetic(node) or self._index_like(node):
            return
        message = (
            f"`{source_of(ctx, node)}` in {ctx.hot_reason} feeds int64 arithmetic, which TPUs "
            "emulate with pairs of int32 operations; use int32 (`.int()`, `torch.int32`) for "
            "counts and masks"
        )
        self.report(node, message, replacement=_int32_version(ctx, node, kind))

    def _feeds_arithmetic(self, node: cst.Call) -> bool:
        ctx = self.ctx
        parent = ctx.parent(node)
        if isinstance(parent, cst.BinaryOperation) and isinstance(
            parent.operator, _ARITHMETIC_OPERATORS
        ):
            # Elementwise work with another device tensor (not with a scalar or a size).
            other = parent.right if parent.left is node else parent.left
            return ctx.value_kind(other) is ValueKind.DEVICE and not isinstance(
                other, (cst.Integer, cst.Float)
            )
        if isinstance(parent, cst.Attribute) and parent.value is node:
            call = ctx.parent(parent)
            return (
                isinstance(call, cst.Call)
                and call.func is parent
                and parent.attr.value in _ARITHMETIC_METHODS
            )
        if isinstance(parent, cst.Arg):
            call = ctx.parent(parent)
            return (
                isinstance(call, cst.Call) and (ctx.qualify(call.func) or "") in _ARITHMETIC_FUNCS
            )
        return False

    def _index_like(self, node: cst.Call) -> bool:
        ctx = self.ctx
        names: list[str] = []
        func = node.func
        if isinstance(func, cst.Attribute):
            receiver = func.value
            if isinstance(receiver, cst.Name):
                names.append(receiver.value)
            elif isinstance(receiver, cst.Attribute):
                names.append(receiver.attr.value)
        statement = ctx.enclosing_statement(node)
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign):
                    for target in small.targets:
                        if isinstance(target.target, cst.Name):
                            names.append(target.target.value)
                        elif isinstance(target.target, cst.Attribute):
                            names.append(target.target.attr.value)
        for ancestor in ctx.ancestors(node):
            if isinstance(ancestor, (cst.SubscriptElement, cst.Index)):
                return True
            if isinstance(ancestor, cst.SimpleStatementLine):
                break
        return any(_INDEX_NAMES.search(name) and not _COUNT_NAMES.search(name) for name in names)


def _int32_version(ctx, node: cst.Call, kind: str) -> cst.Call | None:
    if kind == "long()":
        assert isinstance(node.func, cst.Attribute)
        return node.with_changes(func=node.func.with_changes(attr=cst.Name("int")))
    torch_local = next((k for k, v in ctx.aliases.bindings.items() if v == "torch"), None)
    if torch_local is None:
        return None
    int32 = cst.parse_expression(f"{torch_local}.int32")
    args = []
    for arg in node.args:
        if ctx.qualify(arg.value) in _LONG_DTYPES and (
            arg.keyword is None or arg.keyword.value == "dtype"
        ):
            arg = arg.with_changes(value=int32)
        args.append(arg)
    return node.with_changes(args=args)

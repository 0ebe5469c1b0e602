"""TPU9xx: opt-in checks (off by default)."""

from __future__ import annotations

import math
import re

import libcst as cst

from tpulint.analysis.context import get_arg
from tpulint.analysis.values import ValueKind
from tpulint.cst_helpers import int_value, keyword_arg
from tpulint.diagnostics import Applicability, Edit, Severity
from tpulint.rule import Invalid, Rule, Valid
from tpulint.yaml_config import YamlDocument, YamlEntry

from ._common import is_trainer_call, source_of
from ._config_helpers import (
    TpuFileScan,
    is_framework_file,
    is_lightning_name,
    trainer_is_tpu,
    yaml_trainer_is_tpu,
)

_HEAD9 = (
    "import lightning as L\nimport torch\nimport torch.nn.functional as F\n\n\n"
    "class Model(L.LightningModule):\n"
)

# --- TPU901 --------------------------------------------------------------------------------

_MIN_INTERVAL = 10  # below this, Lightning reads logged tensors on (nearly) every step
_SUGGESTED_INTERVAL = 50  # Lightning's default `log_every_n_steps`
_PROGRESS_BARS = frozenset({"TQDMProgressBar", "RichProgressBar"})


class PerStepLoggingFrequency(Rule):
    """
    ## What it does
    Finds logging and progress-bar settings that read metrics on (nearly) every training
    step in TPU setups: `Trainer(log_every_n_steps=N)` and
    `TQDMProgressBar(refresh_rate=N)` / `RichProgressBar(refresh_rate=N)` with `N` below
    10 (an explicit progress bar without `refresh_rate` counts as 1, its default), in files
    that build a TPU Trainer or import torch_xla, and the same keys in LightningCLI YAML
    configs whose trainer is a TPU one. The Trainer's implicit progress bar is not reported.

    ## Why is this bad on TPU?
    Logged values stay on the TPU until Lightning needs them; every logging step (and every
    progress-bar refresh that shows `prog_bar=True` metrics) converts them to Python numbers,
    which waits for the device and copies to the host. Every few steps this stalls the
    pipeline that lets the host trace step N+1 while the TPU runs step N, and Lightning
    users have reported the TQDM refresh triggering extra compilations
    (Lightning#15743, #15884). torch_xla's advice is to reduce logging frequency
    (pytorch/xla#5058).

    ## Example
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="tpu", devices="auto", log_every_n_steps=1)
    ```

    ## Use instead
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="tpu", devices="auto", log_every_n_steps=50)
    ```

    ## Fix safety
    Display-only: the suggestion uses 50 (Lightning's default for `log_every_n_steps`); how
    often to log is a trade-off only the user can make. The threshold is 10: intervals of
    10 or more steps spread the cost over enough steps to be a minor share of the run.

    ## References
    - [Lightning#15743: TQDMProgressBar refresh forces TPU recompiles](https://github.com/Lightning-AI/pytorch-lightning/issues/15743)
    - [Lightning#15884: callbacks reading lazy tensors on TPU](https://github.com/Lightning-AI/pytorch-lightning/issues/15884)
    - [pytorch/xla#5058: reduce logging frequency on TPU](https://github.com/pytorch/xla/issues/5058)
    - [Lightning docs: logging frequency](https://lightning.ai/docs/pytorch/stable/extensions/logging.html)
    """

    code = "TPU901"
    name = "per-step-logging-frequency"
    summary = "Logging or progress-bar refresh on (nearly) every step in TPU setups"
    severity = Severity.WARNING
    fix_applicability = Applicability.DISPLAY_ONLY
    fix_message = f"Log every {_SUGGESTED_INTERVAL} steps"
    default_enabled = False
    requires = ("log_every_n_steps", "ProgressBar")

    VALID = (
        Valid(
            "import lightning as L\n\n"
            'trainer = L.Trainer(accelerator="tpu", log_every_n_steps=50)\n'
        ),
        # A GPU Trainer: per-step logging costs little there.
        Valid(
            'import lightning as L\n\ntrainer = L.Trainer(accelerator="gpu", log_every_n_steps=1)\n'
        ),
        Valid(
            "import torch_xla\nfrom lightning.pytorch.callbacks import TQDMProgressBar\n\n"
            "bar = TQDMProgressBar(refresh_rate=100)\n"
        ),
        Valid("trainer:\n  accelerator: tpu\n  log_every_n_steps: 50\n", path="config.yaml"),
    )
    INVALID = (
        Invalid(
            "import lightning as L\n\n"
            'trainer = L.Trainer(accelerator="tpu", log_every_n_steps=1)\n',
            line=3,
            message="every step",
            expected_suggestion="import lightning as L\n\n"
            'trainer = L.Trainer(accelerator="tpu", log_every_n_steps=50)\n',
        ),
        Invalid(
            "import lightning as L\nfrom lightning.pytorch.callbacks import TQDMProgressBar\n\n"
            'trainer = L.Trainer(accelerator="tpu", callbacks=[TQDMProgressBar()])\n',
            message="refresh_rate",
        ),
        Invalid(
            "trainer:\n  accelerator: tpu\n  log_every_n_steps: 2\n"
            "  callbacks:\n    - class_path: lightning.pytorch.callbacks.TQDMProgressBar\n"
            "      init_args:\n        refresh_rate: 1\n",
            path="config.yaml",
            count=2,
            line=3,
        ),
    )

    def visit_Module(self, node: cst.Module) -> bool | None:
        self._tpu_file = TpuFileScan()
        return None

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if is_framework_file(ctx):
            return
        if is_trainer_call(ctx, node):
            arg = keyword_arg(node, "log_every_n_steps")
            value = int_value(arg.value) if arg is not None else None
            if arg is None or value is None or not 0 < value < _MIN_INTERVAL:
                return
            if not (
                trainer_is_tpu(ctx, node) or (self._tpu_file(ctx) and not _other_accelerator(node))
            ):
                return
            self.report(
                arg,
                _interval_message(f"log_every_n_steps={value}", value, "logged metrics"),
                replacement=arg.with_changes(value=cst.Integer(str(_SUGGESTED_INTERVAL))),
            )
            return
        if not is_lightning_name(ctx, node.func, _PROGRESS_BARS) or not self._tpu_file(ctx):
            return
        arg = get_arg(node, "refresh_rate", 0)
        if arg is None:
            self.report(
                node,
                _interval_message(
                    f"{source_of(ctx, node)} (refresh_rate=1, the default)",
                    1,
                    "progress-bar metrics",
                ),
            )
            return
        value = int_value(arg.value)
        if value is None or not 0 < value < _MIN_INTERVAL:
            return
        self.report(
            arg,
            _interval_message(f"refresh_rate={value}", value, "progress-bar metrics"),
            replacement=arg.with_changes(value=cst.Integer(str(_SUGGESTED_INTERVAL))),
        )

    def check_yaml(self, document: YamlDocument) -> None:
        trainer = document.find("trainer")
        if trainer is None or not yaml_trainer_is_tpu(trainer):
            return
        entry = trainer.child("log_every_n_steps")
        if entry is not None:
            self._yaml_interval(entry, "log_every_n_steps", "logged metrics")
        for item in document.callbacks():
            class_path = item.child("class_path")
            if class_path is None or str(class_path.value).rsplit(".", 1)[-1] not in _PROGRESS_BARS:
                continue
            rate = item.argument("refresh_rate")
            if rate is None:
                self.report_yaml(
                    class_path.key_start,
                    class_path.value_end or class_path.key_end,
                    _interval_message(
                        f"{class_path.value} (refresh_rate=1, the default)",
                        1,
                        "progress-bar metrics",
                    ),
                )
            else:
                self._yaml_interval(rate, "refresh_rate", "progress-bar metrics")

    def _yaml_interval(self, entry: YamlEntry, key: str, what: str) -> None:
        value = entry.value
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < _MIN_INTERVAL:
            return
        if entry.value_start is None or entry.value_end is None:
            return
        self.report_yaml(
            entry.key_start,
            entry.value_end,
            _interval_message(f"{key}: {value}", value, what),
            edits=[Edit(entry.value_start, entry.value_end, str(_SUGGESTED_INTERVAL))],
        )


def _other_accelerator(call: cst.Call) -> bool:
    accelerator = keyword_arg(call, "accelerator")
    if accelerator is None:
        return False
    from tpulint.cst_helpers import string_value

    value = string_value(accelerator.value)
    return value is not None and value.lower() not in ("tpu", "auto")


def _interval_message(code: str, value: int, what: str) -> str:
    every = "every step" if value == 1 else f"every {value} steps"
    return (
        f"`{code}` reads {what} from the TPU {every}: each read waits for the device and copies "
        f"to the host, stalling the step pipeline; use {_SUGGESTED_INTERVAL} or more"
    )


# --- TPU902 --------------------------------------------------------------------------------

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
            count=3,
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


# --- TPU903 --------------------------------------------------------------------------------

_MXU = 128
_MIN_WASTE = 0.10  # report when at least 10% of the padded width is padding
_LAYERS = {
    # qualified name: (positional indices of feature widths, their keywords)
    "torch.nn.Linear": ((0, 1), ("in_features", "out_features")),
    "torch.nn.modules.linear.Linear": ((0, 1), ("in_features", "out_features")),
    "torch.nn.LazyLinear": ((0,), ("out_features",)),
    "torch.nn.Bilinear": ((2,), ("out_features",)),
    "torch.nn.Embedding": ((1,), ("embedding_dim",)),
    "torch.nn.EmbeddingBag": ((1,), ("embedding_dim",)),
}
for _conv in (
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
):
    _LAYERS[f"torch.nn.{_conv}"] = ((0, 1), ("in_channels", "out_channels"))
_HEAD_NAMES = re.compile(
    r"(?i)(head|classifier|logits?$|to_logits|^cls$|_cls$|output_layer|fc_out|final|num_classes)"
)


def _padded(width: int) -> int:
    return math.ceil(width / _MXU) * _MXU


def _nearest_multiple(width: int) -> int:
    lower = max(_MXU, width // _MXU * _MXU)
    upper = _padded(width)
    return lower if width - lower <= upper - width else upper


class LayerWidthNotMultipleOf128(Rule):
    """
    ## What it does
    Finds literal feature widths of `nn.Linear` (in and out features), `nn.Conv*d` /
    `nn.ConvTranspose*d` (in and out channels) and `nn.Embedding` (embedding dimension) that
    are not multiples of 128 and waste at least 10% of the padded width: `nn.Linear(512,
    300)` (300 is padded to 384: 22% padding) is reported, `nn.Linear(512, 1000)` (1000 is
    padded to 1024: 2%) is not. Widths below 128 are not reported (small layers and output
    heads such as the number of classes cannot fill the matrix unit anyway), nor are the
    output widths of layers named like heads (`self.classifier`, `self.head`,
    `logits`). Widths from variables and config values are not seen.

    ## Why is this bad on TPU?
    The TPU's matrix unit (MXU) multiplies 128x128 tiles, and XLA lays the feature
    dimension of every tensor out in 128-wide lanes: a width of 300 is computed and stored
    as 384, so 22% of that layer's multiply-accumulates and memory traffic are padding. The
    Cloud TPU performance guide recommends feature dimensions that are multiples of 128.

    ## Example
    ```python
    from torch import nn

    mlp = nn.Sequential(nn.Linear(512, 300), nn.ReLU(), nn.Linear(300, 512))
    ```

    ## Use instead
    ```python
    from torch import nn

    mlp = nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 512))
    ```

    ## Fix safety
    Display-only: the suggestion rounds the width to the nearest multiple of 128, which
    changes the model (its capacity and the shapes of its checkpoints).

    ## References
    - [Cloud TPU performance guide: tensor dimensions and padding](https://cloud.google.com/tpu/docs/performance-guide)
    - [Cloud TPU docs: system architecture (MXU)](https://cloud.google.com/tpu/docs/system-architecture-tpu-vm)
    """

    code = "TPU903"
    name = "layer-width-not-multiple-of-128"
    summary = "Literal layer widths that pad the TPU's 128-wide matrix unit by 10% or more"
    severity = Severity.INFO
    fix_applicability = Applicability.DISPLAY_ONLY
    fix_message = "Round the width to a multiple of 128"
    default_enabled = False
    requires = ("Linear", "Conv", "Embedding")

    VALID = (
        Valid("from torch import nn\n\nlayer = nn.Linear(512, 1024)\n"),
        # Small layers and class-count heads.
        Valid("from torch import nn\n\nhead = nn.Linear(64, 10)\nconv = nn.Conv2d(3, 64, 3)\n"),
        # 1000 is padded to 1024: only 2% waste.
        Valid("from torch import nn\n\nlayer = nn.Linear(2048, 1000)\n"),
        Valid(
            "import torch\n\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.classifier = torch.nn.Linear(512, 200)\n"
        ),
    )
    INVALID = (
        Invalid(
            "from torch import nn\n\n"
            "mlp = nn.Sequential(nn.Linear(512, 300), nn.ReLU(), nn.Linear(300, 512))\n",
            count=2,
            line=3,
            message="padded to 384",
            expected_suggestion="from torch import nn\n\n"
            "mlp = nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 512))\n",
        ),
        Invalid(
            "import torch.nn as nn\n\nemb = nn.Embedding(30000, embedding_dim=200)\n", message="200"
        ),
        Invalid(
            "import torch\n\n"
            "conv = torch.nn.Conv2d(in_channels=160, out_channels=256, kernel_size=3)\n"
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        qualified = ctx.qualify(node.func)
        spec = _LAYERS.get(qualified or "")
        if spec is None:
            return
        positions, keywords = spec
        head = self._head_like(node)
        for position, keyword in zip(positions, keywords, strict=True):
            arg = get_arg(node, keyword, position)
            if arg is None:
                continue
            width = int_value(arg.value)
            if width is None or width <= _MXU or width % _MXU == 0:
                continue
            padded = _padded(width)
            waste = (padded - width) / padded
            if waste < _MIN_WASTE:
                continue
            if head and keyword.startswith("out"):
                continue
            suggestion = _nearest_multiple(width)
            self.report(
                arg.value,
                f"width {width} in `{source_of(ctx, node)}` is padded to {padded} on the TPU's "
                f"128-wide matrix unit ({waste:.0%} of its work is padding); use a multiple of "
                f"128 such as {suggestion}",
                replacement=cst.Integer(str(suggestion)),
            )

    def _head_like(self, node: cst.Call) -> bool:
        ctx = self.ctx
        parent = ctx.parent(node)
        if isinstance(parent, cst.Assign):
            for target in parent.targets:
                name = target.target
                text = (
                    name.attr.value
                    if isinstance(name, cst.Attribute)
                    else (name.value if isinstance(name, cst.Name) else "")
                )
                if _HEAD_NAMES.search(text):
                    return True
        return False

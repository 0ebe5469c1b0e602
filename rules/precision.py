"""TPU4xx: precision and dtypes."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.project import FileView
from tpulint.cst_helpers import add_keyword, keyword_arg, string_value
from tpulint.diagnostics import Applicability, Severity
from tpulint.rule import FixSpec, Invalid, Rule, Valid

from ._common import is_trainer_call, source_of, walk
from ._config_helpers import (
    TpuFileScan,
    device_guarded,
    env_accesses,
    is_framework_file,
    trainer_is_tpu,
    trainer_tpu,
)

_BF16_ENV = ("XLA_USE_BF16", "XLA_DOWNCAST_BF16")
_TRUE_VALUES = ("1", "true", "True", "TRUE", "yes")


def _truthy_literal(node: cst.BaseExpression | None) -> bool | None:
    """True/False for a literal env value ("1", 1, "0"), None when not a literal."""
    if node is None:
        return None
    if isinstance(node, cst.Integer):
        return node.value != "0"
    text = string_value(node)
    if text is None:
        return None
    return text.strip() in _TRUE_VALUES


def _delete_and_replace(
    ctx, statement: cst.SimpleStatementLine, old: cst.CSTNode, new: cst.CSTNode
) -> list:
    """Replacements that delete `statement` (its leading blank lines and comments move to the
    next statement; `pass` if it is alone in its block) and replace `old` with `new`."""
    block = ctx.parent(statement)
    body = list(block.body) if isinstance(block, (cst.IndentedBlock, cst.Module)) else []
    if isinstance(block, cst.IndentedBlock) and len(body) == 1:
        return [(statement, statement.with_changes(body=[cst.Pass()])), (old, new)]
    index = next((i for i, s in enumerate(body) if s is statement), None)
    following = body[index + 1] if index is not None and index + 1 < len(body) else None
    if following is None or not statement.leading_lines:
        return [(statement, cst.RemovalSentinel.REMOVE), (old, new)]
    lines = [*statement.leading_lines, *following.leading_lines]
    if any(n is old for n in walk(following)):
        moved = following.deep_replace(old, new).with_changes(leading_lines=lines)
        return [(statement, cst.RemovalSentinel.REMOVE), (following, moved)]
    return [
        (statement, cst.RemovalSentinel.REMOVE),
        (following, following.with_changes(leading_lines=lines)),
        (old, new),
    ]


class DeprecatedBf16Env(Rule):
    """
    ## What it does
    Finds code that turns on bfloat16 through torch_xla's environment variables
    `XLA_USE_BF16` and `XLA_DOWNCAST_BF16`: `os.environ["XLA_USE_BF16"] = "1"`,
    `os.environ.setdefault(...)`, `os.putenv(...)`, `os.environ.update(...)` and environment
    dictionaries passed to subprocesses.

    ## Why is this bad on TPU?
    The variables are deprecated: torch_xla 2.9 prints "XLA_USE_BF16 will be deprecated after
    the 2.6 release, please convert your model to bf16 directly", and their removal is
    scheduled (pytorch/xla#8474, #8915). They also act behind PyTorch's back: every `float32`
    tensor becomes bfloat16 on the device while PyTorch still reports `float32`, which
    confuses dtype checks, metrics and checkpoints. In Lightning, `precision="bf16-true"`
    asks for the same thing and lets the XLA precision plugin manage it; in plain torch_xla
    code, convert the model (`model.to(torch.bfloat16)`) or use
    `torch.autocast("xla", dtype=torch.bfloat16)`.

    ## Example
    ```python
    import os

    import lightning as L

    os.environ["XLA_USE_BF16"] = "1"
    trainer = L.Trainer(accelerator="tpu", devices="auto")
    ```

    ## Use instead
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="tpu", devices="auto", precision="bf16-true")
    ```

    ## Fix safety
    When the file builds exactly one Lightning Trainer that runs on TPUs (or picks its
    accelerator automatically), the fix deletes the environment assignment and sets
    `precision="bf16-true"` on that Trainer. It is unsafe: the variable was process-wide
    (also for code outside the Trainer), and Lightning converts the module's parameters to
    bfloat16 itself instead of leaving them `float32` on the host side. Without a Trainer in
    the file (plain torch_xla loops, launch scripts) there is no automatic fix: the
    replacement (`model.to(torch.bfloat16)` or autocast) depends on the training loop.
    Assignments that turn the variable off (`"0"`) and Lightning's own source (its XLA
    precision plugin sets the variable) are not reported.

    ## References
    - [pytorch/xla#7150: deprecate XLA_USE_BF16](https://github.com/pytorch/xla/pull/7150)
    - [pytorch/xla#8474: deprecation plan for XLA_USE_BF16](https://github.com/pytorch/xla/pull/8474)
    - [torch_xla docs: automatic mixed precision on XLA (bf16 autocast)](https://github.com/pytorch/xla/blob/master/docs/source/perf/amp.md)
    - [Lightning source: `XLAPrecision` ("bf16-true")](https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/plugins/precision/xla.py)
    """

    code = "TPU401"
    name = "deprecated-bf16-env"
    summary = (
        "bfloat16 through the deprecated `XLA_USE_BF16` / `XLA_DOWNCAST_BF16` environment variables"
    )
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = 'Use `precision="bf16-true"` on the Trainer'
    requires = _BF16_ENV

    VALID = (
        # A GPU training script: the variable does nothing there, and is not a TPU problem.
        Valid(
            "import os\n\nimport pytorch_lightning as pl\n\n"
            'os.environ["XLA_USE_BF16"] = "1"\n'
            "trainer = pl.Trainer(tpu_cores=None, gpus=1)\n"
        ),
        Valid('import os\n\nos.environ["XLA_USE_BF16"] = "0"\n'),
        Valid('import os\n\nif os.environ.get("XLA_USE_BF16") == "1":\n    print("bf16")\n'),
        Valid(
            "import lightning as L\n\n"
            'trainer = L.Trainer(accelerator="tpu", precision="bf16-true")\n'
        ),
    )
    INVALID = (
        Invalid(
            "import os\n\nimport lightning as L\n\n"
            'os.environ["XLA_USE_BF16"] = "1"\n'
            'trainer = L.Trainer(accelerator="tpu", devices="auto")\n',
            expected_fix="import os\n\nimport lightning as L\n\n"
            'trainer = L.Trainer(accelerator="tpu", devices="auto", precision="bf16-true")\n',
            line=5,
            applicability=Applicability.UNSAFE,
            message="deprecated",
        ),
        # A precision the Trainer already had is replaced.
        Invalid(
            "import os\nimport pytorch_lightning as pl\n\n\ndef main():\n"
            '    os.environ.setdefault("XLA_DOWNCAST_BF16", "1")\n'
            "    trainer = pl.Trainer(tpu_cores=8, precision=32)\n"
            "    trainer.fit(Model())\n",
            expected_fix="import os\nimport pytorch_lightning as pl\n\n\ndef main():\n"
            '    trainer = pl.Trainer(tpu_cores=8, precision="bf16-true")\n'
            "    trainer.fit(Model())\n",
        ),
        # A plain torch_xla script: no Trainer to move the setting to.
        Invalid(
            "import os\nimport torch_xla.core.xla_model as xm\n\n"
            "os.environ['XLA_USE_BF16'] = '1'\n"
            "device = xm.xla_device()\n",
            message="model.to(torch.bfloat16)",
        ),
        Invalid(
            "import subprocess\n\n"
            'subprocess.run(["python", "train.py"], env={"XLA_USE_BF16": "1"})\n',
        ),
    )

    def visit_Module(self, node: cst.Module) -> bool | None:
        self._enabled = not is_framework_file(self.ctx)
        self._trainers: list[cst.Call] | None = None
        return None

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._enabled:
            self._env(node)

    def visit_Call(self, node: cst.Call) -> None:
        if self._enabled:
            self._env(node)

    def visit_DictElement(self, node: cst.DictElement) -> None:
        if not self._enabled:
            return
        name = string_value(node.key)
        if name not in _BF16_ENV or _truthy_literal(node.value) is False:
            return
        if self._gpu_script():
            return
        holder = self.ctx.parent(self.ctx.parent(node) or node)
        call = self.ctx.parent(holder) if isinstance(holder, cst.Arg) else None
        if isinstance(call, cst.Call) and self.ctx.qualify(call.func) == "os.environ.update":
            return  # reported as an environment write
        self.report(node.key, self._message(name, has_trainer=False))

    def _gpu_script(self) -> bool:
        """The file builds Trainers and none of them can run on TPUs (`accelerator="gpu"`,
        `gpus=1`, `tpu_cores=None`): the variable is not this run's business."""
        self._single_trainer()
        trainers = self._trainers or []
        return bool(trainers) and all(trainer_tpu(self.ctx, t) == "no" for t in trainers)

    def _env(self, node: cst.CSTNode) -> None:
        if any(True for _ in env_accesses(self.ctx, node)) and self._gpu_script():
            return
        for access in env_accesses(self.ctx, node):
            if access.name not in _BF16_ENV or access.kind == "read":
                continue
            truthy = _truthy_literal(access.value)
            if truthy is False:
                continue
            statement = self._whole_statement(node)
            trainer = self._single_trainer()
            fix = None
            if truthy and trainer is not None and access.kind != "update" and statement is not None:
                fix = FixSpec(
                    Applicability.UNSAFE,
                    self.fix_title(),
                    _delete_and_replace(self.ctx, statement, trainer, _with_bf16(trainer)),
                )
            report_node = node if access.kind == "assign" else access.key
            self.report(
                report_node, self._message(access.name, has_trainer=trainer is not None), fix=fix
            )

    def _whole_statement(self, node: cst.CSTNode) -> cst.SimpleStatementLine | None:
        """The statement line that consists of `node` alone (an assignment or a call)."""
        parent = self.ctx.parent(node)
        if isinstance(parent, cst.Expr) and parent.value is node:
            parent = self.ctx.parent(parent)
        if isinstance(parent, cst.SimpleStatementLine) and len(parent.body) == 1:
            return parent
        return None

    def _message(self, name: str, has_trainer: bool) -> str:
        head = (
            f'`{name}` is deprecated in torch_xla ("will be deprecated after the 2.6 release") and '
            "silently stores float32 tensors as bfloat16 on the device"
        )
        if has_trainer:
            return head + '; set `precision="bf16-true"` on the Trainer instead'
        return (
            head + '; with Lightning use `Trainer(precision="bf16-true")`, in plain torch_xla '
            'code `model.to(torch.bfloat16)` or `torch.autocast("xla", dtype=torch.bfloat16)`'
        )

    def _single_trainer(self) -> cst.Call | None:
        """The file's only Lightning Trainer call, when it can run on TPUs."""
        if self._trainers is None:
            ctx = self.ctx
            self._trainers = [
                n for n in walk(ctx.module) if isinstance(n, cst.Call) and is_trainer_call(ctx, n)
            ]
        if len(self._trainers) != 1:
            return None
        trainer = self._trainers[0]
        accelerator = keyword_arg(trainer, "accelerator")
        if accelerator is not None and not trainer_is_tpu(self.ctx, trainer):
            value = string_value(accelerator.value)
            if value != "auto":
                return None
        if any(arg.star for arg in trainer.args):
            return None
        return trainer


def _with_bf16(trainer: cst.Call) -> cst.Call:
    arg = keyword_arg(trainer, "precision")
    if arg is None:
        return add_keyword(trainer, "precision", '"bf16-true"')
    args = [
        a.with_changes(value=cst.SimpleString('"bf16-true"')) if a is arg else a
        for a in trainer.args
    ]
    return trainer.with_changes(args=args)


# --- TPU402 --------------------------------------------------------------------------------

_SCALERS = frozenset(
    {
        "torch.cuda.amp.GradScaler",
        "torch.cuda.amp.grad_scaler.GradScaler",
        "torch.amp.GradScaler",
        "torch.amp.grad_scaler.GradScaler",
    }
)
_CUDA_AUTOCASTS = frozenset({"torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode.autocast"})
_GENERIC_AUTOCASTS = frozenset(
    {"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"}
)
_HALF_DTYPES = frozenset({"torch.float16", "torch.half"})
_FULL_DTYPES = frozenset({"torch.float32", "torch.float", "torch.float64", "torch.double"})


class CudaAmpOnTpu(Rule):
    """
    ## What it does
    Finds CUDA automatic mixed precision in code that targets TPUs:
    `torch.cuda.amp.GradScaler()` / `torch.amp.GradScaler("cuda")`,
    `torch.cuda.amp.autocast()` and `torch.autocast("cuda")` (also as decorators and
    `with` items). A file targets TPUs when it imports `torch_xla` or builds a Lightning
    Trainer for TPUs (`accelerator="tpu"`, `tpu_cores`, an XLA strategy); the same calls in
    GPU projects are right and are not reported. Code under a device check
    (`if torch.cuda.is_available():`, `if device.type == "cuda":`) and autocast regions that
    switch autocast off (`enabled=False`) or force float32 are not reported either.

    ## Why is this bad on TPU?
    CUDA autocast only affects CUDA tensors: on XLA tensors `torch.autocast("cuda")` does
    nothing, so the step silently runs in float32, at a fraction of the TPU's bfloat16
    throughput. Loss scaling exists for float16's narrow range: bfloat16 has float32's
    exponent range and needs none ("gradient scaling is not necessary" in torch_xla's AMP
    guide), and a CUDA `GradScaler` on a TPU host disables itself with a warning, leaving
    dead code around every backward and optimizer step.

    ## Example
    ```python
    import torch
    import torch_xla.core.xla_model as xm


    def train_step(model, batch, optimizer):
        with torch.autocast("cuda"):
            loss = model(batch)
        loss.backward()
        xm.optimizer_step(optimizer)
    ```

    ## Use instead
    ```python
    import torch
    import torch_xla.core.xla_model as xm


    def train_step(model, batch, optimizer):
        with torch.autocast("xla", dtype=torch.bfloat16):
            loss = model(batch)
        loss.backward()
        xm.optimizer_step(optimizer)
    ```

    ## Fix safety
    The fix rewrites a CUDA autocast to `torch.autocast("xla", dtype=torch.bfloat16)`
    (keeping `enabled=` and `cache_enabled=`; float16 becomes bfloat16) and is unsafe: the
    region now really runs in bfloat16 on the TPU, which changes the numerics. Gradient
    scalers are reported without a fix: removing one means rewriting
    `scaler.scale(loss).backward()`, `scaler.step(optimizer)` and `scaler.update()` into
    `loss.backward()` and `optimizer.step()` (or `xm.optimizer_step(optimizer)`), which
    depends on the training loop. In Lightning code, drop both and set
    `Trainer(precision="bf16-true")`.

    ## References
    - [torch_xla docs: automatic mixed precision (bf16 on TPU, no gradient scaling)](https://github.com/pytorch/xla/blob/master/docs/source/perf/amp.md)
    - [PyTorch docs: `torch.autocast` device types](https://pytorch.org/docs/stable/amp.html)
    - [Lightning docs: TPU precision ("bf16-true")](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_intermediate.html)
    """

    code = "TPU402"
    name = "cuda-amp-on-tpu"
    summary = "CUDA autocast or `GradScaler` in code that targets TPUs"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = 'Use `torch.autocast("xla", dtype=torch.bfloat16)`'
    requires = ("GradScaler", "autocast")

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        # Only TPU code: a file that imports torch_xla or builds a TPU Trainer.
        return any(token in source for token in ("tpu", "TPU", "xla", "XLA"))

    VALID = (
        # A GPU project: CUDA AMP is right there.
        Valid(
            "import torch\n\nscaler = torch.cuda.amp.GradScaler()\n"
            'with torch.autocast("cuda"):\n    pass\n'
        ),
        # Device-agnostic autocast.
        Valid(
            "import torch\nimport torch_xla\n\n\ndef step(model, x):\n"
            "    with torch.autocast(x.device.type, dtype=torch.bfloat16):\n"
            "        return model(x)\n"
        ),
        # Guarded by a device check.
        Valid(
            "import torch\nimport torch_xla\n\n"
            'scaler = torch.amp.GradScaler("cuda") if torch.cuda.is_available() else None\n'
        ),
        # Forcing float32 in a region.
        Valid(
            "import torch\nimport torch_xla\n\n\ndef f(x):\n"
            '    with torch.autocast("cuda", dtype=torch.float32):\n        return x @ x\n'
        ),
        # Switching autocast off (a float32 island) is harmless.
        Valid(
            "import torch\nimport torch_xla\n\n\ndef f(x):\n"
            "    with torch.cuda.amp.autocast(enabled=False):\n        return x.float()\n"
        ),
    )
    INVALID = (
        Invalid(
            "import torch\nimport torch_xla.core.xla_model as xm\n\n\n"
            "def train_step(model, batch, optimizer):\n"
            "    with torch.cuda.amp.autocast():\n"
            "        loss = model(batch)\n"
            "    loss.backward()\n",
            expected_fix="import torch\nimport torch_xla.core.xla_model as xm\n\n\n"
            "def train_step(model, batch, optimizer):\n"
            '    with torch.autocast("xla", dtype=torch.bfloat16):\n'
            "        loss = model(batch)\n"
            "    loss.backward()\n",
            line=6,
            applicability=Applicability.UNSAFE,
            message="does nothing",
        ),
        Invalid(
            "import torch\nimport torch_xla\n\n\n"
            "def f(model, x, use_amp):\n"
            "    with torch.autocast(device_type='cuda', dtype=torch.float16, enabled=use_amp):\n"
            "        return model(x)\n",
            expected_fix="import torch\nimport torch_xla\n\n\n"
            "def f(model, x, use_amp):\n"
            "    with torch.autocast('xla', dtype=torch.bfloat16, enabled=use_amp):\n"
            "        return model(x)\n",
        ),
        # torch.amp.GradScaler() defaults to "cuda".
        Invalid(
            "import torch\nimport torch_xla.core.xla_model as xm\n\n"
            "scaler = torch.amp.GradScaler()\n",
            message="GradScaler",
        ),
        # A TPU Lightning project with a hand-made scaler (no automatic fix).
        Invalid(
            "import lightning as L\nfrom torch.cuda.amp import GradScaler\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.scaler = GradScaler()\n\n\n"
            'trainer = L.Trainer(accelerator="tpu", devices="auto")\n',
            line=8,
            message="bfloat16",
        ),
    )

    def visit_Module(self, node: cst.Module) -> bool | None:
        self._tpu_file = TpuFileScan()
        self._enabled = not is_framework_file(self.ctx)
        return None

    def visit_Call(self, node: cst.Call) -> None:
        if not self._enabled:
            return
        ctx = self.ctx
        qualified = ctx.qualify(node.func)
        if qualified is None or not qualified.startswith("torch."):
            return
        if qualified in _SCALERS:
            if qualified.startswith("torch.amp.") and not self._cuda_device_arg(node, default=True):
                return
            if not self._applies(node):
                return
            self.report(
                node,
                f"`{source_of(ctx, node)}` scales the loss for float16 on CUDA: TPUs train in "
                "bfloat16, which needs no loss scaling, and a CUDA GradScaler disables itself "
                "without a GPU; remove the scaler (`loss.backward()`, `optimizer.step()`), or in "
                'Lightning set `precision="bf16-true"`',
            )
            return
        cuda_autocast = qualified in _CUDA_AUTOCASTS
        if not cuda_autocast and not (
            qualified in _GENERIC_AUTOCASTS and self._cuda_device_arg(node, default=False)
        ):
            return
        enabled = keyword_arg(node, "enabled")
        if (
            enabled is not None
            and isinstance(enabled.value, cst.Name)
            and enabled.value.value == "False"
        ):
            return
        dtype = keyword_arg(node, "dtype")
        dtype_name = ctx.qualify(dtype.value) if dtype is not None else None
        if dtype_name in _FULL_DTYPES:
            return
        if not self._applies(node):
            return
        message = (
            f"`{source_of(ctx, node)}` does nothing for XLA tensors, so this region runs in "
            'float32 on the TPU; use `torch.autocast("xla", dtype=torch.bfloat16)`'
        )
        replacement = self._xla_autocast(node, cuda_autocast)
        if replacement is None:
            self.report(node, message)
        else:
            self.report(node, message, replacement=replacement)

    def _applies(self, node: cst.Call) -> bool:
        return self._tpu_file(self.ctx) and not device_guarded(self.ctx, node)

    def _cuda_device_arg(self, node: cst.Call, default: bool) -> bool:
        """The device type argument is "cuda" (or missing, when `default`)."""
        arg = keyword_arg(node, "device_type") or keyword_arg(node, "device")
        if arg is None:
            positional = [a for a in node.args if a.keyword is None and not a.star]
            arg = positional[0] if positional else None
        if arg is None:
            return default
        value = string_value(arg.value)
        return value is not None and value.split(":", 1)[0] == "cuda"

    def _xla_autocast(self, node: cst.Call, cuda_autocast: bool) -> cst.Call | None:
        ctx = self.ctx
        if ctx.aliases.bindings.get("torch") != "torch":
            return None
        if any(a.star for a in node.args):
            return None
        quote = "'"
        kept: list[cst.Arg] = []
        positional = [a for a in node.args if a.keyword is None]
        if not cuda_autocast and positional:
            device = positional[0].value
            if isinstance(device, cst.SimpleString) and device.value.startswith('"'):
                quote = '"'
        elif not cuda_autocast:
            device_kw = keyword_arg(node, "device_type")
            if (
                device_kw is not None
                and isinstance(device_kw.value, cst.SimpleString)
                and device_kw.value.value.startswith('"')
            ):
                quote = '"'
        else:
            quote = '"'
        rest_positional = positional[1:] if not cuda_autocast else positional
        if rest_positional:
            return None  # positional dtype/enabled: keep it simple
        dtype_set = False
        for arg in node.args:
            if arg.keyword is None or arg.keyword.value in ("device_type",):
                continue
            if arg.keyword.value == "dtype":
                dtype_name = ctx.qualify(arg.value)
                if dtype_name in _HALF_DTYPES or dtype_name is None:
                    arg = arg.with_changes(value=cst.parse_expression("torch.bfloat16"))
                dtype_set = True
            kept.append(arg)
        new_args = [cst.Arg(cst.SimpleString(f"{quote}xla{quote}"))]
        if not dtype_set:
            new_args.append(
                cst.Arg(
                    cst.parse_expression("torch.bfloat16"),
                    keyword=cst.Name("dtype"),
                    equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
                )
            )
        new_args += [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in kept]
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        new_args = [a.with_changes(comma=comma) for a in new_args[:-1]] + [new_args[-1]]
        # dtype first, like the documented spelling.
        new_args.sort(
            key=lambda a: 0 if a.keyword is None else (1 if a.keyword.value == "dtype" else 2)
        )
        new_args = [a.with_changes(comma=comma) for a in new_args[:-1]] + [
            new_args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        ]
        return node.with_changes(func=cst.parse_expression("torch.autocast"), args=new_args)

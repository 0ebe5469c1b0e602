"""TPU401 deprecated-bf16-env."""

from __future__ import annotations

import libcst as cst

from tpulint.datatypes.diagnostics import Applicability, Severity
from tpulint.rule_api.cst_helpers import add_keyword, keyword_arg, string_value
from tpulint.rule_api.rule import FixSpec, Invalid, Rule, Valid

from ..shared.configuration import env_accesses, is_framework_file, trainer_is_tpu, trainer_tpu
from ..shared.matchers import is_trainer_call, walk

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

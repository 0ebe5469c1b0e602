"""TPU0xx: Lightning and Trainer configuration for TPUs."""

from __future__ import annotations

import re

import libcst as cst

from tpulint.analysis.imports import module_name_of
from tpulint.analysis.project import LIGHTNING_ROOTS, ClassKind, FileView
from tpulint.cst_helpers import (
    keyword_arg,
    make_arg,
    rename_keyword,
    replace_arg,
    string_value,
    strip_call_suffix,
)
from tpulint.diagnostics import Applicability, Edit, Severity
from tpulint.rule import ImportSpec, Invalid, Rule, Valid
from tpulint.yaml_config import YamlDocument

from ._common import (
    LEGACY_TPU_KEYWORDS,
    contains_trainer_call,
    is_literal,
    is_trainer_call,
    source_of,
    walk,
)
from ._config_helpers import (
    CLI_VALUE,
    XLA_STRATEGY_NAMES,
    Rename,
    device_guarded,
    env_accesses,
    is_framework_file,
    lightning_at_least,
    literal_candidates,
    literal_value,
    plan_renames,
    trainer_tpu,
    with_string_value,
    yaml_trainer_is_tpu,
)

_LIGHTNING_IMPORT = "import lightning as L\n\n"
_HEAD6 = "import lightning as L\nimport torch\n\n\nclass Model(L.LightningModule):\n"


class LegacyTpuCores(Rule):
    """
    ## What it does
    Finds the Trainer argument `tpu_cores` (and the older `num_tpu_cores`): in
    `Trainer(...)` calls, in dictionaries of Trainer arguments, in config classes that feed
    the Trainer, as parameters of functions that build a Trainer from them, and under
    `trainer:` in LightningCLI YAML configs.

    ## Why is this bad on TPU?
    `tpu_cores` was deprecated in Lightning 1.6 and removed in 2.0: `Trainer(tpu_cores=8)`
    raises `TypeError: Trainer.__init__() got an unexpected keyword argument 'tpu_cores'`,
    so the job fails before it reaches the TPU. The replacement is
    `accelerator="tpu", devices=N`.

    ## Example
    ```python
    import lightning as L

    trainer = L.Trainer(tpu_cores=8, max_epochs=3)
    ```

    ## Use instead
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="tpu", devices=8, max_epochs=3)
    ```

    ## Fix safety
    In a `Trainer(...)` call (or a YAML `trainer:` section) with a literal value (`8`, `[5]`,
    `"8"`), the fix rewrites
    `tpu_cores=N` to `accelerator="tpu", devices=N` and is safe: it is the exact mapping
    Lightning 1.7 to 1.9 applied itself. With a computed value the fix is unsafe, because
    `tpu_cores=None` or `0` meant "no TPU" while `accelerator="tpu"` always asks for one.
    Dictionary keys, config fields and parameters are reported without a fix: renaming them
    changes an interface.

    ## References
    - [Lightning 2.0 changelog: removed `tpu_cores` (#16171)](https://github.com/Lightning-AI/pytorch-lightning/pull/16171)
    - [Lightning docs: TPU basics](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_basic.html)
    """

    code = "TPU001"
    name = "legacy-tpu-cores"
    summary = "Removed Trainer argument `tpu_cores` / `num_tpu_cores`"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    fix_sometimes = True
    requires = LEGACY_TPU_KEYWORDS
    fix_message = 'Replace with `accelerator="tpu", devices=...`'

    VALID = (
        Valid(_LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="tpu", devices=8)\n'),
        # Not a Trainer: plumbing that merely forwards a value of the same name.
        Valid(
            "class Connector:\n"
            "    def __init__(self, tpu_cores=None):\n"
            "        self._check(tpu_cores=tpu_cores)\n"
        ),
        # The modern spelling in a LightningCLI config.
        Valid("trainer:\n  accelerator: tpu\n  devices: auto\n", path="config.yaml"),
        # A YAML file that is not a LightningCLI config.
        Valid("jobs:\n  tpu_cores: 8\n", path="ci.yaml"),
        # A local variable that happens to have the name.
        Valid(_LIGHTNING_IMPORT + "num_tpu_cores = 0\nprint(num_tpu_cores)\n"),
    )
    INVALID = (
        # `tpu_cores=None` on a GPU Trainer asks for no TPU: dropped, never made a TPU run.
        Invalid(
            "import pytorch_lightning as pl\n\ntrainer = pl.Trainer(tpu_cores=None, gpus=1)\n",
            expected_fix="import pytorch_lightning as pl\n\ntrainer = pl.Trainer(gpus=1)\n",
            applicability=Applicability.SAFE,
            message="asks for no TPU, so remove it",
        ),
        # An argparse option that may be None: both runs must keep working; no fix.
        Invalid(
            "import argparse\n\nimport pytorch_lightning as pl\n\n"
            "parser = argparse.ArgumentParser()\n"
            'parser.add_argument("--tpu_cores", type=int, default=None)\n'
            "args = parser.parse_args()\n"
            "trainer = pl.Trainer(tpu_cores=args.tpu_cores)\n",
            message='`accelerator="tpu" if args.tpu_cores else "auto"',
            expected_fix="import argparse\n\nimport pytorch_lightning as pl\n\n"
            "parser = argparse.ArgumentParser()\n"
            'parser.add_argument("--tpu_cores", type=int, default=None)\n'
            "args = parser.parse_args()\n"
            "trainer = pl.Trainer(tpu_cores=args.tpu_cores)\n",
        ),
        Invalid(
            _LIGHTNING_IMPORT + "trainer = L.Trainer(tpu_cores=8, max_epochs=3)\n",
            expected_fix=_LIGHTNING_IMPORT
            + 'trainer = L.Trainer(accelerator="tpu", devices=8, max_epochs=3)\n',
            line=3,
            applicability=Applicability.SAFE,
        ),
        Invalid(
            "import pytorch_lightning as pl\n\n"
            "trainer = pl.Trainer(\n"
            "    max_epochs=3,\n"
            "    tpu_cores=[5],\n"
            ")\n",
            expected_fix="import pytorch_lightning as pl\n\n"
            "trainer = pl.Trainer(\n"
            "    max_epochs=3,\n"
            '    accelerator="tpu",\n'
            "    devices=[5],\n"
            ")\n",
            line=5,
        ),
        Invalid(
            "from pytorch_lightning import Trainer\n\n"
            "def make(cfg):\n"
            "    return Trainer(tpu_cores=cfg.tpu_cores)\n",
            expected_fix="from pytorch_lightning import Trainer\n\n"
            "def make(cfg):\n"
            '    return Trainer(accelerator="tpu", devices=cfg.tpu_cores)\n',
            applicability=Applicability.UNSAFE,
            message="`tpu_cores` was removed in Lightning 2.0",
        ),
        Invalid(
            _LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="tpu", num_tpu_cores=8)\n',
            expected_fix=_LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="tpu", devices=8)\n',
        ),
        # A function that takes `tpu_cores` and passes it to the Trainer through a dict:
        # the parameter and the dictionary key are both reported, without a fix.
        Invalid(
            "import pytorch_lightning as pl\n\n"
            "def train(data, tpu_cores: int = 0):\n"
            "    params = dict(max_epochs=1)\n"
            "    if tpu_cores > 0:\n"
            '        params["tpu_cores"] = tpu_cores\n'
            "    return pl.Trainer(**params)\n",
            count=2,
            line=3,
        ),
        Invalid(
            "trainer:\n  tpu_cores: 8  # all cores\n  max_epochs: 3\n",
            path="config.yaml",
            expected_fix="trainer:\n  accelerator: tpu\n  devices: 8  # all cores\n"
            "  max_epochs: 3\n",
            line=2,
            applicability=Applicability.SAFE,
        ),
        Invalid(
            "from dataclasses import dataclass, field\n"
            "import pytorch_lightning as pl\n\n"
            "@dataclass\n"
            "class TrainerConfig:\n"
            "    tpu_cores: int = field(default=8)\n",
            line=6,
            message="config field",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if is_trainer_call(self.ctx, node):
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value in LEGACY_TPU_KEYWORDS:
                    self._report_trainer_arg(node, arg)
            return
        if isinstance(node.func, cst.Name) and node.func.value == "dict":
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value in LEGACY_TPU_KEYWORDS:
                    self._report_key(arg.keyword, arg.keyword.value)

    def _report_trainer_arg(self, call: cst.Call, arg: cst.Arg) -> None:
        keyword = arg.keyword.value if arg.keyword else "tpu_cores"
        value_code = self.ctx.module.code_for_node(arg.value)
        values = literal_candidates(self.ctx, arg.value)
        if values is not None and all(v in (None, 0) for v in values):
            # `tpu_cores=None` (or 0) asks for no TPU: drop it, never turn the run into one.
            self.report(
                arg,
                f"`{keyword}` was removed in Lightning 2.0 (TypeError at Trainer construction); "
                f"`{keyword}={value_code}` asks for no TPU, so remove it",
                replacement=replace_arg(call, arg, []),
                replaces=call,
                applicability=Applicability.SAFE,
                fix_message=f"Remove `{keyword}={value_code}`",
            )
            return
        if values is not None and any(v in (None, 0) or v is CLI_VALUE for v in values):
            # A run with and a run without TPUs: `accelerator="tpu"` would change the other.
            self.report(
                arg,
                f"`{keyword}` was removed in Lightning 2.0 (TypeError at Trainer construction); "
                f"`{keyword}={value_code}` can be None (no TPU), so write both runs: "
                f'`accelerator="tpu" if {value_code} else "auto", '
                f'devices={value_code} or "auto"`',
            )
            return
        message = (
            f"`{keyword}` was removed in Lightning 2.0 (TypeError at Trainer construction); "
            f'use `accelerator="tpu", devices={value_code}`'
        )
        accelerator = keyword_arg(call, "accelerator")
        devices = keyword_arg(call, "devices")
        applicability = Applicability.SAFE if is_literal(arg.value) else Applicability.UNSAFE
        if devices is not None:
            self.report(arg, message + " (this call already sets `devices`: remove one)")
            return
        if accelerator is not None:
            if string_value(accelerator.value) != "tpu":
                self.report(
                    arg,
                    message + ' (this call also sets `accelerator`: make it "tpu" and rename '
                    "this argument to `devices`)",
                )
                return
            new_args = [arg.with_changes(keyword=cst.Name("devices"))]
        else:
            new_args = [
                make_arg("accelerator", '"tpu"'),
                arg.with_changes(keyword=cst.Name("devices")),
            ]
        self.report(
            arg,
            message,
            replacement=replace_arg(call, arg, new_args),
            replaces=call,
            applicability=applicability,
        )

    def _report_key(self, node: cst.CSTNode, key: str) -> None:
        if "lightning" not in self.ctx.source:
            return
        self.report(
            node,
            f'Trainer argument `{key}` was removed in Lightning 2.0; pass `accelerator="tpu"` '
            f"and `devices` instead",
        )

    def visit_DictElement(self, node: cst.DictElement) -> None:
        key = string_value(node.key)
        if key in LEGACY_TPU_KEYWORDS:
            self._report_key(node.key, key)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            sub = target.target
            if isinstance(sub, cst.Subscript) and len(sub.slice) == 1:
                index = sub.slice[0].slice
                if isinstance(index, cst.Index):
                    key = string_value(index.value)
                    if key in LEGACY_TPU_KEYWORDS:
                        self._report_key(index.value, key)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._class_field(node, node.target)

    def _class_field(self, node: cst.CSTNode, target: cst.BaseExpression) -> None:
        if not isinstance(target, cst.Name) or target.value not in LEGACY_TPU_KEYWORDS:
            return
        # A class attribute with this name is a config field (dataclass, omegaconf,
        # pydantic): the name only exists as Lightning's Trainer argument.
        if self.ctx.function is not None or self.ctx.klass is None:
            return
        self.report(
            target,
            f"config field `{target.value}` feeds the Trainer argument removed in Lightning "
            f'2.0; configure `accelerator: "tpu"` and `devices` instead',
        )

    def check_yaml(self, document: YamlDocument) -> None:
        trainer = document.find("trainer")
        if trainer is None:
            return
        for key in LEGACY_TPU_KEYWORDS:
            entry = trainer.child(key)
            if entry is None or entry.raw is None or entry.value_end is None:
                continue
            message = (
                f"`trainer: {key}` was removed in Lightning 2.0 (LightningCLI rejects the key); "
                f"use `accelerator: tpu` and `devices: {entry.raw}`"
            )
            accelerator = trainer.child("accelerator")
            if trainer.child("devices") is not None or (
                accelerator is not None and accelerator.value != "tpu"
            ):
                self.report_yaml(entry.key_start, entry.value_end, message)
                continue
            value = entry.value
            literal = (isinstance(value, int) and not isinstance(value, bool) and value > 0) or (
                isinstance(value, list) and all(isinstance(v, int) for v in value)
            )
            replacement = f"devices: {entry.raw}"
            if accelerator is None:
                replacement = f"accelerator: tpu{entry.pair_separator}{replacement}"
            self.report_yaml(
                entry.key_start,
                entry.value_end,
                message,
                edits=[Edit(entry.key_start, entry.value_end, replacement)],
                applicability=Applicability.SAFE if literal else Applicability.UNSAFE,
            )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        params = [*node.params.posonly_params, *node.params.params, *node.params.kwonly_params]
        legacy = [p for p in params if p.name.value in LEGACY_TPU_KEYWORDS]
        if not legacy or not contains_trainer_call(self.ctx, node.body):
            return
        for param in legacy:
            self.report(
                param.name,
                f"parameter `{param.name.value}` forwards the Trainer argument removed in "
                f"Lightning 2.0; take `accelerator` and `devices` instead",
            )


# --- TPU002 --------------------------------------------------------------------------------

_SAMPLER_OLD = "replace_sampler_ddp"
_SAMPLER_NEW = "use_distributed_sampler"


class RenamedSamplerFlag(Rule):
    """
    ## What it does
    Finds the Trainer argument `replace_sampler_ddp`: in `Trainer(...)` calls, in
    dictionaries of Trainer arguments, in config classes and parameters that feed the
    Trainer, and under `trainer:` in LightningCLI YAML configs.

    ## Why is this bad on TPU?
    Lightning 2.0 renamed the flag to `use_distributed_sampler`:
    `Trainer(replace_sampler_ddp=False)` raises `TypeError: Trainer.__init__() got an
    unexpected keyword argument 'replace_sampler_ddp'`. The flag matters on TPUs: it decides
    whether Lightning gives every TPU core its own shard of the data (a `DistributedSampler`
    over the XLA world size) or leaves the sampler alone.

    ## Example
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="tpu", replace_sampler_ddp=False)
    ```

    ## Use instead
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="tpu", use_distributed_sampler=False)
    ```

    ## Fix safety
    The fix renames the argument (or the YAML key) and is safe: the flag has the same
    meaning and the same default (`True`) under its new name. It is not offered when the call
    already sets `use_distributed_sampler`. Dictionary keys, config fields and parameters are
    reported without a fix, since renaming them changes an interface. Nothing is reported
    when the configured `lightning-version` is older than 2.0, where the old name is right.

    ## References
    - [Lightning 2.0 changelog: `replace_sampler_ddp` renamed (#16829)](https://github.com/Lightning-AI/pytorch-lightning/pull/16829)
    - [Lightning docs: Trainer `use_distributed_sampler`](https://lightning.ai/docs/pytorch/stable/common/trainer.html#use-distributed-sampler)
    """

    code = "TPU002"
    name = "renamed-sampler-flag"
    summary = (
        "Trainer argument `replace_sampler_ddp`, renamed `use_distributed_sampler` in Lightning 2.0"
    )
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    fix_sometimes = True
    fix_message = "Rename to `use_distributed_sampler`"
    requires = (_SAMPLER_OLD,)

    VALID = (
        Valid(_LIGHTNING_IMPORT + "trainer = L.Trainer(use_distributed_sampler=False)\n"),
        # Lightning's own plumbing: a parameter of something that is not the Trainer.
        Valid(
            "class AcceleratorConnector:\n"
            "    def __init__(self, replace_sampler_ddp=True):\n"
            "        self.replace_sampler_ddp = replace_sampler_ddp\n"
        ),
        # Lightning 1.x is targeted: the old name is the right one.
        Valid(
            _LIGHTNING_IMPORT + "trainer = L.Trainer(replace_sampler_ddp=False)\n",
            config={"lightning-version": "1.9"},
        ),
        Valid("trainer:\n  use_distributed_sampler: false\n", path="config.yaml"),
    )
    INVALID = (
        Invalid(
            _LIGHTNING_IMPORT
            + 'trainer = L.Trainer(accelerator="tpu", replace_sampler_ddp=False)\n',
            expected_fix=_LIGHTNING_IMPORT
            + 'trainer = L.Trainer(accelerator="tpu", use_distributed_sampler=False)\n',
            line=3,
            applicability=Applicability.SAFE,
            message="renamed `use_distributed_sampler`",
        ),
        Invalid(
            "from pytorch_lightning import Trainer\n\n"
            "trainer = Trainer(\n"
            "    max_epochs=1,\n"
            "    replace_sampler_ddp=False,  # we shard ourselves\n"
            ")\n",
            expected_fix="from pytorch_lightning import Trainer\n\n"
            "trainer = Trainer(\n"
            "    max_epochs=1,\n"
            "    use_distributed_sampler=False,  # we shard ourselves\n"
            ")\n",
        ),
        # Both spellings: report, but do not guess which one is meant.
        Invalid(
            _LIGHTNING_IMPORT
            + "trainer = L.Trainer(replace_sampler_ddp=False, use_distributed_sampler=True)\n",
            message="already sets `use_distributed_sampler`",
        ),
        Invalid(
            "import pytorch_lightning as pl\n\n"
            "def build(replace_sampler_ddp: bool = True):\n"
            '    kwargs = {"replace_sampler_ddp": replace_sampler_ddp}\n'
            "    return pl.Trainer(**kwargs)\n",
            count=2,
            line=3,
        ),
        Invalid(
            "trainer:\n  accelerator: tpu\n  replace_sampler_ddp: false  # custom sampler\n",
            path="config.yaml",
            expected_fix="trainer:\n  accelerator: tpu\n"
            "  use_distributed_sampler: false  # custom sampler\n",
            line=3,
            applicability=Applicability.SAFE,
        ),
    )

    def visit_Module(self, node: cst.Module) -> bool | None:
        self._enabled = lightning_at_least(self.ctx, "2.0") and not is_framework_file(self.ctx)
        return None

    def visit_Call(self, node: cst.Call) -> None:
        if not self._enabled:
            return
        if is_trainer_call(self.ctx, node):
            arg = keyword_arg(node, _SAMPLER_OLD)
            if arg is None:
                return
            message = (
                "`replace_sampler_ddp` was renamed `use_distributed_sampler` in Lightning 2.0 "
                "(TypeError at Trainer construction)"
            )
            if keyword_arg(node, _SAMPLER_NEW) is not None:
                self.report(
                    arg, message + "; this call already sets `use_distributed_sampler`: remove one"
                )
                return
            self.report(
                arg, message, replacement=rename_keyword(node, arg, _SAMPLER_NEW), replaces=node
            )
            return
        if isinstance(node.func, cst.Name) and node.func.value == "dict":
            arg = keyword_arg(node, _SAMPLER_OLD)
            if arg is not None and arg.keyword is not None:
                self._report_key(arg.keyword)

    def _report_key(self, node: cst.CSTNode) -> None:
        if "lightning" not in self.ctx.source:
            return
        self.report(
            node,
            "Trainer argument `replace_sampler_ddp` was renamed `use_distributed_sampler` in "
            "Lightning 2.0; rename this key",
        )

    def visit_DictElement(self, node: cst.DictElement) -> None:
        if self._enabled and string_value(node.key) == _SAMPLER_OLD:
            self._report_key(node.key)

    def visit_Assign(self, node: cst.Assign) -> None:
        if not self._enabled:
            return
        for target in node.targets:
            sub = target.target
            if isinstance(sub, cst.Subscript) and len(sub.slice) == 1:
                index = sub.slice[0].slice
                if isinstance(index, cst.Index) and string_value(index.value) == _SAMPLER_OLD:
                    self._report_key(index.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        target = node.target
        if (
            self._enabled
            and isinstance(target, cst.Name)
            and target.value == _SAMPLER_OLD
            and self.ctx.function is None
            and self.ctx.klass is not None
        ):
            self.report(
                target,
                "config field `replace_sampler_ddp` feeds the Trainer argument renamed "
                "`use_distributed_sampler` in Lightning 2.0",
            )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if not self._enabled:
            return
        params = [*node.params.posonly_params, *node.params.params, *node.params.kwonly_params]
        for param in params:
            if param.name.value == _SAMPLER_OLD and contains_trainer_call(self.ctx, node.body):
                self.report(
                    param.name,
                    "parameter `replace_sampler_ddp` forwards the Trainer argument renamed "
                    "`use_distributed_sampler` in Lightning 2.0",
                )

    def check_yaml(self, document: YamlDocument) -> None:
        if self.yaml_config is not None and not lightning_at_least(self.yaml_config, "2.0"):
            return
        trainer = document.find("trainer")
        entry = trainer.child(_SAMPLER_OLD) if trainer is not None else None
        if trainer is None or entry is None:
            return
        message = (
            "`trainer: replace_sampler_ddp` was renamed `use_distributed_sampler` in Lightning 2.0 "
            "(LightningCLI rejects the key)"
        )
        if trainer.child(_SAMPLER_NEW) is not None:
            self.report_yaml(
                entry.key_start, entry.key_end, message + "; remove one of the two keys"
            )
            return
        self.report_yaml(
            entry.key_start,
            entry.key_end,
            message,
            edits=[Edit(entry.key_start, entry.key_end, _SAMPLER_NEW)],
        )


# --- TPU003 --------------------------------------------------------------------------------

_STRATEGY_RENAMES = {"tpu_spawn": "xla", "tpu_spawn_debug": "xla_debug"}
_CLASS_RENAMES = {"TPUSpawnStrategy": "XLAStrategy", "TPUSpawnPlugin": "XLAStrategy"}


class LegacyXlaStrategy(Rule):
    """
    ## What it does
    Finds the Lightning 1.x names of the TPU strategy: the strategy strings `"tpu_spawn"` and
    `"tpu_spawn_debug"` (as `Trainer(strategy=...)`, in dictionaries and config defaults, under
    `trainer: strategy:` in LightningCLI YAML configs) and the classes `TPUSpawnStrategy` and
    `TPUSpawnPlugin`.

    ## Why is this bad on TPU?
    Lightning 2.0 renamed them to `"xla"`, `"xla_debug"` and `XLAStrategy`, and removed the
    old names: `Trainer(strategy="tpu_spawn")` raises a `ValueError` (unknown strategy) and
    `from lightning.pytorch.strategies import TPUSpawnStrategy` an `ImportError`, before
    anything reaches the TPU.

    ## Example
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="tpu", devices="auto", strategy="tpu_spawn")
    ```

    ## Use instead
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="tpu", devices="auto", strategy="xla")
    ```

    ## Fix safety
    The fix is safe: it renames the string or the class (adding
    `from <package>.strategies import XLAStrategy` for the package root the file already
    uses, `lightning.pytorch` or `pytorch_lightning`, and dropping the old import once it is
    unused); the strategies behave the same under their new names. Subclasses of
    `TPUSpawnStrategy` get an unsafe fix: `XLAStrategy`'s hooks are not the same as the 1.x
    class's, so overridden methods may need changes. Comparisons such as
    `if strategy == "tpu_spawn":` and Lightning's own source are not reported. Nothing is
    reported when the configured `lightning-version` is older than 2.0.

    ## References
    - [Lightning 2.0: TPU strategy and accelerator renamed to XLA (#16781)](https://github.com/Lightning-AI/pytorch-lightning/pull/16781)
    - [Lightning docs: TPU training (strategy "xla")](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_intermediate.html)
    """

    code = "TPU003"
    name = "legacy-xla-strategy"
    summary = (
        'Strategy `"tpu_spawn"` / `TPUSpawnStrategy`, renamed `"xla"` / `XLAStrategy` in '
        "Lightning 2.0"
    )
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    fix_sometimes = True
    fix_message = "Rename to the XLA strategy"
    requires = ("tpu_spawn", "TPUSpawnStrategy", "TPUSpawnPlugin")

    VALID = (
        Valid(_LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="tpu", strategy="xla")\n'),
        # Compatibility code that tests for the old name is left alone.
        Valid('def is_tpu(strategy):\n    return strategy in ("tpu_spawn", "xla")\n'),
        Valid('def is_tpu(strategy):\n    return strategy == "tpu_spawn"\n'),
        # A docstring that mentions the old name.
        Valid('def train():\n    """Runs with strategy="tpu_spawn" on Lightning 1.x."""\n'),
        # Lightning 1.x is targeted.
        Valid(
            _LIGHTNING_IMPORT + 'trainer = L.Trainer(strategy="tpu_spawn")\n',
            config={"lightning-version": "1.9"},
        ),
        Valid("trainer:\n  strategy: xla\n", path="config.yaml"),
    )
    INVALID = (
        Invalid(
            _LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="tpu", strategy="tpu_spawn")\n',
            expected_fix=_LIGHTNING_IMPORT
            + 'trainer = L.Trainer(accelerator="tpu", strategy="xla")\n',
            line=3,
            applicability=Applicability.SAFE,
            message='`"tpu_spawn"` was renamed `"xla"`',
        ),
        Invalid(
            "import pytorch_lightning as pl\n\n"
            "cfg = dict(max_epochs=1, strategy='tpu_spawn_debug')\n"
            "trainer = pl.Trainer(**cfg)\n",
            expected_fix="import pytorch_lightning as pl\n\n"
            "cfg = dict(max_epochs=1, strategy='xla_debug')\n"
            "trainer = pl.Trainer(**cfg)\n",
        ),
        Invalid(
            "from pytorch_lightning import Trainer\n"
            "from pytorch_lightning.strategies import TPUSpawnStrategy\n\n"
            'trainer = Trainer(accelerator="tpu", strategy=TPUSpawnStrategy(debug=True))\n',
            expected_fix="from pytorch_lightning import Trainer\n"
            "from pytorch_lightning.strategies import XLAStrategy\n\n"
            'trainer = Trainer(accelerator="tpu", strategy=XLAStrategy(debug=True))\n',
            line=4,
            applicability=Applicability.SAFE,
            message="`TPUSpawnStrategy` was renamed `XLAStrategy`",
        ),
        Invalid(
            "import lightning.pytorch as pl\n\nstrategy = pl.strategies.TPUSpawnStrategy()\n",
            expected_fix="import lightning.pytorch as pl\n\n"
            "strategy = pl.strategies.XLAStrategy()\n",
        ),
        # An import inside a function: the new import goes in the same place.
        Invalid(
            "import lightning as L\n\n"
            "def make():\n"
            "    from lightning.pytorch.strategies import DDPStrategy, TPUSpawnStrategy\n"
            "    return L.Trainer(strategy=TPUSpawnStrategy())\n",
            expected_fix="import lightning as L\n\n"
            "def make():\n"
            "    from lightning.pytorch.strategies import DDPStrategy\n"
            "    from lightning.pytorch.strategies import XLAStrategy\n"
            "    return L.Trainer(strategy=XLAStrategy())\n",
        ),
        # A subclass: renamed, but unsafely (the 1.x hooks differ).
        Invalid(
            "from pytorch_lightning.strategies import TPUSpawnStrategy\n\n"
            "class MyStrategy(TPUSpawnStrategy):\n"
            "    pass\n",
            applicability=Applicability.UNSAFE,
            expected_fix="from pytorch_lightning.strategies import XLAStrategy\n\n"
            "class MyStrategy(XLAStrategy):\n"
            "    pass\n",
        ),
        Invalid(
            "trainer:\n  accelerator: tpu\n  strategy: tpu_spawn  # 8 cores\n",
            path="config.yaml",
            expected_fix="trainer:\n  accelerator: tpu\n  strategy: xla  # 8 cores\n",
            line=3,
        ),
        Invalid(
            "trainer:\n  strategy:\n"
            "    class_path: pytorch_lightning.strategies.TPUSpawnStrategy\n",
            path="config.yaml",
            expected_fix="trainer:\n  strategy:\n"
            "    class_path: pytorch_lightning.strategies.XLAStrategy\n",
        ),
    )

    def visit_Module(self, node: cst.Module) -> bool | None:
        self._enabled = lightning_at_least(self.ctx, "2.0") and not is_framework_file(self.ctx)
        self._renames: list[Rename] = []
        self._imports: list[tuple[cst.ImportAlias, str]] = []
        return None

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if not self._enabled:
            return
        value = string_value(node)
        if value not in _STRATEGY_RENAMES:
            return
        parent = self.ctx.parent(node)
        if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)) or _in_container_test(
            self.ctx, node
        ):
            return
        if isinstance(parent, cst.Expr):
            return  # a docstring
        new = _STRATEGY_RENAMES[value]
        self.report(
            node,
            f'strategy `"{value}"` was renamed `"{new}"` in Lightning 2.0 (the old name raises '
            "ValueError: unknown strategy)",
            replacement=with_string_value(node, new),
        )

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if not self._enabled or isinstance(node.names, cst.ImportStar) or node.relative:
            return
        base = module_name_of(node.module)
        if base.split(".", 1)[0] not in LIGHTNING_ROOTS:
            return
        for alias in node.names:
            name = module_name_of(alias.name)
            if name in _CLASS_RENAMES:
                self._imports.append((alias, base))
        return

    def visit_Name(self, node: cst.Name) -> None:
        if self._enabled and node.value in _CLASS_RENAMES:
            self._reference(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self._enabled and node.attr.value in _CLASS_RENAMES:
            self._reference(node)

    def _reference(self, node: cst.Name | cst.Attribute) -> None:
        ctx = self.ctx
        parent = ctx.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return  # the `attr` of an Attribute handled as a whole
        if isinstance(parent, (cst.ImportAlias, cst.ClassDef)) and not isinstance(
            parent, cst.ClassDef
        ):
            return
        if isinstance(parent, cst.ClassDef) and parent.name is node:
            return
        if any(isinstance(a, (cst.Import, cst.ImportFrom)) for a in ctx.ancestors(node)):
            return
        qualified = ctx.qualify(node)
        if qualified is None or qualified.split(".", 1)[0] not in LIGHTNING_ROOTS:
            return
        old_name = qualified.rsplit(".", 1)[-1]
        if old_name not in _CLASS_RENAMES:
            return
        new_name = _CLASS_RENAMES[old_name]
        package = _strategies_package(qualified)
        subclass = isinstance(parent, cst.Arg) and isinstance(ctx.parent(parent), cst.ClassDef)
        message = (
            f"`{old_name}` was renamed `{new_name}` in Lightning 2.0 (the old name fails with "
            f"ImportError); use `{new_name}`"
        )
        if isinstance(node, cst.Attribute):
            new: cst.BaseExpression = node.with_changes(attr=cst.Name(new_name))
            local = _root_local(node)
            needs = None
            drop = False
        else:
            new = cst.Name(new_name)
            local = node.value
            needs = ImportSpec(f"{package}.strategies", new_name)
            drop = True
        self._renames.append(
            Rename(
                report_node=parent
                if isinstance(parent, cst.Call) and parent.func is node
                else node,
                old=node,
                new=new,
                local=local,
                needs=needs,
                message=message,
                applicability=Applicability.UNSAFE if subclass else Applicability.SAFE,
                fix_message=f"Use `{new_name}`",
                drop_old=drop,
            )
        )

    def leave_Module(self, node: cst.Module) -> None:
        if not self._enabled:
            return
        if self._renames:
            plan_renames(self.ctx, self, self._renames)
        used = {r.local for r in self._renames}
        for alias, base in self._imports:
            local = alias.evaluated_alias or alias.evaluated_name
            if local in used:
                continue
            old_name = module_name_of(alias.name)
            new_name = _CLASS_RENAMES[old_name]
            self.report(
                alias,
                f"`{old_name}` was removed in Lightning 2.0 (ImportError); import `{new_name}` "
                f"from `{_strategies_package(base + '.' + old_name)}.strategies`",
            )

    def check_yaml(self, document: YamlDocument) -> None:
        if self.yaml_config is not None and not lightning_at_least(self.yaml_config, "2.0"):
            return
        trainer = document.find("trainer")
        strategy = trainer.child("strategy") if trainer is not None else None
        if strategy is None:
            return
        value = strategy.value
        if (
            isinstance(value, str)
            and value in _STRATEGY_RENAMES
            and strategy.value_start
            and strategy.value_end
        ):
            new = _STRATEGY_RENAMES[value]
            raw = strategy.raw or value
            self.report_yaml(
                strategy.value_start,
                strategy.value_end,
                f"`trainer: strategy: {value}` was renamed `{new}` in Lightning 2.0 (unknown "
                "strategy)",
                edits=[Edit(strategy.value_start, strategy.value_end, raw.replace(value, new))],
            )
            return
        class_path = strategy.child("class_path")
        if class_path is None or not isinstance(class_path.value, str):
            return
        path = class_path.value
        old_name = path.rsplit(".", 1)[-1]
        if old_name not in _CLASS_RENAMES or path.split(".", 1)[0] not in LIGHTNING_ROOTS:
            return
        if class_path.value_start is None or class_path.value_end is None:
            return
        new_path = f"{_strategies_package(path)}.strategies.{_CLASS_RENAMES[old_name]}"
        self.report_yaml(
            class_path.value_start,
            class_path.value_end,
            f"`{old_name}` was renamed `{_CLASS_RENAMES[old_name]}` in Lightning 2.0 (the class "
            "path fails to import)",
            edits=[Edit(class_path.value_start, class_path.value_end, new_path)],
        )


def _strategies_package(qualified: str) -> str:
    """`pytorch_lightning` or `lightning.pytorch`: the package root the file uses."""
    return "pytorch_lightning" if qualified.startswith("pytorch_lightning") else "lightning.pytorch"


def _root_local(node: cst.BaseExpression) -> str:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else ""


def _in_container_test(ctx, node: cst.CSTNode) -> bool:
    """`x in ("tpu_spawn", ...)`: the string is an element of a collection that is the right
    side of a comparison."""
    parent = ctx.parent(node)
    if isinstance(parent, cst.Element):
        container = ctx.parent(parent)
        holder = ctx.parent(container) if container is not None else None
        return isinstance(holder, cst.ComparisonTarget)
    return False


# --- TPU004 --------------------------------------------------------------------------------

_BAD_TPU_PRECISION = {
    16: "16-mixed",
    "16": "16-mixed",
    "16-mixed": "16-mixed",
    "bf16": "bf16-mixed",
    "bf16-mixed": "bf16-mixed",
}
_NO_FIX_TPU_PRECISION = {64: "64-true", "64": "64-true", "64-true": "64-true"}
_SUPPORTED = '"32-true", "16-true" and "bf16-true"'


_TPU_ONLY_ADVICE = 'use `"bf16-true"` whenever the Trainer runs on TPUs'


def _tpu_condition(ctx, call: cst.Call) -> str:
    """The code that decides whether a Trainer runs on TPUs (`use_tpu`), for messages."""
    for keyword in ("accelerator", *LEGACY_TPU_KEYWORDS):
        arg = keyword_arg(call, keyword)
        if arg is None:
            continue
        value = arg.value
        if isinstance(value, cst.IfExp):
            return f"`{ctx.module.code_for_node(value.test)}`"
        return f"`{keyword}={ctx.module.code_for_node(value)}` asks for TPUs"
    return "its arguments ask for TPUs"


def _precision_message(value: object, subject: str, fix: str) -> str:
    """`subject` is what holds the value (`` `precision=16` on a TPU Trainer``); `fix` is what
    to write instead."""
    if value in _NO_FIX_TPU_PRECISION:
        return (
            f'{subject} means "64-true", but Lightning\'s XLAPrecision accepts only {_SUPPORTED} '
            '(ValueError); use `"32-true"` (or `"bf16-true"`)'
        )
    unified = _BAD_TPU_PRECISION[value]  # type: ignore[index]
    read_as = "" if str(value) == unified else f', which Lightning 2 reads as "{unified}"'
    legacy = " (in Lightning 1.x, 16-bit on TPUs meant bfloat16)" if value in (16, "16") else ""
    return (
        f"{subject}{read_as}: Lightning's XLAPrecision accepts only {_SUPPORTED} (ValueError); "
        f"{fix}{legacy}"
    )


_CONFIG_CLASS_NAME = re.compile(
    r"(?i)(config|configs|conf|args|arguments|params|settings|options|hparams)$"
)


def _is_config_class(klass) -> bool:
    """A dataclass / pydantic / omegaconf-style config class (not a plugin or a module)."""
    node = klass.node
    for decorator in node.decorators:
        target = decorator.decorator
        if isinstance(target, cst.Call):
            target = target.func
        name = (
            target.attr.value if isinstance(target, cst.Attribute) else getattr(target, "value", "")
        )
        if name in ("dataclass", "define", "attrs", "frozen"):
            return True
    names = [klass.name, *(base.rsplit(".", 1)[-1] for base in klass.bases)]
    return any(
        _CONFIG_CLASS_NAME.search(name) or name in ("BaseModel", "BaseSettings") for name in names
    )


def _is_tpu_config_class(ctx, klass) -> bool:
    """A config class for a TPU trainer: named like one (`TPUTrainerConfigs`) or with a
    `tpu_cores` / `use_tpu = True` / `accelerator = "tpu"` field, itself or in a base class
    of the same file."""
    if not _is_config_class(klass):
        return False
    seen: set[int] = set()
    stack = [klass]
    while stack:
        info = stack.pop()
        if info is None or id(info) in seen:
            continue
        seen.add(id(info))
        if re.search(r"(?i)tpu|xla", info.name):
            return True
        for statement in info.node.body.body:
            for name, value in _class_fields(statement):
                if name in LEGACY_TPU_KEYWORDS:
                    return True
                default = literal_value(value) if value is not None else None
                if name == "use_tpu" and isinstance(value, cst.Name) and value.value == "True":
                    return True
                if (
                    name in ("accelerator", "device")
                    and isinstance(default, str)
                    and default.lower() == "tpu"
                ):
                    return True
        stack.extend(info.local_bases)
    return False


def _class_fields(statement: cst.CSTNode):
    """(name, default value) of `name: T = value` / `name = value` /
    `name: T = field(default=v)`."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return
    for small in statement.body:
        target = value = None
        if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
            target, value = small.target, small.value
        elif (
            isinstance(small, cst.Assign)
            and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)
        ):
            target, value = small.targets[0].target, small.value
        if target is None:
            continue
        if isinstance(value, cst.Call) and isinstance(value.func, (cst.Name, cst.Attribute)):
            default = keyword_arg(value, "default")
            if default is not None:
                value = default.value
        yield target.value, value


class UnsupportedTpuPrecision(Rule):
    """
    ## What it does
    Finds a TPU Trainer (one with `accelerator="tpu"`, a legacy `tpu_cores`, or an XLA
    strategy) configured with a precision the XLA plugin does not support: `16`, `"16"`,
    `"16-mixed"`, `"bf16"`, `"bf16-mixed"` (and `64`). It also looks at the `precision`
    default of TPU trainer config classes and at `trainer: precision:` in LightningCLI YAML
    configs that select a TPU.

    ## Why is this bad on TPU?
    Lightning 2 turns `16` into `"16-mixed"` and `"bf16"` into `"bf16-mixed"`, and its
    `XLAPrecision` plugin accepts only `"32-true"`, `"16-true"` and `"bf16-true"`: any other
    value raises `ValueError` when the Trainer is built. Mixed precision in the CUDA sense
    (autocast plus a gradient scaler) does not exist on TPUs; bfloat16 is the TPU's native
    half type. In Lightning 1.x, `precision=16` with TPU cores selected the bfloat16 plugin
    (`TPUBf16PrecisionPlugin`), so `"bf16-true"` is what that code meant.

    Lightning's documentation contradicts its code here: the Fabric precision page still says
    that `precision="16-mixed"` enables bfloat16 on TPUs, and the TPU page says `"16-true"`
    uses bfloat16. The code (`XLAPrecision`: `"16-true"` sets `XLA_USE_F16`, float16) is what
    runs, and tpulint follows the code.

    ## Example
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="tpu", devices="auto", precision="16-mixed")
    ```

    ## Use instead
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="tpu", devices="auto", precision="bf16-true")
    ```

    ## Fix safety
    The fix writes `precision="bf16-true"` and is unsafe: "true" half precision keeps the
    weights themselves in bfloat16, where mixed precision kept float32 master weights, so the
    numerics of training change (for code migrated from Lightning 1.x with `tpu_cores`, it
    keeps the 1.x meaning). `64` has no XLA equivalent and is reported without a fix; config
    class defaults are reported without a fix (their type annotations are often `int`).
    Nothing is reported when the configured `lightning-version` is older than 2.0.

    ## References
    - [Lightning source: `XLAPrecision` (supported values)](https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/plugins/precision/xla.py)
    - [Lightning 1.5 docs: TPU 16-bit precision meant bfloat16](https://lightning.ai/docs/pytorch/1.5.10/advanced/tpu.html)
    - [Lightning 2.0: precision values unified (#16783)](https://github.com/Lightning-AI/pytorch-lightning/pull/16783)
    - [Lightning docs: TPU intermediate (precision)](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_intermediate.html)
    """

    code = "TPU004"
    name = "unsupported-tpu-precision"
    summary = (
        'TPU Trainer with a precision the XLA plugin rejects (`16`, `"16-mixed"`, `"bf16-mixed"`)'
    )
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = 'Use `precision="bf16-true"`'
    requires = ("precision",)

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        # A Trainer call, or a config class of a TPU trainer.
        return "Trainer" in source or "tpu" in source.lower()

    VALID = (
        # GPU Trainers: TPU rules stay silent.
        Valid(_LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="gpu", precision=16)\n'),
        Valid(
            "import pytorch_lightning as pl\n\n"
            "trainer = pl.Trainer(tpu_cores=None, gpus=1, precision=16)\n"
        ),
        Valid(
            _LIGHTNING_IMPORT + "def make(fp16):\n"
            '    return L.Trainer(accelerator="cuda", precision=16 if fp16 else 32)\n'
        ),
        Valid(
            _LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="tpu", precision="bf16-true")\n'
        ),
        Valid(_LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="tpu", precision="16-true")\n'),
        # Not a TPU Trainer: mixed precision is right on GPUs.
        Valid(_LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="gpu", precision="16-mixed")\n'),
        Valid(_LIGHTNING_IMPORT + "trainer = L.Trainer(precision=16)\n"),
        # A value only known at run time.
        Valid(
            _LIGHTNING_IMPORT
            + 'def make(p):\n    return L.Trainer(accelerator="tpu", precision=p)\n'
        ),
        # Lightning 1.x is targeted: precision=16 on TPU is bf16 there.
        Valid(
            "import pytorch_lightning as pl\n\ntrainer = pl.Trainer(tpu_cores=8, precision=16)\n",
            config={"lightning-version": "1.9"},
        ),
        Valid("trainer:\n  accelerator: gpu\n  precision: 16-mixed\n", path="config.yaml"),
        # A GPU config class.
        Valid(
            "from dataclasses import dataclass, field\n\n"
            "@dataclass\nclass Fp16GPUTrainerConfigs:\n"
            "    device: str = 'gpu'\n    precision: int = field(default=16)\n"
        ),
    )
    INVALID = (
        # An argparse default that flows into a TPU Trainer.
        Invalid(
            "import argparse\n\nimport lightning as L\n\n"
            "parser = argparse.ArgumentParser()\n"
            'parser.add_argument("--precision", default=16)\n'
            "args = parser.parse_args()\n"
            'trainer = L.Trainer(accelerator="tpu", precision=args.precision)\n',
            line=8,
            message="can be `16` (an argparse default)",
        ),
        # A conditional value on a TPU Trainer.
        Invalid(
            _LIGHTNING_IMPORT + "def make(fp16):\n"
            '    return L.Trainer(accelerator="tpu", precision=16 if fp16 else 32)\n',
            message="can be `16` (a branch)",
        ),
        # A Trainer that runs on TPUs only sometimes: reported, never rewritten (the fix
        # would change the GPU run too).
        Invalid(
            _LIGHTNING_IMPORT + "def make(use_tpu):\n"
            '    return L.Trainer(accelerator="tpu" if use_tpu else "gpu", precision=16)\n',
            message="on a Trainer that runs on TPUs when `use_tpu`",
            expected_fix=_LIGHTNING_IMPORT + "def make(use_tpu):\n"
            '    return L.Trainer(accelerator="tpu" if use_tpu else "gpu", precision=16)\n',
        ),
        Invalid(
            _LIGHTNING_IMPORT
            + 'trainer = L.Trainer(accelerator="tpu", devices="auto", precision="16-mixed")\n',
            expected_fix=_LIGHTNING_IMPORT
            + 'trainer = L.Trainer(accelerator="tpu", devices="auto", precision="bf16-true")\n',
            line=3,
            applicability=Applicability.UNSAFE,
            message='accepts only "32-true", "16-true" and "bf16-true"',
        ),
        # Lightning 1.x code: precision=16 with TPU cores meant bfloat16.
        Invalid(
            "import pytorch_lightning as pl\n\ntrainer = pl.Trainer(tpu_cores=8, precision=16)\n",
            expected_fix="import pytorch_lightning as pl\n\n"
            'trainer = pl.Trainer(tpu_cores=8, precision="bf16-true")\n',
            message="meant bfloat16",
        ),
        Invalid(
            "from lightning.pytorch import Trainer\n"
            "from lightning.pytorch.strategies import XLAStrategy\n\n"
            "trainer = Trainer(strategy=XLAStrategy(), precision='bf16')\n",
            expected_fix="from lightning.pytorch import Trainer\n"
            "from lightning.pytorch.strategies import XLAStrategy\n\n"
            "trainer = Trainer(strategy=XLAStrategy(), precision='bf16-true')\n",
        ),
        Invalid(
            _LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="tpu", precision=64)\n',
            message='use `"32-true"`',
        ),
        # A TPU trainer config class (openspeech's Fp16TPUTrainerConfigs shape).
        Invalid(
            "from dataclasses import dataclass, field\n\n"
            "@dataclass\nclass TPUTrainerConfigs:\n"
            "    device: str = field(default='tpu')\n    tpu_cores: int = field(default=8)\n\n"
            "@dataclass\nclass Fp16TPUTrainerConfigs(TPUTrainerConfigs):\n"
            "    precision: int = field(default=16, metadata={'help': 'half precision'})\n",
            line=10,
            message="config field",
        ),
        Invalid(
            "trainer:\n  accelerator: tpu\n  precision: 16-mixed\n",
            path="config.yaml",
            expected_fix="trainer:\n  accelerator: tpu\n  precision: bf16-true\n",
            line=3,
            applicability=Applicability.UNSAFE,
        ),
    )

    def visit_Module(self, node: cst.Module) -> bool | None:
        self._enabled = lightning_at_least(self.ctx, "2.0") and not is_framework_file(self.ctx)
        return None

    def visit_Call(self, node: cst.Call) -> None:
        if not self._enabled or not is_trainer_call(self.ctx, node):
            return
        arg = keyword_arg(node, "precision")
        if arg is None:
            return
        tpu = trainer_tpu(self.ctx, node)
        if tpu not in ("yes", "maybe"):
            return
        value = literal_value(arg.value)
        if value is None:
            self._possible_values(node, arg, tpu)
            return
        if value not in _BAD_TPU_PRECISION and value not in _NO_FIX_TPU_PRECISION:
            return
        if tpu == "maybe":
            # A fix would also change the other (GPU) run's precision: report only.
            subject = (
                f"`precision={self.ctx.module.code_for_node(arg.value)}` on a Trainer that "
                f"runs on TPUs when {_tpu_condition(self.ctx, node)}"
            )
            self.report(arg, _precision_message(value, subject, _TPU_ONLY_ADVICE))
            return
        subject = f"`precision={self.ctx.module.code_for_node(arg.value)}` on a TPU Trainer"
        if value in _NO_FIX_TPU_PRECISION:
            self.report(arg, _precision_message(value, subject, ""))
            return
        quote = (
            "'"
            if isinstance(arg.value, cst.SimpleString) and arg.value.value.startswith("'")
            else '"'
        )
        self.report(
            arg,
            _precision_message(value, subject, 'use `precision="bf16-true"`'),
            replacement=arg.with_changes(value=cst.SimpleString(f"{quote}bf16-true{quote}")),
        )

    def _possible_values(self, node: cst.Call, arg: cst.Arg, tpu: str) -> None:
        """`precision=16 if args.fp16 else 32`, `precision=args.precision` with an argparse
        default of 16, a local set in a branch: reported when one of the values the file
        shows is unsupported on TPUs (no fix: the other values are right, and a rewrite
        could not tell the runs apart)."""
        ctx = self.ctx
        values = literal_candidates(ctx, arg.value)
        if not values:
            return
        bad = [v for v in values if v in _BAD_TPU_PRECISION or v in _NO_FIX_TPU_PRECISION]
        if not bad:
            return
        written = ctx.module.code_for_node(arg.value)
        runs = (
            "on a TPU Trainer"
            if tpu == "yes"
            else (f"on a Trainer that runs on TPUs when {_tpu_condition(ctx, node)}")
        )
        origin = "an argparse default" if isinstance(arg.value, cst.Attribute) else "a branch"
        subject = f"`precision={written}` {runs} can be `{bad[0]!r}` ({origin})"
        self.report(arg, _precision_message(bad[0], subject, _TPU_ONLY_ADVICE))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if not self._enabled or self.ctx.function is not None:
            return
        info = self.ctx.analysis.klass(node)
        if info is None:
            return
        for statement in node.body.body if isinstance(node.body, cst.IndentedBlock) else ():
            for name, value in _class_fields(statement):
                if name != "precision" or value is None:
                    continue
                default = literal_value(value)
                if default not in _BAD_TPU_PRECISION and default not in _NO_FIX_TPU_PRECISION:
                    continue
                if not _is_tpu_config_class(self.ctx, info):
                    return
                target = statement.body[0]
                node_to_report = target.target if isinstance(target, cst.AnnAssign) else target
                default_code = self.ctx.module.code_for_node(value)
                self.report(
                    node_to_report,
                    _precision_message(
                        default,
                        f"config field `precision` of TPU trainer config `{info.name}` defaults "
                        f"to `{default_code}`",
                        'default to `"bf16-true"`',
                    ),
                )

    def check_yaml(self, document: YamlDocument) -> None:
        if self.yaml_config is not None and not lightning_at_least(self.yaml_config, "2.0"):
            return
        trainer = document.find("trainer")
        entry = trainer.child("precision") if trainer is not None else None
        if trainer is None or entry is None or entry.value_start is None or entry.value_end is None:
            return
        value = entry.value
        if not isinstance(value, (str, int, float)):
            return
        if value not in _BAD_TPU_PRECISION and value not in _NO_FIX_TPU_PRECISION:
            return
        if not yaml_trainer_is_tpu(trainer):
            return
        message = _precision_message(
            value, f"`trainer: precision: {entry.raw}` on a TPU trainer", "use `bf16-true`"
        )
        if value in _NO_FIX_TPU_PRECISION:
            self.report_yaml(entry.value_start, entry.value_end, message)
            return
        raw = entry.raw or ""
        new = "bf16-true" if raw[:1] not in "\"'" else f"{raw[0]}bf16-true{raw[0]}"
        self.report_yaml(
            entry.value_start,
            entry.value_end,
            message,
            edits=[Edit(entry.value_start, entry.value_end, new)],
        )


# --- TPU007 --------------------------------------------------------------------------------


class HardcodedTpuDeviceCount(Rule):
    """
    ## What it does
    Finds TPU Trainers (`accelerator="tpu"` or an XLA strategy) given a literal device count
    other than 1, such as `devices=8`, in Python and in LightningCLI YAML configs.

    ## Why is this bad on TPU?
    Lightning accepts for TPUs only `"auto"`, `1`, the exact number of TPU devices of the
    host, or a one-element list `[i]`; any other count raises
    `ValueError: devices can only be 'auto', 1, N or [<0-N-1>] for TPUs`. The number depends
    on the TPU generation: under PJRT a v2-8 or v3-8 host has 8 devices, while v4 (and v5p)
    hosts expose 4 (one per chip). `devices=8` copied from a v3 tutorial fails on a v4-8.

    ## Example
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="tpu", devices=8)
    ```

    ## Use instead
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="tpu", devices="auto")
    ```

    ## Fix safety
    The fix writes `devices="auto"` and is unsafe: on a host with more devices than the
    literal asked for, the job now uses all of them (a different global batch size and
    learning-rate schedule), and on a multi-host pod slice "auto" is per host as before.

    ## References
    - [Lightning source: `_check_tpu_devices_valid`](https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/fabric/accelerators/xla.py)
    - [torch_xla docs: PJRT runtime (devices per host)](https://github.com/pytorch/xla/blob/master/docs/source/learn/pjrt.md)
    - [Cloud TPU docs: TPU versions and chips per host](https://cloud.google.com/tpu/docs/system-architecture-tpu-vm)
    """

    code = "TPU007"
    name = "hardcoded-tpu-device-count"
    summary = "TPU Trainer with a literal device count (`devices=8`) that only fits some TPU hosts"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE
    fix_message = 'Use `devices="auto"`'
    requires = ("devices",)

    VALID = (
        Valid(_LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="tpu", devices="auto")\n'),
        Valid(_LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="tpu", devices=1)\n'),
        Valid(_LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="tpu", devices=[2])\n'),
        Valid(_LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="gpu", devices=8)\n'),
        Valid("trainer:\n  accelerator: tpu\n  devices: auto\n", path="config.yaml"),
    )
    INVALID = (
        # Only sometimes a TPU run: reported, not rewritten (`"auto"` would change the GPU run).
        Invalid(
            _LIGHTNING_IMPORT + "def make(use_tpu):\n"
            '    return L.Trainer(accelerator="tpu" if use_tpu else "gpu", devices=8)\n',
            message="on a Trainer that runs on TPUs when `use_tpu`",
            expected_fix=_LIGHTNING_IMPORT + "def make(use_tpu):\n"
            '    return L.Trainer(accelerator="tpu" if use_tpu else "gpu", devices=8)\n',
        ),
        Invalid(
            _LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="tpu", devices=8, max_epochs=1)\n',
            expected_fix=_LIGHTNING_IMPORT
            + 'trainer = L.Trainer(accelerator="tpu", devices="auto", max_epochs=1)\n',
            line=3,
            applicability=Applicability.UNSAFE,
            message="v4",
        ),
        Invalid(
            "from pytorch_lightning import Trainer\n\n"
            "trainer = Trainer(accelerator='tpu', devices='8')\n",
            expected_fix="from pytorch_lightning import Trainer\n\n"
            "trainer = Trainer(accelerator='tpu', devices='auto')\n",
        ),
        Invalid(
            "trainer:\n  accelerator: tpu\n  devices: 8  # v3-8\n",
            path="config.yaml",
            expected_fix="trainer:\n  accelerator: tpu\n  devices: auto  # v3-8\n",
            line=3,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not is_trainer_call(self.ctx, node) or is_framework_file(self.ctx):
            return
        arg = keyword_arg(node, "devices")
        if arg is None:
            return
        value = literal_value(arg.value)
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if not isinstance(value, int) or value == 1:
            return
        tpu = trainer_tpu(self.ctx, node)
        if tpu == "maybe":
            # `devices="auto"` would also change the other (GPU) run: report only.
            self.report(
                arg,
                _devices_message(value).replace(
                    "on a TPU Trainer",
                    f"on a Trainer that runs on TPUs when {_tpu_condition(self.ctx, node)}",
                ),
            )
            return
        if tpu != "yes":
            return
        quote = (
            "'"
            if isinstance(arg.value, cst.SimpleString) and arg.value.value.startswith("'")
            else '"'
        )
        self.report(
            arg,
            _devices_message(value),
            replacement=arg.with_changes(value=cst.SimpleString(f"{quote}auto{quote}")),
        )

    def check_yaml(self, document: YamlDocument) -> None:
        trainer = document.find("trainer")
        entry = trainer.child("devices") if trainer is not None else None
        if trainer is None or entry is None or entry.value_start is None or entry.value_end is None:
            return
        value = entry.value
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or value == 1:
            return
        accelerator = trainer.child("accelerator")
        strategy = trainer.child("strategy")
        tpu = accelerator is not None and str(accelerator.value).lower() == "tpu"
        if not tpu and not (
            strategy is not None and str(strategy.value).lower() in XLA_STRATEGY_NAMES
        ):
            return
        self.report_yaml(
            entry.value_start,
            entry.value_end,
            _devices_message(value).replace("`devices=", "`devices: "),
            edits=[Edit(entry.value_start, entry.value_end, "auto")],
        )


def _devices_message(value: int) -> str:
    return (
        f"`devices={value}` on a TPU Trainer works only on hosts with exactly {value} TPU devices "
        "(v2-8/v3-8 have 8, v4 and v5p hosts expose 4; anything else raises ValueError); use "
        '`devices="auto"`'
    )


# --- TPU008 --------------------------------------------------------------------------------

_XRT_NAMES = ("XRT_TPU_CONFIG", "TPU_IP_ADDRESS")
_XLA_DIST = "torch_xla.distributed.xla_dist"


def _is_xrt_name(name: str) -> bool:
    return name in _XRT_NAMES or name.startswith("XRT_")


class XrtRuntime(Rule):
    """
    ## What it does
    Finds configuration of the retired XRT runtime: environment variables such as
    `XRT_TPU_CONFIG` and `TPU_IP_ADDRESS` set in code (`os.environ[...] = ...`,
    `os.environ.setdefault`, `os.putenv`, `os.environ.update`, environment dictionaries
    passed to subprocesses), imports of `torch_xla.distributed.xla_dist`, and command strings
    that launch `xla_dist`.

    ## Why is this bad on TPU?
    torch_xla dropped XRT after 2.1 and runs only on PJRT; `torch_xla.distributed.xla_dist`
    (the XRT pod launcher) no longer exists, and Lightning's XLA accelerator raises
    `The XLA XRT runtime is not supported anymore.` when it sees `XRT_TPU_CONFIG`. On a TPU
    VM, PJRT needs only `PJRT_DEVICE=TPU` (the default when nothing is set); pods are launched
    by running the same command on every host (`gcloud compute tpus tpu-vm ssh --worker=all`).

    ## Example
    ```python
    import os

    os.environ["XRT_TPU_CONFIG"] = "localservice;0;localhost:51011"
    ```

    ## Use instead
    ```python
    import os

    os.environ["PJRT_DEVICE"] = "TPU"
    ```

    ## Fix safety
    Display-only: the suggested `PJRT_DEVICE=TPU` replaces the XRT setup on a TPU VM, but
    XRT-era launch scripts (pod launchers, Colab TPU nodes) need more than one line to move
    to PJRT.

    ## References
    - [torch_xla docs: PJRT runtime (migrating from XRT)](https://github.com/pytorch/xla/blob/master/docs/source/learn/pjrt.md)
    - [Lightning source: XLAAccelerator rejects XRT](https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/fabric/accelerators/xla.py)
    - [torch_xla 2.1 release: last release with XRT](https://github.com/pytorch/xla/releases/tag/v2.1.0)
    """

    code = "TPU008"
    name = "xrt-runtime"
    summary = "XRT runtime configuration (`XRT_TPU_CONFIG`, `TPU_IP_ADDRESS`, `xla_dist`)"
    severity = Severity.ERROR
    fix_applicability = Applicability.DISPLAY_ONLY
    fix_sometimes = True
    fix_message = "Use PJRT: `PJRT_DEVICE=TPU`"
    requires = ("XRT_", "TPU_IP_ADDRESS", "xla_dist")

    VALID = (
        Valid('import os\n\nos.environ["PJRT_DEVICE"] = "TPU"\n'),
        # Reading it to refuse XRT is fine.
        Valid(
            'import os\n\nif "XRT_TPU_CONFIG" in os.environ:\n'
            '    raise RuntimeError("XRT is gone")\n'
        ),
        Valid('def launch():\n    """Replaces the old xla_dist launcher."""\n'),
    )
    INVALID = (
        Invalid(
            'import os\n\nos.environ["XRT_TPU_CONFIG"] = "localservice;0;localhost:51011"\n',
            line=3,
            message="PJRT_DEVICE=TPU",
            expected_suggestion='import os\n\nos.environ["PJRT_DEVICE"] = "TPU"\n',
        ),
        Invalid(
            "import os\n\n"
            "os.environ['XRT_TPU_CONFIG'] = (\n"
            "    'tpu_worker;0;' + os.environ['TPU_IP_ADDRESS'] + ':8470'\n"
            ")\n",
        ),
        Invalid("import torch_xla.distributed.xla_dist as xd\n", message="no longer exists"),
        Invalid(
            "import subprocess\n\n"
            'cmd = ["python", "-m", "torch_xla.distributed.xla_dist", "--tpu=my-pod"]\n'
            'subprocess.run(cmd + ["--", "python", "train.py"])\n',
            message="xla_dist",
        ),
        Invalid(
            "import subprocess\n\n"
            'subprocess.run(["python", "train.py"], env={"TPU_IP_ADDRESS": "10.0.0.2"})\n',
        ),
    )

    def visit_Module(self, node: cst.Module) -> bool | None:
        self._enabled = not is_framework_file(self.ctx)
        return None

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._enabled:
            self._env(node)

    def visit_Call(self, node: cst.Call) -> None:
        if self._enabled:
            self._env(node)

    def _env(self, node: cst.CSTNode) -> None:
        for access in env_accesses(self.ctx, node):
            if access.kind == "read" or not _is_xrt_name(access.name):
                continue
            replacement = None
            if (
                access.kind == "assign"
                and access.name == "XRT_TPU_CONFIG"
                and isinstance(node, cst.Assign)
            ):
                assert isinstance(access.key, cst.SimpleString)
                target = node.targets[0].target
                assert isinstance(target, cst.Subscript)
                new_target = target.with_changes(
                    slice=[
                        target.slice[0].with_changes(
                            slice=cst.Index(with_string_value(access.key, "PJRT_DEVICE"))
                        )
                    ]
                )
                quote = '"' if '"' in access.key.value else "'"
                replacement = node.with_changes(
                    targets=[node.targets[0].with_changes(target=new_target)],
                    value=cst.SimpleString(f"{quote}TPU{quote}"),
                )
            self.report(
                node if access.kind == "assign" else access.key,
                _xrt_env_message(access.name),
                replacement=replacement,
            )

    def visit_DictElement(self, node: cst.DictElement) -> None:
        if not self._enabled:
            return
        name = string_value(node.key)
        if name is None or not _is_xrt_name(name):
            return
        # os.environ.update({...}) is reported by _env.
        holder = self.ctx.parent(self.ctx.parent(node) or node)
        call = self.ctx.parent(holder) if isinstance(holder, cst.Arg) else None
        if isinstance(call, cst.Call) and self.ctx.qualify(call.func) == "os.environ.update":
            return
        self.report(node.key, _xrt_env_message(name))

    def visit_Import(self, node: cst.Import) -> None:
        if not self._enabled:
            return
        for alias in node.names:
            if module_name_of(alias.name).startswith(_XLA_DIST):
                self.report(alias, _XLA_DIST_MESSAGE)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if not self._enabled or node.relative:
            return
        base = module_name_of(node.module)
        if base.startswith(_XLA_DIST):
            self.report(node, _XLA_DIST_MESSAGE)
        elif base == "torch_xla.distributed" and not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                if module_name_of(alias.name) == "xla_dist":
                    self.report(alias, _XLA_DIST_MESSAGE)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if not self._enabled:
            return
        value = string_value(node)
        if value is None or isinstance(self.ctx.parent(node), cst.Expr):
            return
        if _XLA_DIST in value and value.strip().startswith(
            ("python", "-m", _XLA_DIST, "torch_xla")
        ):
            self.report(
                node,
                "launches `xla_dist`, the XRT pod launcher removed with XRT; with PJRT run the "
                "training command on every host (`gcloud compute tpus tpu-vm ssh --worker=all`) "
                "with `PJRT_DEVICE=TPU`",
            )
        elif re.search(r"\b(XRT_TPU_CONFIG|TPU_IP_ADDRESS)=", value):
            self.report(
                node,
                _xrt_env_message(re.search(r"\b(XRT_TPU_CONFIG|TPU_IP_ADDRESS)=", value).group(1)),
            )


_XLA_DIST_MESSAGE = (
    "`torch_xla.distributed.xla_dist` (the XRT pod launcher) no longer exists in torch_xla 2.x "
    "(ModuleNotFoundError); with PJRT run the same command on every host with `PJRT_DEVICE=TPU`"
)


def _xrt_env_message(name: str) -> str:
    return (
        f"`{name}` configures the XRT runtime, which torch_xla dropped after 2.1 (Lightning raises "
        '"The XLA XRT runtime is not supported anymore"); set `PJRT_DEVICE=TPU` instead'
    )


# --- TPU005 --------------------------------------------------------------------------------

_XLA_DEVICE_FUNCS = frozenset(
    {"torch_xla.core.xla_model.xla_device", "torch_xla.device", "torch_xla.torch_xla.device"}
)
# Hooks that run before Lightning has moved the module to its device.
_PRE_MOVE_METHODS = frozenset(
    {
        "__init__",
        "setup",
        "prepare_data",
        "configure_model",
        "configure_sharded_model",
        "on_load_checkpoint",
        "load_state_dict",
        "__new__",
        "__post_init__",
        "teardown",
        "state_dict",
        "on_save_checkpoint",
        "train_dataloader",
        "val_dataloader",
        "test_dataloader",
        "predict_dataloader",
    }
)


def _enclosing_method(ctx) -> tuple[object | None, cst.FunctionDef | None]:
    """(ClassInfo, FunctionDef) of the method the walk is in (through nested defs)."""
    info = ctx.function
    while info is not None:
        if info.cls is not None:
            return info.cls, info.node
        info = info.parent
    return None, None


def _first_param(method: cst.FunctionDef) -> str | None:
    params = [*method.params.posonly_params, *method.params.params]
    if not params:
        return None
    for decorator in method.decorators:
        if isinstance(decorator.decorator, cst.Name) and decorator.decorator.value in (
            "staticmethod",
            "classmethod",
        ):
            return None
    return params[0].name.value


def _param_names(method: cst.FunctionDef) -> set[str]:
    params = method.params
    return {p.name.value for p in [*params.posonly_params, *params.params, *params.kwonly_params]}


def device_expression(ctx) -> tuple[str | None, str]:
    """The expression for "the device Lightning put this module on" where the walk is:
    (`self.device` in LightningModule methods, `pl_module.device` in callback hooks, None),
    and why there is none."""
    klass, method = _enclosing_method(ctx)
    if klass is None or method is None:
        return None, "outside a Lightning class"
    if method.name.value in _PRE_MOVE_METHODS:
        return None, f"in `{method.name.value}`, before Lightning moves the module to its device"
    kind = klass.kind
    if kind & ClassKind.LIGHTNING_MODULE and _first_param(method) == "self":
        if _rebinds(method, "self"):
            return None, "`self` is rebound"
        return "self.device", ""
    if kind & ClassKind.CALLBACK and "pl_module" in _param_names(method):
        return "pl_module.device", ""
    return None, "no module at hand"


def _rebinds(method: cst.FunctionDef, name: str) -> bool:
    for node in walk(method.body):
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            targets = (
                [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            )
            if any(isinstance(t, cst.Name) and t.value == name for t in targets):
                return True
    return False


class XlaDeviceInLightning(Rule):
    """
    ## What it does
    Finds `xm.xla_device()` and `torch_xla.device()` inside LightningModules, DataModules and
    Callbacks.

    ## Why is this bad on TPU?
    Lightning owns device placement on TPUs: it spawns one process per TPU device, moves the
    module to that process's device and wraps the loaders in `MpDeviceLoader`. Asking
    torch_xla for a device yourself fights that: called before the processes are spawned
    (in `__init__`, at import time, in `prepare_data`), it initialises the XLA runtime in the
    launcher process and the spawn then fails ("Cannot replicate if number of devices (1) is
    different from 8"); inside the workers it returns the default device rather than the
    module's. Lightning's TPU FAQ says: "Don't use `xm.xla_device()` while working on
    Lightning + TPUs!"

    ## Example
    ```python
    import lightning as L
    import torch
    import torch_xla.core.xla_model as xm


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            noise = torch.randn(batch.shape, device=xm.xla_device())
            return self(batch + noise).sum()
    ```

    ## Use instead
    ```python
    import lightning as L
    import torch


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            noise = torch.randn(batch.shape, device=self.device)
            return self(batch + noise).sum()
    ```

    ## Fix safety
    In LightningModule methods that run after the move (step methods, `forward`, `on_*`
    hooks and the helpers they call) the fix writes `self.device` (`pl_module.device` in
    Callback hooks); it is unsafe because the process's default XLA device and the module's
    device can differ when a specific core was chosen (`devices=[5]`). In `__init__`,
    `setup` and other hooks that run before the move there is no device to ask for: create
    tensors on the CPU (`register_buffer` for state) and let Lightning move them; there the
    finding has no fix, or a display-only one that drops `.to(xm.xla_device())`.

    ## References
    - [Lightning docs: TPU FAQ ("Don't use xm.xla_device()")](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_faq.html)
    - [Lightning docs: hardware-agnostic code (`self.device`, `register_buffer`)](https://lightning.ai/docs/pytorch/stable/accelerators/accelerator_prepare.html)
    """

    code = "TPU005"
    name = "xla-device-in-lightning"
    summary = "`xm.xla_device()` / `torch_xla.device()` inside Lightning classes"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = "Use the device Lightning chose (`self.device`)"
    requires = ("xla_device", "torch_xla")

    VALID = (
        # Plain torch_xla training loops own their devices.
        Valid(
            "import torch_xla.core.xla_model as xm\n\ndef main():\n    device = xm.xla_device()\n"
        ),
        Valid(
            "import lightning as L\nimport torch\n\n\nclass Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        return self(batch.to(self.device)).sum()\n"
        ),
        # A plain nn.Module is not Lightning's to place.
        Valid(
            "import torch\nimport torch_xla\n\n\nclass Block(torch.nn.Module):\n"
            "    def forward(self, x):\n        return x.to(torch_xla.device())\n"
        ),
    )
    INVALID = (
        Invalid(
            "import lightning as L\nimport torch\nimport torch_xla.core.xla_model as xm\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        mask = torch.ones(4, device=xm.xla_device())\n"
            "        return self(batch * mask).sum()\n",
            expected_fix="import lightning as L\nimport torch\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        mask = torch.ones(4, device=self.device)\n"
            "        return self(batch * mask).sum()\n",
            line=8,
            applicability=Applicability.UNSAFE,
            message="Lightning owns device placement",
        ),
        # A callback hook uses the module it is given.
        Invalid(
            "import torch\nimport torch_xla\nfrom lightning.pytorch.callbacks import Callback\n\n\n"
            "class Probe(Callback):\n"
            "    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):\n"
            "        self.seen = torch.zeros(1, device=torch_xla.device())\n",
            expected_fix="import torch\nimport torch_xla\n"
            "from lightning.pytorch.callbacks import Callback\n\n\n"
            "class Probe(Callback):\n"
            "    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):\n"
            "        self.seen = torch.zeros(1, device=pl_module.device)\n",
        ),
        # In __init__ there is no device yet: drop the move (display-only).
        Invalid(
            "import lightning as L\nimport torch\nimport torch_xla.core.xla_model as xm\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.net = torch.nn.Linear(4, 4).to(xm.xla_device())\n",
            message="in `__init__`",
            applicability=Applicability.DISPLAY_ONLY,
            expected_suggestion="import lightning as L\nimport torch\n"
            "import torch_xla.core.xla_model as xm\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.net = torch.nn.Linear(4, 4)\n",
        ),
        Invalid(
            "import lightning as L\nimport torch_xla.core.xla_model as xm\n\n\n"
            "class Data(L.LightningDataModule):\n"
            "    def setup(self, stage):\n"
            "        self.device = xm.xla_device()\n",
            message="before Lightning moves",
        ),
    )

    def visit_Module(self, node: cst.Module) -> bool | None:
        self._renames: list[Rename] = []
        return None

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if ctx.lightning_class is None or ctx.qualify(node.func) not in _XLA_DEVICE_FUNCS:
            return
        call_code = source_of(ctx, node)
        expression, why = device_expression(ctx)
        head = (
            f"`{call_code}` in a Lightning class: Lightning owns device placement on TPUs (one "
            "process per device, module already moved)"
        )
        if expression is not None and not node.args:
            root = _root_local(node.func)
            self._renames.append(
                Rename(
                    report_node=node,
                    old=node,
                    new=cst.parse_expression(expression),
                    local=root,
                    needs=None,
                    message=f"{head}; use `{expression}`",
                    applicability=Applicability.UNSAFE,
                    fix_message=f"Use `{expression}`",
                    drop_old=root != "torch_xla",
                )
            )
            return
        move = _to_call_around(ctx, node)
        if move is not None:
            self.report(
                node,
                f"{head}; {why} there is no device to ask for: drop the `.to(...)` and let "
                "Lightning move the module",
                replacement=strip_call_suffix(move),
                replaces=move,
                applicability=Applicability.DISPLAY_ONLY,
            )
            return
        self.report(
            node,
            f"{head}; {why}: create tensors on the CPU (`register_buffer` for state) and let "
            "Lightning move them",
        )

    def leave_Module(self, node: cst.Module) -> None:
        if self._renames:
            plan_renames(self.ctx, self, self._renames)


def _to_call_around(ctx, node: cst.Call) -> cst.Call | None:
    """`x.to(<node>)` when `node` is the only argument of a `.to(...)` call."""
    arg = ctx.parent(node)
    call = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
    if (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "to"
        and len(call.args) == 1
    ):
        return call
    return None


# --- TPU006 --------------------------------------------------------------------------------

# torch.cuda functions that need a CUDA device (they raise "Found no NVIDIA driver" or a CUDA
# error on a TPU host, measured with torch 2.9). `is_available`, `device_count`,
# `empty_cache`, the seeding and memory-statistics helpers are harmless there.
_CUDA_ONLY_FUNCS = frozenset(
    {
        "synchronize",
        "current_device",
        "set_device",
        "get_device_name",
        "get_device_capability",
        "get_device_properties",
        "Stream",
        "current_stream",
        "default_stream",
        "set_stream",
        "Event",
        "CUDAGraph",
        "graph",
        "device",
        "mem_get_info",
        "reset_peak_memory_stats",
        "ipc_collect",
        "utilization",
        "FloatTensor",
        "DoubleTensor",
        "HalfTensor",
        "BFloat16Tensor",
        "LongTensor",
        "IntTensor",
        "ShortTensor",
        "ByteTensor",
        "CharTensor",
        "BoolTensor",
        "is_current_stream_capturing",
    }
)
# Methods that implement device moves themselves (`def cuda(self): ... super().cuda()`).
_DEVICE_MOVE_OVERRIDES = frozenset(
    {"cuda", "to", "cpu", "_apply", "type", "half", "float", "double", "bfloat16", "xpu"}
)
_SAFE_DEVICE_HOOK_PREFIXES = ("on_",)


def _cuda_string(node: cst.BaseExpression | None) -> str | None:
    value = string_value(node) if node is not None else None
    if value is not None and (value == "cuda" or value.startswith("cuda:")):
        return value
    return None


class HardcodedCuda(Rule):
    """
    ## What it does
    Finds hard-coded CUDA in code that runs on the TPU: `.cuda()`, `.to("cuda")`,
    `torch.device("cuda")`, `device="cuda"` arguments and `torch.cuda.*` calls that need a
    GPU (`synchronize`, `current_device`, `set_device`, streams, events, CUDA graphs, the
    legacy `torch.cuda.FloatTensor` types), in LightningModules, DataModules and Callbacks,
    in every method of `nn.Module` classes, in functions called from `forward` or the step
    methods, and in training scripts (functions that build a Lightning Trainer). Not
    reported: code guarded by a device check (`if torch.cuda.is_available():`,
    `if self.device.type == "cuda":`, `... if torch.cuda.is_available() else ...`),
    overrides that implement device moves (`def cuda(self, device=None): return
    super().cuda(device)`), code that is CUDA-only by design (classes and functions named
    for CUDA or GPUs, such as `CUDAGraphCallback`, and modules that implement CUDA kernels
    with numba, CuPy or Triton), and Lightning's own source.

    ## Why is this bad on TPU?
    TPU hosts have no CUDA device: `.cuda()` and CUDA factory calls raise
    `RuntimeError: Found no NVIDIA driver on your system` there, so the run fails at the
    first step that reaches the line. Lightning already moves the module and each batch to
    the right device (TPU, GPU or CPU); code that asks for `self.device` runs everywhere.

    ## Example
    ```python
    import lightning as L
    import torch


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            noise = torch.randn(batch.shape).cuda()
            return self(batch + noise).sum()
    ```

    ## Use instead
    ```python
    import lightning as L
    import torch


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            noise = torch.randn(batch.shape).to(self.device)
            return self(batch + noise).sum()
    ```

    ## Fix safety
    In LightningModule methods that run after Lightning moved the module (step methods,
    `forward`, `on_*` hooks and the helpers they call), `x.cuda()` becomes
    `x.to(self.device)`, and `"cuda"` / `torch.device("cuda")` become `self.device`
    (`pl_module.device` in Callback hooks); this is safe: on a GPU run Lightning sets the
    current CUDA device of each process to the module's device, so both name the same
    device. Elsewhere (`__init__`, `setup`, helpers not reached from a hook, explicit indices
    like `"cuda:1"`) the same rewrite is shown as a display-only suggestion, because the
    module may still be on the CPU there. In plain `nn.Module` code the suggestion uses the
    device of the first input tensor (`x.to(inputs.device)`); in a training script it drops
    the `.cuda()` (the Trainer moves the model). `torch.cuda.*` calls have no automatic fix:
    guard them with `if torch.cuda.is_available():` or remove them.

    ## References
    - [Lightning docs: hardware-agnostic code ("Delete .cuda() or .to() calls")](https://lightning.ai/docs/pytorch/stable/accelerators/accelerator_prepare.html)
    - [Lightning docs: TPU FAQ](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_faq.html)
    """

    code = "TPU006"
    name = "hardcoded-cuda"
    summary = (
        'Hard-coded CUDA (`.cuda()`, `torch.device("cuda")`, `torch.cuda.*`) in code that runs '
        "on the TPU"
    )
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    fix_sometimes = True
    fix_message = "Use the module's device (`self.device`)"
    requires = ("cuda",)

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        # Reported in Lightning classes, torch modules, hot code and training scripts.
        kinds = view.class_kinds
        return (
            kinds.is_lightning
            or bool(kinds & ClassKind.TORCH_MODULE)
            or view.has_hot_code
            or "Trainer" in source
        )

    VALID = (
        # Guarded by a device check.
        Valid(
            _HEAD6 + "    def training_step(self, batch, batch_idx):\n"
            "        if torch.cuda.is_available():\n            torch.cuda.synchronize()\n"
            "        return self(batch).sum()\n"
        ),
        Valid(
            _HEAD6 + "    def forward(self, x):\n"
            '        d = torch.device("cuda:0") if torch.cuda.is_available() else '
            'torch.device("cpu")\n'
            "        return self.net(x.to(d))\n"
        ),
        Valid(
            _HEAD6 + "    def training_step(self, batch, batch_idx):\n"
            '        if self.device.type == "cuda":\n            batch = batch.cuda()\n'
            "        return self(batch).sum()\n"
        ),
        # A device-move override (Lightning's device_dtype_mixin shape).
        Valid(
            "import torch\nfrom torch.nn import Module\n\n\nclass DeviceMixin(Module):\n"
            "    def cuda(self, device=None):\n"
            "        if device is None:\n"
            '            device = torch.device("cuda", torch.cuda.current_device())\n'
            "        return super().cuda(device=device)\n"
        ),
        # Harmless without a GPU.
        Valid(_HEAD6 + "    def on_train_epoch_end(self):\n        torch.cuda.empty_cache()\n"),
        # A CLI script outside Lightning/nn.Module code.
        Valid("import torch\n\ndef main(model):\n    model.cuda()\n"),
        # CUDA-only by design: a callback named for CUDA graphs (NeMo's CUDAGraphCallback).
        Valid(
            "import torch\nfrom lightning.pytorch.callbacks import Callback\n\n\n"
            "class CUDAGraphCallback(Callback):\n"
            "    def on_fit_start(self, trainer, pl_module):\n"
            "        self.stream = torch.cuda.Stream()\n"
        ),
        # A numba CUDA kernel module.
        Valid(
            "import torch\nfrom numba import cuda\nfrom torch import nn\n\n\n"
            "class SpecAugmentNumba(nn.Module):\n"
            "    def forward(self, x):\n"
            "        stream = torch.cuda.current_stream(x.device).cuda_stream\n"
            "        torch.cuda.synchronize()\n"
            "        return x\n"
        ),
    )
    INVALID = (
        Invalid(
            _HEAD6 + "    def training_step(self, batch, batch_idx):\n"
            "        noise = torch.randn(batch.shape).cuda()\n"
            "        return self(batch + noise).sum()\n",
            expected_fix=_HEAD6 + "    def training_step(self, batch, batch_idx):\n"
            "        noise = torch.randn(batch.shape).to(self.device)\n"
            "        return self(batch + noise).sum()\n",
            line=7,
            applicability=Applicability.SAFE,
            message="no CUDA device",
        ),
        # moco2's _batch_shuffle_ddp (reached from forward).
        Invalid(
            _HEAD6 + "    def forward(self, x):\n        return self._shuffle(x)\n\n"
            "    def _shuffle(self, x):\n"
            "        idx = torch.randperm(x.shape[0]).cuda(non_blocking=True)\n"
            "        return x[idx]\n",
            expected_fix=_HEAD6 + "    def forward(self, x):\n        return self._shuffle(x)\n\n"
            "    def _shuffle(self, x):\n"
            "        idx = torch.randperm(x.shape[0]).to(self.device, non_blocking=True)\n"
            "        return x[idx]\n",
        ),
        Invalid(
            _HEAD6 + "    def validation_step(self, batch, batch_idx):\n"
            '        ref = torch.zeros(4, device="cuda")\n'
            '        other = torch.ones(4, device=torch.device("cuda"))\n'
            "        torch.cuda.synchronize()\n"
            "        return ref + other\n",
            count=3,
            expected_fix=_HEAD6 + "    def validation_step(self, batch, batch_idx):\n"
            "        ref = torch.zeros(4, device=self.device)\n"
            "        other = torch.ones(4, device=self.device)\n"
            "        torch.cuda.synchronize()\n"
            "        return ref + other\n",
        ),
        # A loss module's forward (nemo's MultiSimilarityLoss shape): display-only.
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Loss(nn.Module):\n"
            "    def forward(self, logits, labels):\n"
            "        loss = torch.zeros([], requires_grad=True).cuda()\n"
            "        return loss\n",
            line=7,
            applicability=Applicability.DISPLAY_ONLY,
            expected_suggestion="import torch\nfrom torch import nn\n\n\nclass Loss(nn.Module):\n"
            "    def forward(self, logits, labels):\n"
            "        loss = torch.zeros([], requires_grad=True).to(logits.device)\n"
            "        return loss\n",
        ),
        Invalid(
            _HEAD6 + '    def on_train_start(self):\n        self.ema = self.ema.to("cuda")\n',
            expected_fix=_HEAD6 + "    def on_train_start(self):\n"
            "        self.ema = self.ema.to(self.device)\n",
            applicability=Applicability.SAFE,
        ),
        # A training script: the Trainer moves the model itself.
        Invalid(
            "import lightning as L\n\n\ndef main():\n"
            "    model = Model().cuda()\n"
            '    L.Trainer(accelerator="tpu").fit(model)\n',
            message="drop `.cuda()`",
            expected_suggestion="import lightning as L\n\n\ndef main():\n"
            "    model = Model()\n"
            '    L.Trainer(accelerator="tpu").fit(model)\n',
        ),
        # A LightningModule helper that is not a hook (fastpitch's interpolate_speaker).
        Invalid(
            _HEAD6 + "    def interpolate(self, a):\n"
            "        return self.emb(torch.tensor(a, dtype=torch.int32).cuda())\n",
            applicability=Applicability.DISPLAY_ONLY,
        ),
    )

    def visit_Module(self, node: cst.Module) -> bool | None:
        self._kernel_file: bool | None = None
        self._launchers: dict[int, bool] = {}
        return None

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "cuda":
            if not _is_super_call(func.value) and ctx.qualify(func) != "torch.cuda":
                self._check(node, "cuda()")
        elif isinstance(func, cst.Attribute) and func.attr.value == "to":
            positional = [a for a in node.args if a.keyword is None and not a.star]
            if positional and _cuda_string(positional[0].value) is not None:
                self._check(positional[0].value, "string", call=node)
        else:
            qualified = ctx.qualify(func)
            if (
                qualified == "torch.device"
                and node.args
                and _cuda_string(node.args[0].value) is not None
            ):
                if len(node.args) == 1:
                    self._check(node, "torch.device")
                else:
                    self._check(node, "torch.device-index")
                return
            if qualified is not None and qualified.startswith("torch.cuda."):
                attr = qualified[len("torch.cuda.") :]
                if attr in _CUDA_ONLY_FUNCS:
                    self._check(node, "torch.cuda")
                return
        for arg in node.args:
            if (
                arg.keyword is not None
                and arg.keyword.value == "device"
                and _cuda_string(arg.value)
            ):
                self._check(arg.value, "string", call=node)

    def _in_scope(self) -> bool:
        ctx = self.ctx
        if ctx.lightning_class is not None or ctx.in_hot_code or self._launcher() is not None:
            return True
        klass = ctx.klass
        return (
            klass is not None
            and bool(klass.kind & ClassKind.TORCH_MODULE)
            and ctx.function is not None
        )

    def _check(self, node: cst.BaseExpression, kind: str, call: cst.Call | None = None) -> None:
        ctx = self.ctx
        if not self._in_scope() or is_framework_file(ctx):
            return
        _, method = _enclosing_method(ctx)
        if method is not None and method.name.value in _DEVICE_MOVE_OVERRIDES:
            return
        if device_guarded(ctx, node) or self._cuda_specific_code():
            return
        expression, _ = device_expression(ctx)
        code = source_of(ctx, node)
        where = f" in {ctx.hot_reason}" if ctx.in_hot_code else ""
        if kind == "torch.cuda":
            self.report(
                node,
                f"`{code}`{where} needs a CUDA device: TPU hosts have none (RuntimeError: no "
                "NVIDIA driver); guard it with `if torch.cuda.is_available():` or remove it",
            )
            return
        safe = expression is not None and self._runs_after_move()
        applicability = Applicability.SAFE if safe else Applicability.DISPLAY_ONLY
        suggestion_device = expression or _input_device(ctx)
        if kind == "string" and _cuda_string(node) != "cuda":
            applicability = Applicability.DISPLAY_ONLY
        if kind == "torch.device-index":
            applicability = Applicability.DISPLAY_ONLY
        head = (
            f"`{code}`{where} hard-codes CUDA: TPU hosts have no CUDA device (RuntimeError: no "
            "NVIDIA driver)"
        )
        if suggestion_device is None and self._launcher() is not None and kind == "cuda()":
            assert isinstance(node, cst.Call)
            self.report(
                node,
                f"{head}; the Trainer moves the model to the TPU itself: drop `.cuda()`",
                replacement=strip_call_suffix(node) if not node.args else None,
                applicability=Applicability.DISPLAY_ONLY,
            )
            return
        if suggestion_device is None:
            self.report(node, f"{head}; use the device of the module or of an input tensor")
            return
        if kind == "cuda()":
            assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
            positional = [a for a in node.args if a.keyword is None and not a.star]
            if positional or any(a.star for a in node.args):
                applicability = Applicability.DISPLAY_ONLY
                rest = [a for a in node.args if a.keyword is not None]
            else:
                rest = list(node.args)
            device_arg = cst.Arg(cst.parse_expression(suggestion_device))
            if rest:
                device_arg = device_arg.with_changes(
                    comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                )
                rest[-1] = rest[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            replacement = node.with_changes(
                func=node.func.with_changes(attr=cst.Name("to")), args=[device_arg, *rest]
            )
            message = f"{head}; use `.to({suggestion_device})`"
        else:
            replacement = cst.parse_expression(suggestion_device)
            message = f"{head}; use `{suggestion_device}`"
        self.report(node, message, replacement=replacement, applicability=applicability)

    def _launcher(self) -> cst.FunctionDef | None:
        """The outermost function around the walk when it builds a Lightning Trainer (a
        training script's `main`): the model it moves to CUDA is the one the Trainer runs."""
        info = self.ctx.function
        if info is None:
            return None
        while info.parent is not None:
            info = info.parent
        key = id(info.node)
        if key not in self._launchers:
            self._launchers[key] = contains_trainer_call(self.ctx, info.node.body)
        return info.node if self._launchers[key] else None

    def _cuda_specific_code(self) -> bool:
        """Code that is CUDA-only by design: a class or function named for it
        (`CUDAGraphCallback`, `_batch_to_cuda`), or a file that implements CUDA kernels
        (imports `numba.cuda`, `cupy`, `pycuda`, `triton`)."""
        ctx = self.ctx
        if self._kernel_file is None:
            self._kernel_file = any(
                target.split(".", 1)[0] in ("cupy", "pycuda", "triton")
                or target.startswith("numba.cuda")
                for target in ctx.aliases.bindings.values()
            )
        if self._kernel_file:
            return True
        names = [info.name for info in _function_chain(ctx)]
        klass = ctx.klass
        if klass is not None:
            names.append(klass.name)
        return any(_CUDA_NAME.search(name) for name in names)

    def _runs_after_move(self) -> bool:
        ctx = self.ctx
        if ctx.in_hot_code:
            return True
        _, method = _enclosing_method(ctx)
        return method is not None and method.name.value.startswith(_SAFE_DEVICE_HOOK_PREFIXES)


_CUDA_NAME = re.compile(r"(?i)cuda|gpu|nccl|cudnn|cugraph")


def _function_chain(ctx):
    info = ctx.function
    while info is not None:
        yield info
        info = info.parent


def _is_super_call(node: cst.BaseExpression) -> bool:
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value == "super"
    )


def _input_device(ctx) -> str | None:
    """`x.device` for the first tensor parameter of the enclosing hot function."""
    info = ctx.function
    if info is None or not info.hot:
        return None
    params = [*info.node.params.posonly_params, *info.node.params.params]
    for param in params:
        name = param.name.value
        if name in ("self", "cls"):
            continue
        if ctx.value_kind(cst.Name(name)).may_be_device and param.star == "":
            return f"{name}.device"
        return None
    return None

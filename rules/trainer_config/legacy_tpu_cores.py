"""TPU001 legacy-tpu-cores."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.yaml_config import YamlDocument
from tpulint.datatypes.diagnostics import (
    Applicability,
    Edit,
    Location,
    RelatedLocation,
    Severity,
)
from tpulint.rule_api.cst_helpers import keyword_arg, make_arg, replace_arg, string_value
from tpulint.rule_api.rule import Invalid, RelatedNode, Rule, Valid

from ..shared.configuration import CLI_VALUE, literal_candidates, option_dest
from ..shared.matchers import (
    LEGACY_TPU_KEYWORDS,
    contains_trainer_call,
    is_literal,
    is_trainer_call,
    walk,
)
from .helpers import _LIGHTNING_IMPORT


def _takes_whole_namespace(call: cst.Call) -> bool:
    """A Trainer built from a parsed command line as a whole, Lightning 1's generic Trainer
    flags: `Trainer.from_argparse_args(args, ...)`, `Trainer(**vars(args))`, of the namespace
    itself (`args`, `self.hparams`; not a `Namespace(**kept)` built from what the code kept)."""
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "from_argparse_args":
        first = call.args[0] if call.args else None
        return (
            first is not None
            and first.keyword is None
            and not first.star
            and _namespace(first.value)
        )
    return any(
        arg.star == "**"
        and isinstance(arg.value, cst.Call)
        and isinstance(arg.value.func, cst.Name)
        and arg.value.func.value == "vars"
        and len(arg.value.args) == 1
        and _namespace(arg.value.args[0].value)
        for arg in call.args
    )


def _namespace(node: cst.BaseExpression) -> bool:
    """The parsed namespace itself: `args`, `self.hparams`, `parser.parse_args()`."""
    if isinstance(node, cst.Call):
        return isinstance(node.func, cst.Attribute) and node.func.attr.value == "parse_args"
    return isinstance(node, (cst.Name, cst.Attribute))


def _removes(module: cst.Module, key: str) -> bool:
    """Whether the file takes `key` out of a namespace or dict: `d.pop("tpu_cores")`,
    `delattr(args, "tpu_cores")`, `del args.tpu_cores`, `del d["tpu_cores"]`."""
    for node in walk(module):
        if isinstance(node, cst.Call) and node.args:
            func = node.func
            named = (isinstance(func, cst.Attribute) and func.attr.value == "pop") or (
                isinstance(func, cst.Name) and func.value == "delattr"
            )
            index = 1 if isinstance(func, cst.Name) else 0
            if named and len(node.args) > index and string_value(node.args[index].value) == key:
                return True
        elif isinstance(node, cst.Del):
            target = node.target
            if isinstance(target, cst.Attribute) and target.attr.value == key:
                return True
            if isinstance(target, cst.Subscript) and len(target.slice) == 1:
                index = target.slice[0].slice
                if isinstance(index, cst.Index) and string_value(index.value) == key:
                    return True
    return False


def _passed_on(body: cst.CSTNode) -> set[str]:
    """The removed keywords a function body passes on: as a keyword argument of a call, a
    `dict(...)` keyword, a dict key or a subscript key (where the rule reports them)."""
    out: set[str] = set()
    for node in walk(body):
        if isinstance(node, cst.Arg) and node.keyword is not None:
            if node.keyword.value in LEGACY_TPU_KEYWORDS:
                out.add(node.keyword.value)
        elif isinstance(node, cst.DictElement):
            key = string_value(node.key)
            if key in LEGACY_TPU_KEYWORDS:
                out.add(key)
        elif isinstance(node, cst.SubscriptElement) and isinstance(node.slice, cst.Index):
            key = string_value(node.slice.value)
            if key in LEGACY_TPU_KEYWORDS:
                out.add(key)
    return out


class LegacyTpuCores(Rule):
    """
    ## What it does
    Finds the Trainer argument `tpu_cores` (and the older `num_tpu_cores`): in
    `Trainer(...)` calls, in dictionaries of Trainer arguments, in config classes that feed
    the Trainer, as parameters of functions that build a Trainer from them, and under
    `trainer:` in LightningCLI YAML configs, and in Hydra Trainer configs (a
    `configs/trainer/*.yaml` whose `_target_` is the Trainer: its keys are the arguments),
    and in YAML sections the code spreads into a Trainer that ask for TPUs:
    `pl.Trainer(**cfg.trainer)` with `configs/trainer/tpu.yaml` holding `tpu_cores: 8`,
    `Trainer(**cfg.train.pl_trainer)` with `train: {pl_trainer: {tpu_cores: 8}}` in a primary
    config, and as the argparse option that fills it when the file's Trainer takes the parsed
    command line whole (`parser.add_argument("--n_tpu_cores", dest="tpu_cores")` beside
    `Trainer.from_argparse_args(args)` or `Trainer(**vars(args))`).

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

    ## Status
    Stable. On tpu1 it was right on every finding in code that runs on a TPU (4 of 4). Issue 21
    made one problem one finding: the config fields and parameters that feed the removed
    argument are related places of the finding at the call, not findings of their own.
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
        # A Hydra config whose `_target_` is not a Trainer.
        Valid("_target_: pkg.Model\ntpu_cores: 8\n", path="configs/model/net.yaml"),
        # A local variable that happens to have the name.
        Valid(_LIGHTNING_IMPORT + "num_tpu_cores = 0\nprint(num_tpu_cores)\n"),
        # The code takes the option out of what it hands the Trainer.
        Valid(
            "import argparse\n\nimport pytorch_lightning as pl\n\n"
            "parser = argparse.ArgumentParser()\n"
            'parser.add_argument("--tpu_cores", type=int)\n'
            "kept = vars(parser.parse_args())\n"
            'kept.pop("tpu_cores")\n'
            "trainer = pl.Trainer.from_argparse_args(argparse.Namespace(**kept))\n"
        ),
        # An option the file hands to the Trainer by name is reported there, not twice.
        Valid(
            "import argparse\n\nimport pytorch_lightning as pl\n\n"
            "parser = argparse.ArgumentParser()\n"
            'parser.add_argument("--cores", dest="tpu_cores", type=int)\n'
            "args = parser.parse_args()\n"
            "trainer = pl.Trainer(max_epochs=args.epochs)\n"
        ),
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
        # An option whose dest is the removed argument, in a file whose Trainer takes the
        # parsed arguments whole: the option is where the argument comes from.
        Invalid(
            "import argparse\n\nimport pytorch_lightning as pl\n\n"
            "def add_args(parser):\n"
            '    parser.add_argument("--cores", dest="tpu_cores", type=int)\n'
            '    parser.add_argument("--epochs", dest="max_epochs", type=int, default=3)\n\n'
            "def fit(model, args):\n"
            "    trainer = pl.Trainer.from_argparse_args(args, logger=False)\n"
            "    trainer.fit(model)\n",
            line=6,
            message="`--cores` (dest `tpu_cores`) reaches the Trainer as `tpu_cores` through "
            "`Trainer.from_argparse_args(...)`",
        ),
        Invalid(
            "import argparse\n\nimport pytorch_lightning as pl\n\n"
            "parser = argparse.ArgumentParser()\n"
            'parser.add_argument("--tpu_cores", type=int, default=8)\n'
            "trainer = pl.Trainer(**vars(parser.parse_args()))\n",
            line=6,
            message="`--tpu_cores` reaches the Trainer as `tpu_cores` through "
            "`Trainer(**vars(...))`",
        ),
        # A function that takes `tpu_cores` and passes it to the Trainer through a dict: one
        # problem, reported at the dictionary key with the parameter as a related place.
        Invalid(
            "import pytorch_lightning as pl\n\n"
            "def train(data, tpu_cores: int = 0):\n"
            "    params = dict(max_epochs=1)\n"
            "    if tpu_cores > 0:\n"
            '        params["tpu_cores"] = tpu_cores\n'
            "    return pl.Trainer(**params)\n",
            line=6,
            message="(fed by the parameter `tpu_cores` of `train`)",
        ),
        # A config field and the Trainer call that reads it: one finding at the call.
        Invalid(
            "from dataclasses import dataclass\n\nimport pytorch_lightning as pl\n\n\n"
            "@dataclass\nclass TPUConfig:\n    tpu_cores: int = 8\n\n\n"
            "def build(cfg: TPUConfig):\n"
            "    return pl.Trainer(tpu_cores=cfg.tpu_cores)\n",
            line=12,
            message="(fed by the config field `tpu_cores` at example.py:8)",
        ),
        Invalid(
            "trainer:\n  tpu_cores: 8  # all cores\n  max_epochs: 3\n",
            path="config.yaml",
            expected_fix="trainer:\n  accelerator: tpu\n  devices: 8  # all cores\n"
            "  max_epochs: 3\n",
            line=2,
            applicability=Applicability.SAFE,
        ),
        # A Hydra Trainer group file: `hydra.utils.instantiate(cfg.trainer)` passes its keys.
        Invalid(
            "_target_: pytorch_lightning.Trainer\ntpu_cores: 8\nmax_epochs: 3\n",
            path="configs/trainer/tpu.yaml",
            expected_fix="_target_: pytorch_lightning.Trainer\naccelerator: tpu\ndevices: 8\n"
            "max_epochs: 3\n",
            line=2,
            message="`tpu_cores` was removed in Lightning 2.0 (the Trainer `hydra.utils",
            applicability=Applicability.SAFE,
        ),
        # `tpu_cores: null` in a Trainer's list of defaults asks for no TPU.
        Invalid(
            "_target_: pytorch_lightning.Trainer\ngpus: null\ntpu_cores: null\n",
            path="configs/trainer/default.yaml",
            line=3,
            message="`tpu_cores: null` asks for no TPU, so remove it",
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

    def visit_Module(self, node: cst.Module) -> bool | None:
        # The argparse options whose dest is a removed argument, and the Trainer calls that
        # take the parsed command line whole (Lightning 1's generic flags).
        self._options: list[tuple[cst.Call, str]] = []
        self._whole: list[cst.Call] = []
        return None

    def visit_Call(self, node: cst.Call) -> None:
        if (
            isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "add_argument"
            and option_dest(node) in LEGACY_TPU_KEYWORDS
        ):
            self._options.append((node, option_dest(node) or ""))
            return
        if is_trainer_call(self.ctx, node):
            if _takes_whole_namespace(node):
                self._whole.append(node)
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value in LEGACY_TPU_KEYWORDS:
                    self._report_trainer_arg(node, arg)
            return
        if isinstance(node.func, cst.Name) and node.func.value == "dict":
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value in LEGACY_TPU_KEYWORDS:
                    self._report_key(arg.keyword, arg.keyword.value)

    def leave_Module(self, original_node: cst.Module) -> None:
        """An option `--tpu_cores` (or `--n_tpu_cores` with `dest="tpu_cores"`) in a file
        whose Trainer takes the parsed command line whole (`Trainer.from_argparse_args(args)`,
        `Trainer(**vars(args))`) reaches the Trainer as `tpu_cores`: reported at the option,
        unless the file passes the argument where the rule reports it already."""
        if not self._whole or self.reports:
            return
        call = self._whole[0]
        shown = "Trainer.from_argparse_args(...)"
        if not (
            isinstance(call.func, cst.Attribute) and call.func.attr.value == "from_argparse_args"
        ):
            shown = "Trainer(**vars(...))"
        for option, dest in self._options:
            if _removes(original_node, dest):
                continue  # the code takes it out before the Trainer sees the namespace
            flags = [string_value(a.value) for a in option.args if a.keyword is None]
            flag = next((f for f in flags if f), None) or dest
            node: cst.CSTNode = next((a.value for a in option.args if a.keyword is None), option)
            named = f"`{flag}`" + (f" (dest `{dest}`)" if flag.lstrip("-") != dest else "")
            self.report(
                node,
                f"{named} reaches the Trainer as `{dest}` through `{shown}`, which passes it "
                f"the parsed arguments: `{dest}` was removed in Lightning 2.0 (TypeError at "
                "Trainer construction), and `from_argparse_args` with it; take `--accelerator` "
                'and `--devices` and pass `accelerator="tpu", devices=args.devices`',
                related=[RelatedNode(call, "the Trainer built from the parsed arguments")],
            )

    def report(self, node, message, **kwargs):  # type: ignore[override]
        """Every finding of the removed argument carries the places that feed it: the config
        fields of the project with its name, and the parameters of the function around it
        that pass it on (one problem, one finding)."""
        related = list(kwargs.pop("related", ()))
        fed_by = self._feeders(node)
        if fed_by:
            related += [place for place, _ in fed_by]
            described = [text for _, text in fed_by]
            if len(described) > 3:
                described = [*described[:3], f"{len(described) - 3} more"]
            message += f" (fed by {', '.join(described)})"
        super().report(node, message, related=related, **kwargs)

    def _feeders(self, node: cst.CSTNode) -> list[tuple[object, str]]:
        """(related place, description) of what feeds the removed argument at `node`."""
        keyword = self._keyword_of(node)
        if keyword is None or (isinstance(node, cst.Name) and self.ctx.function is None):
            return []  # a config field itself
        out: list[tuple[object, str]] = []
        view = self.ctx.analysis.view
        if view is not None:
            for path, line, column in view.legacy_fields(keyword):
                where = Location(line, column)
                end = Location(line, column + len(keyword))
                shown = f"{view.display(path)}:{line}"
                text = f"the config field `{keyword}` at {shown}"
                out.append((RelatedLocation(path, where, end, f"{text} feeds it"), text))
        info = self.ctx.function
        if info is not None:
            params = info.node.params
            for param in [*params.posonly_params, *params.params, *params.kwonly_params]:
                if param.name.value == keyword and param.name is not node:
                    text = f"the parameter `{keyword}` of `{info.name}`"
                    out.append((RelatedNode(param.name, f"{text} passes it on"), text))
        return out

    @staticmethod
    def _keyword_of(node: cst.CSTNode) -> str | None:
        if isinstance(node, cst.Arg) and node.keyword is not None:
            name = node.keyword.value
        elif isinstance(node, cst.Name):
            name = node.value
        else:
            name = string_value(node) if isinstance(node, cst.BaseExpression) else None
        return name if name in LEGACY_TPU_KEYWORDS else None

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
        view = self.ctx.analysis.view
        if view is not None and view.legacy_keyword_passed(target.value):
            return  # reported at the call that passes it, with this field as a related place
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
                f"`{document.trainer_label}{key}` was removed in Lightning 2.0 "
                f"({document.rejects_key}); "
                f"use `accelerator: tpu` and `devices: {entry.raw}`"
            )
            if entry.value in (None, 0, False, "0"):
                # `tpu_cores: null` asks for no TPU (the full list of defaults): no devices.
                self.report_yaml(
                    entry.key_start,
                    entry.value_end,
                    message.split("; use ")[0] + f"; `{key}: {entry.raw}` asks for no TPU, "
                    "so remove it",
                )
                continue
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
        passed = _passed_on(node.body)
        for param in legacy:
            if param.name.value in passed:
                continue  # reported where it is passed on, with the parameter as related
            self.report(
                param.name,
                f"parameter `{param.name.value}` forwards the Trainer argument removed in "
                f"Lightning 2.0; take `accelerator` and `devices` instead",
            )

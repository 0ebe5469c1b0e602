"""TPU004 unsupported-tpu-precision."""

from __future__ import annotations

import os
import re

import libcst as cst

from tpulint.analysis.project import FileView
from tpulint.analysis.yaml_config import YamlDocument
from tpulint.datatypes.diagnostics import Applicability, Edit, Severity
from tpulint.rule_api.cst_helpers import keyword_arg, string_value
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.configuration import (
    XLA_STRATEGY_NAMES,
    assigned_values,
    is_framework_file,
    lightning_at_least,
    literal_candidates,
    literal_value,
    option_dest,
    strategy_is_xla,
    tpu_arguments,
    trainer_tpu,
    yaml_trainer_is_tpu,
)
from ..shared.matchers import LEGACY_TPU_KEYWORDS, is_trainer_call, walk
from .helpers import _LIGHTNING_IMPORT, _tpu_condition, explicit_accelerator
from .legacy_tpu_cores import _takes_whole_namespace

# `params["precision"] = 16`: a Trainer argument set by key on a dict the code splats.
_PRECISION_KEY_SET = re.compile(r"""\[\s*["']precision["']\s*\]\s*=[^=]""")

# The keywords that can make a Trainer call a TPU one (see trainer_tpu).
_TPU_KEYWORDS = frozenset({"accelerator", "strategy", *LEGACY_TPU_KEYWORDS})

_BAD_TPU_PRECISION = {
    16: "16-mixed",
    "16": "16-mixed",
    "16-mixed": "16-mixed",
    "bf16": "bf16-mixed",
    "bf16-mixed": "bf16-mixed",
}
_NO_FIX_TPU_PRECISION = {64: "64-true", "64": "64-true", "64-true": "64-true"}
_SUPPORTED = '"32-true", "16-true" and "bf16-true"'


# A config path that names TPUs (`pretrain_tpu_128`, `configs/tpu/base`, `v4-tpu`).
_TPU_NAMED = re.compile(r"(?i)(^|[^a-z])tpus?([^a-z]|$)")

_TPU_ONLY_ADVICE = 'use `"bf16-true"` whenever the Trainer runs on TPUs'


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


def _tpu_returning(view, call: cst.Call) -> tuple[str, str, dict] | None:
    """The project function a call (`settings(...)`, `manager.settings(...)`) names, when it
    is the only one of that name in the call's project and one of its returned dict literals
    asks for TPUs (FunctionSummary.trainer_returns): (its name, where it is, that dict)."""
    func = call.func
    name = (
        func.attr.value
        if isinstance(func, cst.Attribute)
        else func.value
        if isinstance(func, cst.Name)
        else None
    )
    if name is None:
        return None
    model = view.model
    index = model.__dict__.get("_trainer_returning")
    if index is None:
        index = {}
        for fn in model.functions.values():
            if fn.summary.trainer_returns:
                index.setdefault(fn.summary.name, []).append(fn)
        model.__dict__["_trainer_returning"] = index
    from tpulint.analysis.scope import same_repository

    found = [fn for fn in index.get(name, ()) if same_repository(fn.module.path, view.path)]
    if len(found) != 1:
        return None
    fn = found[0]
    for returned in fn.summary.trainer_returns:
        accelerator = str(returned.get("accelerator", "")).lower()
        strategy = str(returned.get("strategy", "")).lower()
        if accelerator == "tpu" or strategy in XLA_STRATEGY_NAMES:
            return name, f"{view.display(fn.module.path)}:{fn.summary.line}", returned
    return None


def _single_value(ctx, value: cst.BaseExpression) -> cst.BaseExpression:
    """A name's value when it is assigned once (`precision = a if t else b`), else itself."""
    if isinstance(value, cst.Name):
        assigned = assigned_values(ctx, value)
        if len(assigned) == 1:
            return assigned[0]
    return value


def _tpu_side(ctx, call: cst.Call, precision: cst.BaseExpression) -> cst.BaseExpression:
    """The precision of the TPU run when the precision and the accelerator are chosen by the
    same test (`precision = "bf16-true" if cfg.use_tpu else "bf16-mixed"` with
    `accelerator="tpu" if cfg.use_tpu else "auto"`): the branch of the test's TPU side."""
    accelerator = keyword_arg(call, "accelerator")
    if accelerator is None:
        return precision
    chosen = _single_value(ctx, precision)
    switch = _single_value(ctx, accelerator.value)
    if not isinstance(chosen, cst.IfExp) or not isinstance(switch, cst.IfExp):
        return precision
    code = ctx.module.code_for_node
    if code(chosen.test) != code(switch.test):
        return precision
    body = (string_value(switch.body) or "").lower() == "tpu"
    orelse = (string_value(switch.orelse) or "").lower() == "tpu"
    if body == orelse:
        return precision
    return chosen.body if body else chosen.orelse


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


def _keyed_entries(function: cst.CSTNode, name: str) -> list[tuple[str, cst.BaseExpression, bool]]:
    """(key, value, set under a test) of `name["key"] = value` statements in a function's
    body (not in nested functions or classes), and of the dict literal or `dict(...)` call
    `name` is assigned there."""
    found: list[tuple[str, cst.BaseExpression, bool]] = []

    def statements(body: cst.CSTNode, conditional: bool) -> None:
        for statement in getattr(body, "body", ()):
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.Assign) and len(small.targets) == 1:
                        assigned(small.targets[0].target, small.value, conditional)
            elif isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                continue
            elif isinstance(statement, cst.With):
                statements(statement.body, conditional)
            elif isinstance(statement, cst.BaseCompoundStatement):
                statements(statement.body, True)
                orelse = getattr(statement, "orelse", None)
                while orelse is not None:
                    statements(orelse.body, True)
                    orelse = getattr(orelse, "orelse", None)
                for handler in getattr(statement, "handlers", ()):
                    statements(handler.body, True)
                final = getattr(statement, "finalbody", None)
                if final is not None:
                    statements(final.body, conditional)
            elif isinstance(statement, cst.IndentedBlock):
                statements(statement, conditional)

    def assigned(target: cst.BaseExpression, value: cst.BaseExpression, conditional: bool) -> None:
        if isinstance(target, cst.Name) and target.value == name:
            if isinstance(value, cst.Dict):
                for element in value.elements:
                    if isinstance(element, cst.DictElement):
                        key = string_value(element.key)
                        if key is not None:
                            found.append((key, element.value, conditional))
            elif (
                isinstance(value, cst.Call)
                and isinstance(value.func, cst.Name)
                and value.func.value == "dict"
            ):
                for arg in value.args:
                    if arg.keyword is not None:
                        found.append((arg.keyword.value, arg.value, conditional))
        elif (
            isinstance(target, cst.Subscript)
            and isinstance(target.value, cst.Name)
            and target.value.value == name
            and len(target.slice) == 1
            and isinstance(target.slice[0].slice, cst.Index)
        ):
            key = string_value(target.slice[0].slice.value)
            if key is not None:
                found.append((key, value, conditional))

    body = function.body if isinstance(function, cst.FunctionDef) else function
    statements(body, False)
    return found


class UnsupportedTpuPrecision(Rule):
    """
    ## What it does
    Finds a TPU Trainer (one with `accelerator="tpu"`, a legacy `tpu_cores`, or an XLA
    strategy) configured with a precision the XLA plugin does not support: `16`, `"16"`,
    `"16-mixed"`, `"bf16"`, `"bf16-mixed"` (and `64`). It also looks at the `precision`
    default of TPU trainer config classes, at dictionaries of Trainer arguments that ask for
    TPUs (`{"accelerator": "tpu", "precision": "bf16-mixed"}` merged into a config and
    splatted into `Trainer(**cfg)`), at a precision set by key on a dict of the function that
    a Trainer splats (`params["precision"] = 16` then `Trainer(**params)`) when the Trainer's
    own arguments, a key of that dict (`params["accelerator"] = "tpu"`, set under a test:
    the run on that path) or a `--tpu_cores` option of a parsed command line the Trainer
    takes whole (`Trainer.from_argparse_args(args, **params)`) ask for TPUs, and at
    `trainer: precision:` in LightningCLI YAML
    configs that select a TPU, and in Hydra Trainer configs (a `configs/trainer/*.yaml`
    whose `_target_` is the Trainer), and in YAML sections the code spreads into a Trainer
    that ask for TPUs (`pl.Trainer(**cfg.trainer)` with `tpu_cores: 8, precision: 16` in
    `configs/trainer/tpu.yaml`). A Trainer given a non-TPU accelerator (`"gpu"`, or Lightning
    1.x's `accelerator="ddp"`) is not a TPU Trainer, whatever its `tpu_cores` says.

    It follows the accelerator one level further than the Trainer call: a name unpacked from
    a function of the file whose returns are literal tuples (`kind, count = hardware(name)`
    with `return "tpu", 8` on one path), Trainer arguments merged with the dict a project
    function returns (`{"precision": 16, **manager.hardware()}` where `hardware` returns
    `{"accelerator": "tpu", ...}` on one path), and a key path read from a JSON config
    (`accelerator=cfg["hardware"]["type"]` with a JSON file of the project that sets it to
    `"tpu"`). And a Trainer whose accelerator is `"auto"` (or not given) is a TPU Trainer in a
    project that runs on TPU VMs: one whose requirements file installs torch_xla or libtpu,
    whose shell scripts or Dockerfile set `PJRT_DEVICE=TPU` or install torch_xla, that has a
    module importing torch_xla unconditionally, or a Trainer or config asking for TPUs; so is
    `accelerator: auto` beside `precision:` in a YAML config whose name says TPU
    (`pretrain_tpu_128.yaml`). A project with none of these (or only an optional, guarded
    torch_xla import) is left alone.

    ## Why is this bad on TPU?
    Lightning 2 turns `16` into `"16-mixed"` and `"bf16"` into `"bf16-mixed"`, and its
    `XLAPrecision` plugin accepts only `"32-true"`, `"16-true"` and `"bf16-true"`: any other
    value raises `ValueError` when the Trainer is built. Mixed precision in the CUDA sense
    (autocast plus a gradient scaler) does not exist on TPUs; bfloat16 is the TPU's native
    half type. In Lightning 1.x, `precision=16` with TPU cores selected the bfloat16 plugin
    (`TPUBf16PrecisionPlugin`), so `"bf16-true"` is what that code meant.

    Lightning's accelerator `"auto"` picks the XLA accelerator whenever a TPU is present
    (`_select_auto_accelerator` in lightning/fabric/utilities/device_parser.py returns
    "tpu" first when `XLAAccelerator.is_available()`), so on a TPU VM an "auto" Trainer gets
    `XLAPrecision(self._precision_flag)` (lightning/pytorch/trainer/connectors/
    accelerator_connector.py) and the same `ValueError` (`_PRECISION_INPUT =
    Literal["32-true", "16-true", "bf16-true"]` in lightning/fabric/plugins/precision/xla.py,
    checked in `XLAPrecision.__init__` of lightning/pytorch/plugins/precision/xla.py,
    Lightning 2.6).

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
    class defaults are reported without a fix (their type annotations are often `int`), and
    so are the shapes whose Trainer runs on TPUs only on some paths or machines (an "auto"
    Trainer, a returned tuple or dict, a JSON config): the other runs keep their precision.
    Nothing is reported when the configured `lightning-version` is older than 2.0.

    ## References
    - [Lightning source: `XLAPrecision` (supported values)](https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/plugins/precision/xla.py)
    - [Lightning 1.5 docs: TPU 16-bit precision meant bfloat16](https://lightning.ai/docs/pytorch/1.5.10/advanced/tpu.html)
    - [Lightning 2.0: precision values unified (#16783)](https://github.com/Lightning-AI/pytorch-lightning/pull/16783)
    - [Lightning docs: TPU intermediate (precision)](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_intermediate.html)

    ## Status
    Stable. On tpu1 it was right three times in four; the wrong one was a Trainer given
    Lightning 1.x's `accelerator="ddp"` (a GPU run) whose `tpu_cores` was None on that path:
    such a Trainer is no longer a TPU Trainer, and no message names a non-TPU accelerator as
    the one asking for TPUs. Dictionaries of Trainer arguments that ask for TPUs are checked
    since (two misses of tpu1). Issue 21 (thirteenth session) added the "auto" Trainer of a
    project that runs on TPU VMs, the TPU-named config with `accelerator: auto`, and the
    accelerators reached through a returned tuple or dict or a JSON config (misses of sci31
    and sci34).
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
        if "Trainer" not in source and "tpu" not in source.lower():
            return False
        syntax = view.module.syntax
        if syntax is None or "precision" in syntax.class_fields:
            return True
        # `precision=` beside what makes a Trainer a TPU one (trainer_tpu), also in
        # `dict(accelerator="tpu", precision=...)`.
        if "precision" in syntax.keywords and not syntax.keywords.isdisjoint(_TPU_KEYWORDS):
            return True
        # `Trainer(precision="16-mixed")` with accelerator "auto" in a project that runs on
        # TPU VMs (_auto_on_tpu_host).
        if "precision" in syntax.literal_keywords and view.model.scope.tpu_host(view.path):
            return True
        # `params["precision"] = 16` on a dict splatted into a Trainer (_keyed_arguments).
        if _PRECISION_KEY_SET.search(source):
            return True
        # `{"accelerator": "tpu", "precision": "16-mixed"}` (tpu_arguments), or merged with
        # the dict a project function returns (_merged_arguments).
        if "precision" not in syntax.dict_keys:
            return False
        return not syntax.dict_keys.isdisjoint({"accelerator", "strategy"}) or any(
            fn.summary.trainer_returns for fn in view.model.functions.values()
        )

    VALID = (
        # GPU Trainers: TPU rules stay silent.
        Valid(_LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="gpu", precision=16)\n'),
        # A precision set by key on a dict splatted into a GPU Trainer (or one nothing says
        # runs on TPUs).
        Valid(
            _LIGHTNING_IMPORT + "def fit(model, half):\n"
            "    params = {'max_epochs': 3}\n"
            "    if half:\n"
            "        params['precision'] = 16\n"
            "    L.Trainer(accelerator='gpu', **params).fit(model)\n"
            "    L.Trainer(**params).fit(model)\n"
        ),
        # Lightning 1.x's `accelerator="ddp"` is DDP on GPUs: not a TPU Trainer, whatever
        # the (None on this path) `tpu_cores` says.
        Valid(
            "import pytorch_lightning as pl\n\n"
            "def build(args, cores):\n"
            "    return pl.Trainer(tpu_cores=cores, precision=16, accelerator='ddp')\n"
        ),
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
        # A settings function whose tuples never name TPUs.
        Valid(
            _LIGHTNING_IMPORT + "def hardware(n):\n"
            "    if n > 1:\n        return 'gpu', n\n    return 'cpu', 1\n\n"
            "def fit(n):\n    kind, count = hardware(n)\n"
            "    return L.Trainer(accelerator=kind, devices=count, precision='16-mixed')\n"
        ),
        # Merged with a function's dicts that never ask for TPUs, or spread after the
        # precision with one of its own.
        Valid(
            _LIGHTNING_IMPORT + "def hardware(n):\n"
            "    if n:\n        return {'accelerator': 'gpu', 'devices': n}\n"
            "    return {'accelerator': 'cpu'}\n\n"
            "def fit(n):\n    return L.Trainer(**{'precision': 16, **hardware(n)})\n"
        ),
        Valid(
            _LIGHTNING_IMPORT + "def hardware(pod):\n"
            "    if pod:\n        return {'accelerator': 'tpu', 'precision': 'bf16-true'}\n"
            "    return {'accelerator': 'gpu'}\n\n"
            "def fit(pod):\n    return L.Trainer(**{'precision': 16, **hardware(pod)})\n"
        ),
        # The precision and the accelerator chosen by the same switch: the TPU run's is
        # supported.
        Valid(
            _LIGHTNING_IMPORT + "def fit(cfg):\n"
            "    precision = 'bf16-true' if cfg.tpu else 'bf16-mixed' if cfg.half else 32\n"
            "    return L.Trainer(accelerator='tpu' if cfg.tpu else 'auto', precision=precision)\n"
        ),
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
        # Accelerator "auto" in a config nothing names for TPUs (and, in code, a Trainer of
        # a project with no sign of TPU VMs: `L.Trainer(precision=16)` above).
        Valid(
            "experiment:\n  accelerator: auto\n  precision: 16-mixed\nmodel:\n  depth: 4\n",
            path="configs/gpu/pod.yaml",
        ),
        # A GPU config class.
        Valid(
            "from dataclasses import dataclass, field\n\n"
            "@dataclass\nclass Fp16GPUTrainerConfigs:\n"
            "    device: str = 'gpu'\n    precision: int = field(default=16)\n"
        ),
    )
    INVALID = (
        # A precision set by key on the dict a TPU Trainer splats.
        Invalid(
            _LIGHTNING_IMPORT + "def fit(model):\n"
            "    params = {'accelerator': 'tpu', 'devices': 'auto'}\n"
            "    params['precision'] = 16\n"
            "    L.Trainer(**params).fit(model)\n",
            line=5,
            message='`params["precision"] = 16`, splatted into a TPU Trainer',
            expected_fix=_LIGHTNING_IMPORT + "def fit(model):\n"
            "    params = {'accelerator': 'tpu', 'devices': 'auto'}\n"
            "    params['precision'] = \"bf16-true\"\n"
            "    L.Trainer(**params).fit(model)\n",
        ),
        # ... and when a key set under a test asks for TPUs: the run on that path.
        Invalid(
            _LIGHTNING_IMPORT + "def fit(model, args):\n"
            "    params = dict(max_epochs=3)\n"
            "    if args.half:\n"
            "        params['precision'] = '16-mixed'\n"
            "    if args.tpu:\n"
            "        params['accelerator'] = 'tpu'\n"
            "    L.Trainer(**params).fit(model)\n",
            line=6,
            message="runs on TPUs when `params[\"accelerator\"] = 'tpu'` is set",
        ),
        # ... and when the Trainer takes a parsed command line with a `--tpu_cores` option.
        Invalid(
            "import pytorch_lightning as pl\n\n\n"
            "def add_args(parser):\n"
            "    parser.add_argument('--n_tpu_cores', dest='tpu_cores', type=int)\n\n\n"
            "def fit(model, args):\n"
            "    params = {}\n"
            "    params['precision'] = 16\n"
            "    pl.Trainer.from_argparse_args(args, **params).fit(model)\n",
            line=10,
            message="runs on TPUs when `--n_tpu_cores` is given",
        ),
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
        # A conditional accelerator that never names TPUs (`"dp"` or None) is not what
        # decides it: the message names the TPU argument's own condition.
        Invalid(
            "import pytorch_lightning as pl\n\n"
            "def make(n_gpu, cores, half):\n"
            "    return pl.Trainer(\n"
            '        accelerator="dp" if n_gpu > 1 else None,\n'
            "        precision=16 if half else 32,\n"
            "        tpu_cores=cores if cores else None,\n"
            "    )\n",
            line=6,
            message="on a Trainer that runs on TPUs when `cores` can be `16`",
            expected_fix="import pytorch_lightning as pl\n\n"
            "def make(n_gpu, cores, half):\n"
            "    return pl.Trainer(\n"
            '        accelerator="dp" if n_gpu > 1 else None,\n'
            "        precision=16 if half else 32,\n"
            "        tpu_cores=cores if cores else None,\n"
            "    )\n",
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
        # The accelerator comes from a function of the file that returns a tuple, one of
        # them for TPUs (one level of call return).
        Invalid(
            _LIGHTNING_IMPORT + "def hardware(name):\n"
            "    if name == 'pod':\n        return 'tpu', 8\n    return 'gpu', 1\n\n"
            "def fit(name):\n    kind, count = hardware(name)\n"
            "    return L.Trainer(accelerator=kind, devices=count, precision='16-mixed')\n",
            line=10,
            message='on a Trainer that runs on TPUs when `kind` is "tpu"',
        ),
        # Trainer arguments merged with the dict a function returns, TPUs on one path.
        Invalid(
            _LIGHTNING_IMPORT + "class Settings:\n"
            "    def __init__(self, kind):\n        self.kind = kind\n\n"
            "    def hardware(self):\n"
            "        if self.kind == 'pod':\n"
            "            return {'accelerator': 'tpu', 'devices': 8}\n"
            "        return {'accelerator': 'gpu', 'devices': 1}\n\n"
            "def fit(kind):\n    hardware = Settings(kind).hardware()\n"
            "    arguments = {'max_epochs': 3, 'precision': 'bf16-mixed', **hardware}\n"
            "    return L.Trainer(**arguments)\n",
            line=14,
            message="merged with what `hardware()` returns",
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
        # A Hydra Trainer group file.
        Invalid(
            "_target_: lightning.pytorch.trainer.Trainer\naccelerator: tpu\nprecision: 16\n",
            path="configs/trainer/tpu.yaml",
            line=3,
            message="`precision: 16` on a TPU trainer",
        ),
        # A config named for TPUs that leaves the accelerator "auto".
        Invalid(
            "experiment:\n  accelerator: auto\n  precision: '16'\nmodel:\n  depth: 4\n",
            path="configs/tpu/pod.yaml",
            line=3,
            message='on a TPU VM accelerator "auto" selects XLA',
        ),
        Invalid(
            "trainer:\n  accelerator: tpu\n  precision: 16-mixed\n",
            path="config.yaml",
            expected_fix="trainer:\n  accelerator: tpu\n  precision: bf16-true\n",
            line=3,
            applicability=Applicability.UNSAFE,
        ),
        # Trainer arguments assembled as a dict in a config function (prompt-tuning shape).
        Invalid(
            "def tpu_env(cfg):\n"
            "    cfg['trainer'].update({'accelerator': 'tpu', 'precision': 'bf16-mixed'})\n"
            "    return cfg\n",
            expected_fix="def tpu_env(cfg):\n"
            "    cfg['trainer'].update({'accelerator': 'tpu', 'precision': 'bf16-true'})\n"
            "    return cfg\n",
            message="in Trainer arguments that ask for TPUs",
        ),
        Invalid(
            _LIGHTNING_IMPORT
            + "args = dict(strategy='xla', precision=16)\ntrainer = L.Trainer(**args)\n",
            message="which Lightning 2 reads as",
        ),
    )

    def visit_Module(self, node: cst.Module) -> bool | None:
        self._enabled = lightning_at_least(self.ctx, "2.0") and not is_framework_file(self.ctx)
        return None

    def visit_Dict(self, node: cst.Dict) -> None:
        if self._enabled:
            self._arguments(node)

    def _arguments(self, node: cst.Dict | cst.Call) -> None:
        """`{"accelerator": "tpu", "precision": "bf16-mixed"}` merged into a config and
        splatted into `Trainer(**cfg)`: the same precision, the same ValueError."""
        entries = tpu_arguments(self.ctx, node)
        if entries is None and isinstance(node, cst.Dict):
            self._merged_arguments(node)
            return
        precision = entries.get("precision") if entries is not None else None
        if precision is None:
            return
        value = literal_value(precision)
        if value not in _BAD_TPU_PRECISION and value not in _NO_FIX_TPU_PRECISION:
            return
        subject = (
            f"`precision: {self.ctx.module.code_for_node(precision)}` in Trainer arguments that "
            "ask for TPUs"
        )
        if value in _NO_FIX_TPU_PRECISION:
            self.report(precision, _precision_message(value, subject, ""))
            return
        quote = (
            "'"
            if isinstance(precision, cst.SimpleString) and precision.value.startswith("'")
            else '"'
        )
        self.report(
            precision,
            _precision_message(value, subject, 'use `"bf16-true"`'),
            replacement=cst.SimpleString(f"{quote}bf16-true{quote}"),
        )

    def _merged_arguments(self, node: cst.Dict) -> None:
        """`{"precision": 16, **hardware}` with `hardware = manager.accelerator_settings()`
        (or the call spread itself), a function of the project whose returned dict literal asks
        for TPUs on one of its paths (`return {"accelerator": "tpu", ...}`): the merged Trainer
        arguments carry the rejected precision on the TPU path. One level of call return;
        reported without a fix (the other paths' mixed precision is right)."""
        ctx = self.ctx
        precision = None
        spreads: list[cst.BaseExpression] = []
        for element in node.elements:
            if isinstance(element, cst.DictElement) and string_value(element.key) == "precision":
                precision = element.value
                spreads = []  # a spread before the key does not override it
            elif isinstance(element, cst.StarredDictElement):
                spreads.append(element.value)
        value = literal_value(precision)
        if precision is None or not spreads:
            return
        if value not in _BAD_TPU_PRECISION and value not in _NO_FIX_TPU_PRECISION:
            return
        view = ctx.analysis.view
        if view is None:
            return
        for spread in spreads:
            calls = [spread] if isinstance(spread, cst.Call) else []
            if isinstance(spread, cst.Name):
                calls = [v for v in assigned_values(ctx, spread) if isinstance(v, cst.Call)]
            for call in calls:
                found = _tpu_returning(view, call)
                if found is None:
                    continue
                name, where, returned = found
                if "precision" in returned:
                    continue  # the spread dict sets its own precision after this one
                shown = ctx.module.code_for_node(precision)
                self.report(
                    precision,
                    _precision_message(
                        value,
                        f"`precision: {shown}` in Trainer arguments merged with what "
                        f"`{name}()` returns (a dict that asks for TPUs on one of its paths, "
                        f"{where})",
                        _TPU_ONLY_ADVICE,
                    ),
                )
                return

    def visit_Call(self, node: cst.Call) -> None:
        if not self._enabled:
            return
        if isinstance(node.func, cst.Name) and node.func.value == "dict":
            self._arguments(node)
            return
        if not is_trainer_call(self.ctx, node):
            return
        arg = keyword_arg(node, "precision")
        if arg is None:
            self._keyed_arguments(node)
            return
        tpu = trainer_tpu(self.ctx, node)
        if tpu == "unknown":
            if not self._json_accelerator(node, arg):
                self._auto_on_tpu_host(node, arg)
            return
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

    def _keyed_arguments(self, node: cst.Call) -> None:
        """`params["precision"] = 16` on a dict of the function that the Trainer call splats
        (`Trainer(**params)`), when the Trainer asks for TPUs: by its own arguments, by a key
        of the same dict (`params["accelerator"] = "tpu"`, also in the dict it was made
        from), or through the parsed command line it takes whole with a `--tpu_cores` option
        of the file (`Trainer.from_argparse_args(args, **params)`). A key set under a test
        makes the Trainer one that runs on TPUs on that path. Reported without a fix unless
        the Trainer always asks for TPUs."""
        ctx = self.ctx
        splatted = [
            a.value.value for a in node.args if a.star == "**" and isinstance(a.value, cst.Name)
        ]
        if not splatted:
            return
        function = ctx.function.node if ctx.function is not None else ctx.module
        for name in splatted:
            entries = _keyed_entries(function, name)
            precisions = [(v, c) for k, v, c in entries if k == "precision"]
            if not precisions:
                continue
            tpu, why = self._keyed_tpu(node, name, entries)
            if tpu not in ("yes", "maybe"):
                continue
            for value_node, conditional in precisions:
                value = literal_value(value_node)
                if value not in _BAD_TPU_PRECISION and value not in _NO_FIX_TPU_PRECISION:
                    continue
                reported = ctx.shared.setdefault("tpu004_keyed", set())
                if id(value_node) in reported:
                    continue
                reported.add(id(value_node))
                shown = f'`{name}["precision"] = {ctx.module.code_for_node(value_node)}`'
                if tpu == "yes":
                    subject = f"{shown}, splatted into a TPU Trainer ({why})"
                else:
                    subject = f"{shown}, splatted into a Trainer that runs on TPUs when {why}"
                exact = tpu == "yes" and value in _BAD_TPU_PRECISION
                self.report(
                    value_node,
                    _precision_message(
                        value,
                        subject,
                        'use `"bf16-true"`' if exact else _TPU_ONLY_ADVICE,
                    ),
                    replacement=cst.SimpleString('"bf16-true"')
                    if exact and not conditional
                    else None,
                )

    def _keyed_tpu(self, node: cst.Call, name: str, entries: list) -> tuple[str, str]:
        """Whether a Trainer that splats a dict with these keyed entries asks for TPUs
        ("yes", "maybe", else "no"/"unknown"), and what says so (for the message)."""
        ctx = self.ctx
        tpu = trainer_tpu(ctx, node)
        if tpu == "no":
            return "no", ""
        if tpu in ("yes", "maybe"):
            return tpu, _tpu_condition(ctx, node)
        found = ("unknown", "")
        for key, value, conditional in entries:
            asks = False
            if key == "accelerator":
                literal = (string_value(value) or "").lower()
                if literal and literal not in ("tpu", "auto") and not conditional:
                    return "no", ""
                asks = literal == "tpu"
            elif key == "strategy":
                asks = strategy_is_xla(ctx, value)
            elif key in LEGACY_TPU_KEYWORDS:
                number = literal_value(value)
                if isinstance(value, cst.Integer) or (
                    isinstance(value, cst.Name) and value.value == "None"
                ):
                    asks = number not in (None, 0)
                else:
                    asks, conditional = True, True  # `tpu_cores=args.tpu_cores`: may be None
            if not asks:
                continue
            said = f'`{name}["{key}"] = {ctx.module.code_for_node(value)}`'
            if not conditional:
                return "yes", f"{said} asks for TPUs"
            found = ("maybe", f"{said} is set")
        if found[0] != "unknown":
            return found
        if _takes_whole_namespace(node):
            for option in walk(ctx.module):
                if (
                    isinstance(option, cst.Call)
                    and isinstance(option.func, cst.Attribute)
                    and option.func.attr.value == "add_argument"
                    and option_dest(option) in LEGACY_TPU_KEYWORDS
                ):
                    flags = [string_value(a.value) for a in option.args if a.keyword is None]
                    flag = next((f for f in flags if f), None) or option_dest(option)
                    return "maybe", f"`{flag}` is given (the Trainer takes the parsed arguments)"
        return found

    def _json_accelerator(self, node: cst.Call, arg: cst.Arg) -> bool:
        """`accelerator=config["hardware"]["type"]` in a file that reads JSON, with a JSON
        config of the project that sets that key path to "tpu" (`{"hardware": {"type":
        "tpu"}}`): the run with that config is a TPU Trainer. Reported without a fix (the
        other configs' runs keep their precision)."""
        ctx = self.ctx
        accelerator = keyword_arg(node, "accelerator")
        value = literal_value(arg.value)
        if accelerator is None or "json" not in ctx.source:
            return False
        if value not in _BAD_TPU_PRECISION and value not in _NO_FIX_TPU_PRECISION:
            return False
        keys: list[str] = []
        current = accelerator.value
        while isinstance(current, cst.Subscript) and len(current.slice) == 1:
            index = current.slice[0].slice
            key = string_value(index.value) if isinstance(index, cst.Index) else None
            if key is None:
                return False
            keys.insert(0, key)
            current = current.value
        if not keys or not isinstance(current, (cst.Name, cst.Attribute)):
            return False
        view = ctx.analysis.view
        if view is None:
            return False
        found = [
            shown
            for shown, setting in view.model.scope.json_values(view.path, tuple(keys))
            if isinstance(setting, str) and setting.lower() == "tpu"
        ]
        if not found:
            return False
        written = ctx.module.code_for_node(arg.value)
        reads = ctx.module.code_for_node(accelerator.value)
        subject = (
            f'`precision={written}` on a Trainer whose `accelerator={reads}` is "tpu" with '
            f"the config {found[0]}"
        )
        self.report(arg, _precision_message(value, subject, _TPU_ONLY_ADVICE))
        return True

    def _auto_on_tpu_host(self, node: cst.Call, arg: cst.Arg) -> None:
        """`Trainer(precision="16-mixed")` with accelerator "auto" (or none) in a project that
        runs on TPU VMs (ProjectScope.tpu_host: torch_xla in its requirements, `PJRT_DEVICE=
        TPU` in a launcher, a module importing torch_xla, a TPU Trainer or config): there
        Lightning's connector picks the XLA accelerator, and XLAPrecision rejects the value.
        Reported without a fix: the run on another machine keeps its mixed precision."""
        ctx = self.ctx
        value = literal_value(arg.value)
        if value not in _BAD_TPU_PRECISION and value not in _NO_FIX_TPU_PRECISION:
            return
        if any(a.star == "**" for a in node.args):
            return  # the spread arguments may name the accelerator
        accelerator = keyword_arg(node, "accelerator")
        strategy = keyword_arg(node, "strategy")
        if explicit_accelerator(ctx, accelerator.value if accelerator else None) != "auto":
            return
        if strategy is not None and (string_value(strategy.value) or "").lower() != "auto":
            return  # a strategy of its own (DDP fails on XLA anyway, differently)
        view = ctx.analysis.view
        why = view.model.scope.tpu_host(view.path) if view is not None else None
        if why is None:
            return
        written = ctx.module.code_for_node(arg.value)
        given = 'is "auto"' if accelerator is not None else 'is not given ("auto")'
        unified = (
            _NO_FIX_TPU_PRECISION.get(value)  # type: ignore[call-overload]
            or _BAD_TPU_PRECISION[value]  # type: ignore[index]
        )
        read_as = "" if str(value) == unified else f' (Lightning 2 reads it as "{unified}")'
        advice = (
            'use `"32-true"`'
            if value in _NO_FIX_TPU_PRECISION
            else 'use `"bf16-true"` for the TPU run'
        )
        self.report(
            arg,
            f"`precision={written}`{read_as} on a Trainer whose accelerator {given}: the "
            f'project runs on TPU VMs ({why}), where accelerator "auto" selects XLA, and '
            f"Lightning's XLAPrecision accepts only {_SUPPORTED} (ValueError); {advice}",
        )

    def _auto_tpu_config(self, document: YamlDocument) -> None:
        """A config named for TPUs (`pretrain_tpu_128.yaml`, `configs/tpu/base.yaml`) whose
        Trainer settings leave the accelerator "auto" (`accelerator: auto` beside
        `precision: '16'`, in a `trainer:` section or the section a script passes its
        Trainer): on the TPU VM the config is for, "auto" selects XLA, and XLAPrecision
        rejects the value. Reported without a fix (the same value may serve GPUs too)."""
        named = "/".join(os.path.splitext(document.path)[0].split(os.sep)[-2:])
        if not _TPU_NAMED.search(named):
            return
        sections = [e for e in document.entries() if e.is_mapping]
        for section in sections:
            precision = section.child("precision")
            accelerator = section.child("accelerator")
            if precision is None or precision.value_start is None or precision.value_end is None:
                continue
            if accelerator is None and section.key != "trainer":
                continue
            if accelerator is not None and str(accelerator.value).lower() != "auto":
                continue
            if section.child("gpus") is not None or section.child("strategy") is not None:
                continue
            value = precision.value
            if not isinstance(value, (str, int)) or isinstance(value, bool):
                continue
            if value not in _BAD_TPU_PRECISION and value not in _NO_FIX_TPU_PRECISION:
                continue
            unified = _NO_FIX_TPU_PRECISION.get(value) or _BAD_TPU_PRECISION[value]
            read_as = "" if str(value) == unified else f' (Lightning 2 reads it as "{unified}")'
            given = "`accelerator: auto`" if accelerator is not None else "no accelerator"
            self.report_yaml(
                precision.value_start,
                precision.value_end,
                f"`{section.key}: precision: {precision.raw}`{read_as} with {given} in a "
                'config for TPUs (its name says so): on a TPU VM accelerator "auto" selects '
                f"XLA, and Lightning's XLAPrecision accepts only {_SUPPORTED} (ValueError); "
                "use `bf16-true`",
            )

    def _possible_values(self, node: cst.Call, arg: cst.Arg, tpu: str) -> None:
        """`precision=16 if args.fp16 else 32`, `precision=args.precision` with an argparse
        default of 16, a local set in a branch: reported when one of the values the file
        shows is unsupported on TPUs (no fix: the other values are right, and a rewrite
        could not tell the runs apart)."""
        ctx = self.ctx
        values = literal_candidates(ctx, _tpu_side(ctx, node, arg.value))
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
            self._auto_tpu_config(document)
            return
        value = entry.value
        if not isinstance(value, (str, int, float)):
            return
        if value not in _BAD_TPU_PRECISION and value not in _NO_FIX_TPU_PRECISION:
            return
        if not yaml_trainer_is_tpu(trainer):
            self._auto_tpu_config(document)
            return
        message = _precision_message(
            value,
            f"`{document.trainer_label}precision: {entry.raw}` on a TPU trainer",
            "use `bf16-true`",
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

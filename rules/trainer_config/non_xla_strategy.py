"""TPU010 non-xla-strategy."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.yaml_config import YamlDocument
from tpulint.datatypes.diagnostics import Severity
from tpulint.rule_api.cst_helpers import keyword_arg
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.configuration import is_framework_file
from ..shared.matchers import is_trainer_call
from .helpers import (
    _LIGHTNING_IMPORT,
    NON_XLA_STRATEGY_CLASSES,
    NON_XLA_STRATEGY_NAMES,
    cli_trainer_defaults,
    explicit_accelerator,
    non_xla_strategy,
)

_CLI_HEAD = (
    "from lightning.pytorch.cli import LightningCLI\n"
    "from lightning.pytorch.strategies import DDPStrategy\n\n\n"
)


class NonXlaStrategy(Rule):
    """
    ## What it does
    Finds a Trainer whose strategy is fixed in code or config to one that is not XLA's
    (`"ddp"`, `DDPStrategy(...)`, `"fsdp"`, `FSDPStrategy(...)`, `"deepspeed"`, a
    `class_path` naming one) while its accelerator is `"tpu"`, or a TPU switch whose TPU arm
    is `"tpu"` (`accelerator="tpu" if cfg.use_tpu else "auto"`): in `Trainer(...)` calls, in
    LightningCLI defaults set in code (`parser.set_defaults({"trainer.strategy": ...})`,
    `LightningCLI(trainer_defaults=...)`), and under `trainer:` in LightningCLI YAML configs,
    in Hydra Trainer configs (a `configs/trainer/*.yaml` whose `_target_` is the Trainer),
    and in YAML sections the code spreads into a TPU Trainer (`pl.Trainer(**cfg.trainer)`).
    In preview mode it also reports such a strategy with `accelerator="auto"` (or no
    accelerator, which means `"auto"`). A Trainer that asks for GPUs or CPUs explicitly is
    not reported.

    ## Why is this bad on TPU?
    On a TPU (`accelerator="tpu"`, or `"auto"` on a TPU VM) Lightning accepts only
    `XLAStrategy` or `SingleDeviceXLAStrategy`, and building the Trainer raises ValueError
    with any other strategy. Lightning 2.6's accelerator connector
    (lightning/pytorch/trainer/connectors/accelerator_connector.py) has two checks:
    `_check_strategy_and_fallback` (lines 431-437) raises `The strategy fsdp requires a GPU
    accelerator` for `"fsdp"`, `"fsdp_cpu_offload"` or an `FSDPStrategy` with any accelerator
    but CUDA, and lines 545-551 raise `The XLAAccelerator can only be used with a
    SingleDeviceXLAStrategy or XLAStrategy` for the others (DDP, DeepSpeed...). XLA's own
    FSDP (`XLAFSDPStrategy`, `"xla_fsdp"`) exists only in Fabric
    (lightning/fabric/strategies/xla_fsdp.py; Fabric's connector turns `"fsdp"` into
    `"xla_fsdp"` on a TPU), not in the Trainer's strategy registry. A non-XLA strategy chosen
    for every run blocks every TPU run of the project.

    ## Example
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="auto", devices="auto", strategy="ddp")
    ```

    ## Use instead
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="auto", devices="auto", strategy="auto")
    ```

    ## Fix safety
    No automatic fix: the strategy's options (`find_unused_parameters`, sharding) are a
    decision for GPU runs; `strategy="auto"` lets Lightning pick DDP on GPUs and XLA on TPUs.

    ## References
    - [Lightning source: the XLA accelerator's strategy check (`accelerator_connector.py`)](https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/trainer/connectors/accelerator_connector.py)
    - [Lightning docs: TPU basics](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_basic.html)
    - [Lightning docs: LightningCLI, set default arguments](https://lightning.ai/docs/pytorch/stable/cli/lightning_cli_expert.html)

    ## Status
    Stable for an explicit `"tpu"` accelerator (or a TPU switch's `"tpu"` arm): right by
    construction, since Lightning raises at construction whenever that run happens (the sci32
    miss: `strategy="fsdp"` with `accelerator="tpu" if config.train.use_tpu else "auto"`).
    The `"auto"` accelerator is a preview shape (new in issue 21, from one miss of the sci1
    batch, a LightningCLI subclass that makes `DDPStrategy(find_unused_parameters=True)` the
    default of every run): it also fires in projects that only ever train on GPUs, so its
    precision on TPU-bound code is not known yet.
    """

    code = "TPU010"
    name = "non-xla-strategy"
    summary = 'A non-XLA strategy (`strategy="ddp"`) fixed for a TPU or `"auto"` accelerator'
    severity = Severity.ERROR
    requires = ("strategy", "Strategy")

    VALID = (
        Valid(_LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="tpu", strategy="xla")\n'),
        Valid(_LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="gpu", strategy="ddp")\n'),
        Valid(_LIGHTNING_IMPORT + 'trainer = L.Trainer(strategy="auto", devices="auto")\n'),
        # A strategy the file cannot tell.
        Valid(_LIGHTNING_IMPORT + "def make(s):\n    return L.Trainer(strategy=s)\n"),
        Valid("trainer:\n  accelerator: cuda\n  strategy: ddp\n", path="config.yaml"),
        # `"auto"` (or no accelerator) is a preview shape: GPU-only projects write it too.
        Valid(_LIGHTNING_IMPORT + 'trainer = L.Trainer(devices="auto", strategy="ddp")\n'),
        # The switch's TPU arm is XLA's.
        Valid(
            _LIGHTNING_IMPORT
            + "def build(tpu):\n    return L.Trainer(\n"
            + "        accelerator='tpu' if tpu else 'gpu', strategy='xla' if tpu else 'fsdp'\n"
            + "    )\n"
        ),
        # The accelerator may come with the keyword arguments.
        Valid(_LIGHTNING_IMPORT + "def fit(kw):\n    return L.Trainer(strategy='ddp', **kw)\n"),
        Valid(
            _CLI_HEAD + "class CLI(LightningCLI):\n"
            "    def add_arguments_to_parser(self, parser):\n"
            '        parser.set_defaults({"trainer.accelerator": "gpu", '
            '"trainer.strategy": DDPStrategy()})\n'
        ),
    )
    INVALID = (
        Invalid(
            _LIGHTNING_IMPORT + 'trainer = L.Trainer(devices="auto", strategy="ddp")\n',
            line=3,
            message='`strategy="ddp"` with `accelerator="auto"`',
            config={"preview": True},
        ),
        # FSDP on a TPU switch: Lightning's FSDPStrategy takes CUDA only.
        Invalid(
            _LIGHTNING_IMPORT + "def build(cfg):\n"
            "    return L.Trainer(\n"
            "        strategy='fsdp',\n"
            "        accelerator='tpu' if cfg.tpu else 'auto',\n"
            "    )\n",
            line=5,
            message="FSDPStrategy requires a CUDA accelerator",
        ),
        Invalid(
            "import lightning as L\nfrom lightning.pytorch.strategies import FSDPStrategy\n\n"
            "trainer = L.Trainer(accelerator='tpu', devices=8, strategy=FSDPStrategy())\n",
            message='`strategy="xla"`',
        ),
        Invalid(
            "import lightning as L\nfrom lightning.pytorch.strategies import DDPStrategy\n\n"
            "trainer = L.Trainer(accelerator='tpu', strategy=DDPStrategy())\n",
            message="XLAAccelerator can only be used with",
        ),
        # The default of every run of a LightningCLI (sci1 shape).
        Invalid(
            _CLI_HEAD + "class CLI(LightningCLI):\n"
            "    def add_arguments_to_parser(self, parser):\n"
            "        parser.set_defaults(\n"
            '            {"trainer.strategy": DDPStrategy(find_unused_parameters=True)}\n'
            "        )\n",
            line=8,
            message="as the default of every LightningCLI run",
            config={"preview": True},
        ),
        Invalid(
            "from lightning.pytorch.cli import LightningCLI\n\n"
            "LightningCLI(trainer_defaults={'strategy': {'class_path': "
            "'lightning.pytorch.strategies.FSDPStrategy'}})\n",
            config={"preview": True},
        ),
        Invalid(
            "trainer:\n  strategy: ddp_find_unused_parameters_true\n",
            path="config.yaml",
            config={"preview": True},
        ),
        Invalid("trainer:\n  accelerator: tpu\n  strategy: ddp\n", path="config.yaml"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if is_framework_file(ctx):
            return
        if is_trainer_call(ctx, node):
            strategy = keyword_arg(node, "strategy")
            if strategy is None:
                return
            accelerator = keyword_arg(node, "accelerator")
            if accelerator is None and any(a.star == "**" for a in node.args):
                return  # `Trainer(strategy="ddp", **kwargs)`: the accelerator may be in kwargs
            self._check(strategy.value, accelerator.value if accelerator is not None else None)
            return
        defaults = cli_trainer_defaults(ctx, node)
        if "strategy" in defaults:
            self._check(defaults["strategy"], defaults.get("accelerator"), cli=True)

    def _check(
        self,
        strategy: cst.BaseExpression,
        accelerator: cst.BaseExpression | None,
        *,
        cli: bool = False,
    ) -> None:
        name = non_xla_strategy(self.ctx, strategy)
        if name is None:
            return
        chosen = explicit_accelerator(self.ctx, accelerator)
        if chosen not in ("tpu", "auto") or (chosen == "auto" and not self.preview_mode):
            return
        written = self.ctx.module.code_for_node(strategy)
        where = "as the default of every LightningCLI run " if cli else ""
        self.report(
            strategy,
            _message(f"`strategy={_short(written)}`", name, chosen, where),
        )

    def check_yaml(self, document: YamlDocument) -> None:
        trainer = document.find("trainer")
        entry = trainer.child("strategy") if trainer is not None else None
        if trainer is None or entry is None:
            return
        value = entry.value
        name = None
        if isinstance(value, str) and value.lower() in NON_XLA_STRATEGY_NAMES:
            name = value
        class_path = entry.child("class_path")
        if class_path is not None:
            last = str(class_path.value).rsplit(".", 1)[-1]
            name = last if last in NON_XLA_STRATEGY_CLASSES else None
        if name is None:
            return
        accelerator = trainer.child("accelerator")
        chosen = "auto" if accelerator is None else str(accelerator.value).lower()
        if chosen not in ("tpu", "auto") or (chosen == "auto" and not self.preview_mode):
            return
        self.report_yaml(
            entry.key_start,
            entry.value_end or entry.key_start,
            _message(f"`{document.trainer_label}strategy: {entry.raw or name}`", name, chosen, ""),
        )


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 50 else text[:49] + "…"


def _message(subject: str, name: str, accelerator: str, where: str) -> str:
    if name.lower().startswith("fsdp") or name == "FSDPStrategy":
        # lightning/pytorch/trainer/connectors/accelerator_connector.py (Lightning 2.6),
        # `_check_strategy_and_fallback`: an FSDP strategy with any accelerator but CUDA.
        on = (
            'with `accelerator="tpu"`'
            if accelerator == "tpu"
            else ('with `accelerator="auto"` (which picks the TPU on a TPU VM)')
        )
        return (
            f"{subject} {where}{on}: Lightning's FSDPStrategy requires a CUDA accelerator, so "
            f"building the Trainer raises ValueError on a TPU; the Trainer's TPU strategy is "
            f'`strategy="xla"` (XLA\'s FSDP, `XLAFSDPStrategy`/`"xla_fsdp"`, is Fabric\'s, '
            f"not the Trainer's)"
        )
    on = (
        'with `accelerator="tpu"`'
        if accelerator == "tpu"
        else '`accelerator="auto"` (which picks the TPU on a TPU VM)'
    )
    if accelerator == "auto":
        on = f"with {on}"
    return (
        f"{subject} {where}{on}: Lightning's XLAAccelerator can only be used with "
        f"XLAStrategy or SingleDeviceXLAStrategy, so building the Trainer raises ValueError "
        f'on a TPU; use `strategy="auto"` (or choose `{name}` only for GPU runs)'
    )

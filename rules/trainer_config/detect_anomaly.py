"""TPU009 detect-anomaly."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.yaml_config import YamlDocument
from tpulint.datatypes.diagnostics import Applicability, Severity
from tpulint.rule_api.cst_helpers import keyword_arg, replace_arg
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.configuration import is_framework_file, tpu_arguments, trainer_tpu
from ..shared.matchers import contains_trainer_call, is_trainer_call
from .helpers import _LIGHTNING_IMPORT, cli_trainer_defaults

_SET_DETECT_ANOMALY = "torch.autograd.set_detect_anomaly"
_WHY = (
    "turns on autograd's anomaly mode, which checks the outputs of every backward node for NaN "
    "with `.item()` (torch/csrc/autograd/engine.cpp, `evaluate_function`): on a TPU that is a "
    "device-to-host sync per node in every step, and it records a Python traceback for every "
    "forward op; keep it for debugging a NaN, off in TPU training"
)


class DetectAnomaly(Rule):
    """
    ## What it does
    Finds autograd's anomaly detection turned on for training: `Trainer(detect_anomaly=True)`
    on a Trainer that may run on TPUs (any Trainer that does not ask for GPUs or CPUs
    explicitly), `"detect_anomaly": True` in Trainer arguments that ask for TPUs, LightningCLI
    defaults set in code (`parser.set_defaults({"trainer.detect_anomaly": True})`),
    `trainer: detect_anomaly: true` in LightningCLI YAML configs and Hydra Trainer configs
    (a `configs/trainer/*.yaml` whose `_target_` is the Trainer, or a YAML section
    the code spreads into a TPU Trainer: `pl.Trainer(**cfg.trainer)`), and an unconditional
    `torch.autograd.set_detect_anomaly(True)` in a training script or a Lightning class.

    ## Why is this bad on TPU?
    Anomaly mode makes the autograd engine check each backward node's outputs with
    `isnan(output)._is_any_true().item<bool>()` (torch/csrc/autograd/engine.cpp,
    `evaluate_function`): every check reads a device value on the host, so a TPU step stops
    for a sync at every node of the backward graph. It also records the Python stack of
    every forward operation. Lightning warns that it "will significantly slow down compute
    speed"; on a TPU it turns a step into hundreds of round trips.

    ## Example
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="tpu", devices="auto", detect_anomaly=True)
    ```

    ## Use instead
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="tpu", devices="auto")
    ```

    ## Fix safety
    The fix removes `detect_anomaly=True` from the Trainer call and is unsafe: the training
    computes the same values, but a NaN in the backward pass no longer stops it with the
    operation that produced it.

    ## References
    - [PyTorch docs: anomaly detection (`torch.autograd.detect_anomaly`)](https://pytorch.org/docs/stable/autograd.html#anomaly-detection)
    - [PyTorch source: `evaluate_function` in `torch/csrc/autograd/engine.cpp`](https://github.com/pytorch/pytorch/blob/main/torch/csrc/autograd/engine.cpp)
    - [Lightning docs: Trainer `detect_anomaly`](https://lightning.ai/docs/pytorch/stable/common/trainer.html#detect-anomaly)

    ## Status
    Stable (new in issue 21): every finding is a configuration that runs the NaN check of
    every backward node on the host in every step. It comes from a miss of the sci1 batch
    (a LightningCLI config with `detect_anomaly: True` and an `"auto"` accelerator); a
    Trainer that asks for GPUs or CPUs explicitly, and a call under a debug condition, are
    not reported.
    """

    code = "TPU009"
    name = "detect-anomaly"
    summary = "Autograd anomaly detection on for training (`Trainer(detect_anomaly=True)`)"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = "Remove `detect_anomaly=True`"
    requires = ("detect_anomaly",)

    VALID = (
        Valid(_LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="tpu", detect_anomaly=False)\n'),
        # A GPU run is not a TPU's business.
        Valid(_LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="gpu", detect_anomaly=True)\n'),
        # A debugging switch.
        Valid(
            "import torch\n\n\ndef main(args):\n"
            "    if args.debug:\n        torch.autograd.set_detect_anomaly(True)\n"
        ),
        Valid("trainer:\n  accelerator: cpu\n  detect_anomaly: true\n", path="config.yaml"),
    )
    INVALID = (
        Invalid(
            _LIGHTNING_IMPORT
            + 'trainer = L.Trainer(accelerator="tpu", devices="auto", detect_anomaly=True)\n',
            expected_fix=_LIGHTNING_IMPORT
            + 'trainer = L.Trainer(accelerator="tpu", devices="auto")\n',
            line=3,
            message="a device-to-host sync per node in every step",
        ),
        # `"auto"` picks the TPU on a TPU VM (sci1 shape, a LightningCLI config).
        Invalid("trainer:\n  max_epochs: 10\n  detect_anomaly: true\n", path="config.yaml", line=3),
        Invalid(
            "from lightning.pytorch.cli import LightningCLI\n\n\n"
            "class CLI(LightningCLI):\n"
            "    def add_arguments_to_parser(self, parser):\n"
            '        parser.set_defaults({"trainer.detect_anomaly": True})\n',
            line=6,
        ),
        Invalid(
            "import lightning as L\nimport torch\n\n"
            "torch.autograd.set_detect_anomaly(True)\n\n\n"
            "def main():\n    L.Trainer(accelerator='tpu').fit(Model())\n",
            line=4,
        ),
        Invalid("trainer_args = {'accelerator': 'tpu', 'detect_anomaly': True}\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if is_framework_file(ctx):
            return
        if is_trainer_call(ctx, node):
            arg = keyword_arg(node, "detect_anomaly")
            if arg is None or not _true(arg.value) or trainer_tpu(ctx, node) == "no":
                return
            self.report(
                arg,
                f"`detect_anomaly=True` {_WHY}",
                replacement=_without(node, arg),
                replaces=node,
            )
            return
        if isinstance(node.func, cst.Name) and node.func.value == "dict":
            self._arguments(node)
            return
        defaults = cli_trainer_defaults(ctx, node)
        value = defaults.get("detect_anomaly")
        if value is not None and _true(value):
            accelerator = defaults.get("accelerator")
            if accelerator is None or (_string(accelerator) or "tpu") in ("tpu", "auto"):
                self.report(
                    value, f"`trainer.detect_anomaly: True` as a LightningCLI default {_WHY}"
                )
            return
        if (
            ctx.qualify(node.func) == _SET_DETECT_ANOMALY
            and node.args
            and _true(node.args[0].value)
            and self._unconditional_setup(node)
        ):
            self.report(node, f"`torch.autograd.set_detect_anomaly(True)` {_WHY}")

    def visit_Dict(self, node: cst.Dict) -> None:
        self._arguments(node)

    def _arguments(self, node: cst.Dict | cst.Call) -> None:
        entries = tpu_arguments(self.ctx, node)
        value = entries.get("detect_anomaly") if entries is not None else None
        if value is not None and _true(value):
            self.report(value, f"`detect_anomaly: True` in Trainer arguments for TPUs {_WHY}")

    def _unconditional_setup(self, node: cst.Call) -> bool:
        """Module-level code, a training function or a Lightning class's method, outside any
        `if` (a debugging switch)."""
        ctx = self.ctx
        for ancestor in ctx.ancestors(node):
            if isinstance(ancestor, (cst.If, cst.IfExp, cst.Try)):
                return False
        return ctx.function is None or ctx.lightning_class is not None or _trains(ctx)

    def check_yaml(self, document: YamlDocument) -> None:
        trainer = document.find("trainer")
        entry = trainer.child("detect_anomaly") if trainer is not None else None
        if trainer is None or entry is None or entry.value is not True:
            return
        accelerator = trainer.child("accelerator")
        chosen = "auto" if accelerator is None else str(accelerator.value).lower()
        if chosen not in ("tpu", "auto"):
            return
        self.report_yaml(
            entry.key_start,
            entry.value_end or entry.key_start,
            f"`{document.trainer_label}detect_anomaly: true` {_WHY}",
        )


def _true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def _string(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        return node.value[1:-1].lower()
    return None


def _trains(ctx) -> bool:
    """The enclosing function builds a Trainer (a training script's main)."""
    info = ctx.function
    return info is not None and contains_trainer_call(ctx, info.node)


def _without(call: cst.Call, arg: cst.Arg) -> cst.Call:
    return replace_arg(call, arg, [])

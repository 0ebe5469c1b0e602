"""TPU007 hardcoded-tpu-device-count."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.project import FileView
from tpulint.analysis.yaml_config import YamlDocument
from tpulint.datatypes.diagnostics import Applicability, Edit, Severity
from tpulint.rule_api.cst_helpers import keyword_arg
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.configuration import (
    is_framework_file,
    literal_value,
    tpu_arguments,
    trainer_tpu,
    yaml_strategy_is_xla,
)
from ..shared.matchers import is_trainer_call
from .helpers import _LIGHTNING_IMPORT, _tpu_condition

# Calls that take a literal `devices=` the rule reports: Trainer calls and `dict(...)`.
_DEVICE_CALLS = frozenset({"Trainer", "from_argparse_args", "dict"})
# What makes a dict of Trainer arguments a TPU one (tpu_arguments).
_TPU_KEYS = frozenset({"accelerator", "strategy"})


class HardcodedTpuDeviceCount(Rule):
    """
    ## What it does
    Finds TPU Trainers (`accelerator="tpu"` or an XLA strategy) given a literal device count
    other than 1, such as `devices=8`: in `Trainer(...)` calls, in dictionaries of Trainer
    arguments that ask for TPUs (`{"accelerator": "tpu", "devices": 8}` merged into a config
    and splatted into `Trainer(**cfg)`), and in LightningCLI YAML configs (an XLA strategy
    given as `strategy: xla`, by `class_path` or by `name`), and in Hydra Trainer configs
    (a `configs/trainer/*.yaml` whose `_target_` is the Trainer), and in YAML sections the
    code spreads into a Trainer (`pl.Trainer(**cfg.trainer)`) that ask for TPUs.

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

    ## Status
    Stable. On tpu1 it was right on its one finding (`devices=32`, whose message now says that
    no TPU host has that many devices); dictionaries of Trainer arguments and YAML configs with
    the XLA strategy given by name are checked since (three misses of tpu1).
    """

    code = "TPU007"
    name = "hardcoded-tpu-device-count"
    summary = "TPU Trainer with a literal device count (`devices=8`) that only fits some TPU hosts"
    severity = Severity.WARNING
    fix_sometimes = True
    fix_applicability = Applicability.UNSAFE
    fix_message = 'Use `devices="auto"`'
    requires = ("devices",)

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        syntax = view.module.syntax
        if syntax is None:
            return True
        # `Trainer(devices=8)` (is_trainer_call) or `dict(accelerator="tpu", devices=8)`.
        if "devices" in syntax.literal_keywords and not syntax.calls.isdisjoint(_DEVICE_CALLS):
            return True
        # `{"accelerator": "tpu", "devices": 8}` (tpu_arguments: accelerator or strategy).
        return "devices" in syntax.dict_keys and not syntax.dict_keys.isdisjoint(_TPU_KEYS)

    VALID = (
        Valid(_LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="tpu", devices="auto")\n'),
        Valid(_LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="tpu", devices=1)\n'),
        Valid(_LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="tpu", devices=[2])\n'),
        Valid(_LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="gpu", devices=8)\n'),
        Valid("trainer:\n  accelerator: tpu\n  devices: auto\n", path="config.yaml"),
        # A Hydra Trainer group file for GPUs.
        Valid(
            "_target_: lightning.Trainer\naccelerator: gpu\ndevices: 8\n",
            path="configs/trainer/gpu.yaml",
        ),
        # A dict of other arguments (not asking for TPUs).
        Valid("cfg = {'accelerator': 'gpu', 'devices': 8}\nopts = dict(devices=8, workers=4)\n"),
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
        # A Hydra Trainer group file.
        Invalid(
            "_target_: lightning.pytorch.Trainer\naccelerator: tpu\ndevices: 8\n",
            path="configs/trainer/tpu.yaml",
            expected_fix="_target_: lightning.pytorch.Trainer\naccelerator: tpu\ndevices: auto\n",
            line=3,
        ),
        # The XLA strategy given by name in a config.
        Invalid(
            "trainer:\n  strategy:\n    name: xla\n  devices: 4\n",
            path="config.yaml",
            line=4,
        ),
        # Trainer arguments assembled in a config function and splatted into the Trainer.
        Invalid(
            "def tpu_env(cfg):\n"
            "    cfg['trainer'].update({'accelerator': 'tpu', 'devices': 8, 'max_epochs': 3})\n"
            "    return cfg\n",
            expected_fix="def tpu_env(cfg):\n"
            "    cfg['trainer'].update({'accelerator': 'tpu', 'devices': \"auto\", "
            "'max_epochs': 3})\n"
            "    return cfg\n",
            message="in Trainer arguments that ask for TPUs",
        ),
        # More devices than any TPU host has: the message says so.
        Invalid(
            _LIGHTNING_IMPORT + 'trainer = L.Trainer(strategy="xla", devices=32)\n',
            message="no TPU host has that many",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "dict":
            self._arguments(node)
            return
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

    def visit_Dict(self, node: cst.Dict) -> None:
        self._arguments(node)

    def _arguments(self, node: cst.Dict | cst.Call) -> None:
        """`{"accelerator": "tpu", "devices": 8, ...}` merged into a config and splatted into
        `Trainer(**cfg)`: the same count, the same failure."""
        entries = tpu_arguments(self.ctx, node)
        devices = entries.get("devices") if entries is not None else None
        if devices is None or is_framework_file(self.ctx):
            return
        value = literal_value(devices)
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if not isinstance(value, int) or value == 1:
            return
        self.report(
            devices,
            _devices_message(value).replace(
                f"`devices={value}` on a TPU Trainer",
                f"`devices: {value}` in Trainer arguments that ask for TPUs",
            ),
            replacement=cst.SimpleString('"auto"'),
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
        tpu = accelerator is not None and str(accelerator.value).lower() == "tpu"
        if not tpu and not yaml_strategy_is_xla(trainer.child("strategy")):
            return
        self.report_yaml(
            entry.value_start,
            entry.value_end,
            _devices_message(value).replace("`devices=", "`devices: "),
            edits=[Edit(entry.value_start, entry.value_end, "auto")],
        )


def _devices_message(value: int) -> str:
    if value not in (4, 8):
        # Lightning counts TPU devices per host, and no TPU host has this many.
        return (
            f"`devices={value}` on a TPU Trainer: Lightning counts TPU devices per host, and no "
            "TPU host has that many (v2-8/v3-8 hosts have 8, v4 and later hosts 4), so it "
            'raises ValueError on every host; use `devices="auto"` (the hosts of a pod add up)'
        )
    return (
        f"`devices={value}` on a TPU Trainer works only on hosts with exactly {value} TPU devices "
        "(v2-8/v3-8 have 8, v4 and v5p hosts expose 4; anything else raises ValueError); use "
        '`devices="auto"`'
    )
